"""`ace.core.npz`: aligned `.npz` files, mapped when read (CRC and finiteness checked, pages let go), else read."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from ace.core.npz import (
    Streamed,
    drop_resident,
    is_mapped,
    npz_members,
    npz_writer,
    read_arrays,
    rows_in_chunks,
    text_array,
    text_list,
)

ARRAYS: dict[str, Any] = {
    "ids": np.asarray(["context-00001", "harness-00002", "context-00003"], dtype=np.str_),
    "vectors": np.arange(3 * 5, dtype=np.float32).reshape(3, 5),
    "model": np.asarray("all-MiniLM", dtype=np.str_),
    "flags": np.asarray([True, False, True]),
    "empty": np.zeros((0, 5), dtype=np.float32),
}
MEMBERS = frozenset(f"{name}.npy" for name in ARRAYS)


def written(path: Path, arrays: dict[str, Any] | None = None) -> Path:
    with path.open("wb") as f:
        npz_writer(arrays or ARRAYS)(f)
    return path


def test_the_writer_makes_a_standard_npz_whose_array_data_is_aligned(tmp_path: Path) -> None:
    path = written(tmp_path / "a.npz")
    with np.load(path, allow_pickle=False) as npz:
        for name, array in ARRAYS.items():
            assert npz[name].dtype == array.dtype and npz[name].shape == array.shape
            assert np.array_equal(npz[name], array)
    members = npz_members(path, MEMBERS)
    assert not isinstance(members, str)
    assert all(m.data_offset is not None and m.data_offset % 64 == 0 for m in members.values())


def test_streamed_rows_are_written_in_chunks_without_a_full_copy(tmp_path: Path) -> None:
    rows = [np.full(4, i, dtype=np.float32) for i in range(10)]
    vectors = Streamed((10, 4), np.dtype(np.float32), rows_in_chunks(iter(rows), per_chunk=3))
    path = written(tmp_path / "s.npz", {"vectors": vectors})
    with np.load(path) as npz:
        assert np.array_equal(npz["vectors"], np.stack(rows))


@pytest.mark.parametrize("map_min_bytes", [0, 1 << 40])
def test_arrays_are_mapped_read_only_or_read_with_the_same_values(tmp_path: Path, map_min_bytes: int) -> None:
    path = written(tmp_path / "a.npz")
    members = npz_members(path, MEMBERS)
    assert not isinstance(members, str)
    stored = read_arrays(path, members, ARRAYS, finite=["vectors"], map_min_bytes=map_min_bytes)
    assert not isinstance(stored, str)
    mapped = map_min_bytes == 0
    assert stored.mapped is mapped
    for name, array in ARRAYS.items():
        assert np.array_equal(stored.arrays[name], array) and stored.arrays[name].shape == array.shape
    assert is_mapped(stored.arrays["vectors"]) is mapped
    assert stored.arrays["vectors"].flags.writeable is not mapped  # a mapping for reading only
    assert stored.finite["vectors"].tolist() == [True, True, True]
    drop_resident(stored.arrays["vectors"])  # lets the pages go: the values come back from the file
    assert np.array_equal(stored.arrays["vectors"], ARRAYS["vectors"])


def test_a_writable_mapping_is_copy_on_write(tmp_path: Path) -> None:
    path = written(tmp_path / "a.npz")
    members = npz_members(path, MEMBERS)
    assert not isinstance(members, str)
    stored = read_arrays(path, members, ["flags"], writable=True, map_min_bytes=0)
    assert not isinstance(stored, str)
    stored.arrays["flags"][1] = True  # the process's own page from now on
    with np.load(path) as npz:
        assert npz["flags"].tolist() == [True, False, True]


def test_letting_an_arrays_pages_go_keeps_a_neighbours_changes(tmp_path: Path) -> None:
    path = written(tmp_path / "n.npz", {"big": np.arange(30_000, dtype=np.float32), "small": np.zeros(8, np.int64)})
    members = npz_members(path, frozenset({"big.npy", "small.npy"}))
    assert not isinstance(members, str)
    stored = read_arrays(path, members, ["big", "small"], writable=True, map_min_bytes=0)
    assert not isinstance(stored, str)
    stored.arrays["small"][:] = 7  # on the page where `big` ends
    drop_resident(stored.arrays["big"])
    assert stored.arrays["small"].tolist() == [7] * 8
    assert np.array_equal(stored.arrays["big"], np.arange(30_000, dtype=np.float32))


@pytest.mark.parametrize("map_min_bytes", [0, 1 << 40])
def test_damaged_bytes_fail_the_crc_and_non_finite_rows_are_found(tmp_path: Path, map_min_bytes: int) -> None:
    vectors = np.ones((4, 3), dtype=np.float32)
    vectors[2, 1] = np.inf
    path = written(tmp_path / "v.npz", {"vectors": vectors})
    members = npz_members(path, frozenset({"vectors.npy"}))
    assert not isinstance(members, str)
    stored = read_arrays(path, members, ["vectors"], finite=["vectors"], map_min_bytes=map_min_bytes)
    assert not isinstance(stored, str)
    assert stored.finite["vectors"].tolist() == [True, True, False, True]
    data = bytearray(path.read_bytes())
    offset = members["vectors"].data_offset
    assert offset is not None
    data[offset] ^= 0xFF
    path.write_bytes(bytes(data))
    if map_min_bytes == 0:
        assert (
            read_arrays(path, members, ["vectors"], map_min_bytes=0)
            == "vectors: its CRC-32 does not match (the file is damaged)"
        )
    else:
        with pytest.raises(zipfile.BadZipFile, match="CRC"):
            read_arrays(path, members, ["vectors"], map_min_bytes=map_min_bytes)


def test_members_of_another_writer_are_read_not_mapped(tmp_path: Path) -> None:
    """`np.savez` leaves data unaligned, `np.savez_compressed` deflates it: both are read, with the same values."""
    for save in (np.savez, np.savez_compressed):
        path = tmp_path / f"{save.__name__}.npz"
        save(path, **ARRAYS)
        members = npz_members(path, MEMBERS)
        assert not isinstance(members, str)
        stored = read_arrays(path, members, ARRAYS, map_min_bytes=0)
        assert not isinstance(stored, str)
        for name, array in ARRAYS.items():
            assert np.array_equal(stored.arrays[name], array)
        if save is np.savez_compressed:
            assert not any(is_mapped(a) for a in stored.arrays.values())
        left_out = read_arrays(path, members, ["vectors"], only_mapped=["vectors"], map_min_bytes=1 << 40)
        assert not isinstance(left_out, str) and left_out.arrays == {}


def test_headers_are_checked_before_anything_is_read(tmp_path: Path) -> None:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as zf, zf.open("vectors.npy", "w") as member:
        np.lib.format.write_array_header_1_0(member, {"descr": "<f4", "fortran_order": False, "shape": (10**9, 8)})
        member.write(b"\0" * 64)
    path = tmp_path / "big.npz"
    path.write_bytes(buffer.getvalue())
    assert "its header announces" in str(npz_members(path, frozenset({"vectors.npy"})))
    assert "holds ['vectors.npy']" in str(npz_members(path, frozenset({"other.npy"})))


def test_a_file_system_that_cannot_map_gets_the_arrays_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = written(tmp_path / "a.npz")
    members = npz_members(path, MEMBERS)
    assert not isinstance(members, str)

    def refuse(*args: object, **kwargs: object) -> None:
        raise OSError(19, "No such device")  # what mmap says on a file system without mapping

    monkeypatch.setattr("ace.core.npz.mmap.mmap", refuse)
    stored = read_arrays(path, members, ["vectors"], map_min_bytes=0)
    assert not isinstance(stored, str) and not stored.mapped
    assert np.array_equal(stored.arrays["vectors"], ARRAYS["vectors"])


def test_text_arrays_are_ascii_bytes_when_they_can_be_and_read_back_as_strings() -> None:
    ids = text_array(["context-00001", "harness-00002"])
    assert ids.dtype.kind == "S" and ids.itemsize == 13  # one byte a character, not UTF-32's four
    assert text_list(ids) == ["context-00001", "harness-00002"]
    mixed = text_array(["ascii", "ünïcode"])
    assert mixed.dtype.kind == "U" and text_list(mixed) == ["ascii", "ünïcode"]
    assert text_list(text_array([])) == []
    assert text_list(np.asarray([b"ab\xffc", b"ok"])) == ["ab\ufffdc", "ok"]  # a damaged byte matches no id
