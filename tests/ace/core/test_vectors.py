"""The vector cache mapped from its file: skills hold read-only rows of it, its checks hold, saves replace it."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest

from ace import Skillbook
from ace.core.npz import is_mapped, npz_members, text_list
from ace.core.storage import sidecar_path
from ace.core.vectors import embeddings_writer
from ace.exceptions import SkillbookError


@pytest.fixture(autouse=True)
def map_every_file(monkeypatch: pytest.MonkeyPatch) -> None:
    """Map even these small files (by default only files from 1 MB on are mapped)."""
    monkeypatch.setattr("ace.core.npz.MAP_MIN_BYTES", 0)


def book_with_vectors(n: int = 30, dim: int = 16) -> Skillbook:
    rng = np.random.default_rng(3)
    book = Skillbook()
    book.embedding_model = "m"
    for i in range(n):
        skill = book.add_skill("harness", f"issue number {i}", [f"kw{i % 4}"])
        book.set_embedding(skill.id, rng.standard_normal(dim).astype(np.float32))
    return book


def vectors_of(book: Skillbook) -> dict[str, bytes]:
    return {s.id: s.embedding.tobytes() for s in book.skills() if s.embedding is not None}


def test_loaded_vectors_are_read_only_rows_of_the_mapped_cache(tmp_path: Path) -> None:
    book = book_with_vectors()
    path = tmp_path / "skillbook.json"
    book.save_to_file(path)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        loaded = Skillbook.load_from_file(path)
    assert vectors_of(loaded) == vectors_of(book)
    first = loaded.require_skill("harness-00001").embedding
    assert first is not None and is_mapped(first) and not first.flags.writeable
    with pytest.raises(ValueError, match="read-only"):
        first[0] = 1.0


def test_a_save_replaces_the_mapped_file_and_the_loaded_vectors_stay_as_they_were(tmp_path: Path) -> None:
    """A save writes a new file and renames it over the old one: the mapped old file stays whole (POSIX)."""
    path = tmp_path / "skillbook.json"
    book_with_vectors().save_to_file(path)
    loaded = Skillbook.load_from_file(path)
    before = vectors_of(loaded)
    other = book_with_vectors(n=40, dim=16)
    other.set_embedding("harness-00001", np.ones(16, dtype=np.float32))
    other.save_to_file(path)
    loaded.save_to_file(path)  # a save of the loaded book reads its vectors from the old, replaced file
    assert vectors_of(loaded) == before
    assert vectors_of(Skillbook.load_from_file(path)) == before


def test_a_damaged_mapped_cache_is_ignored_with_a_warning(tmp_path: Path) -> None:
    path = tmp_path / "skillbook.json"
    book_with_vectors().save_to_file(path)
    sidecar = sidecar_path(path)
    members = npz_members(sidecar, frozenset({"ids.npy", "hashes.npy", "embeddings.npy", "model.npy"}))
    assert not isinstance(members, str)
    offset = members["embeddings"].data_offset
    assert offset is not None
    data = bytearray(sidecar.read_bytes())
    data[offset + 5] ^= 0x40
    sidecar.write_bytes(bytes(data))
    with pytest.warns(RuntimeWarning, match="CRC-32"):  # found by zipfile or by the mapped read
        loaded = Skillbook.load_from_file(path)
    assert loaded.stats()["embedded"] == 0


def test_non_finite_vectors_of_a_mapped_cache_are_dropped(tmp_path: Path) -> None:
    book = book_with_vectors(n=3, dim=8)
    path = tmp_path / "skillbook.json"
    book.save_to_file(path)
    matrix = np.stack([s.embedding for s in book.skills() if s.embedding is not None])
    matrix[1, 4] = np.nan
    ids = [s.id for s in book.skills()]
    with np.load(sidecar_path(path)) as npz:
        hashes = text_list(npz["hashes"])
    with sidecar_path(path).open("wb") as f:
        embeddings_writer(ids=ids, hashes=hashes, matrix=matrix, model="m")(f)
    with pytest.warns(RuntimeWarning, match="harness-00002 hold NaN or infinite values"):
        loaded = Skillbook.load_from_file(path)
    assert [s.embedding is None for s in loaded.skills()] == [False, True, False]


def test_set_embedding_keeps_a_read_only_copy_of_the_callers_array() -> None:
    book = book_with_vectors(n=1, dim=4)
    mine = np.asarray([1.0, 2.0, 3.0, 4.0], dtype=np.float32)
    book.set_embedding("harness-00001", mine)
    mine[0] = np.nan  # the caller's array changes after the checks: the skill's vector does not
    kept = book.require_skill("harness-00001").embedding
    assert kept is not None and kept.tolist() == [1.0, 2.0, 3.0, 4.0] and not kept.flags.writeable
    with pytest.raises(SkillbookError, match="NaN"):
        book.set_embedding("harness-00001", mine)
