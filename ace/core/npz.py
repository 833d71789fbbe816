"""Checked `.npz` files, memory-mapped: the format of the vector cache and of the search index sidecar.

Members are stored uncompressed, and the writer pads each member's local header (a zip extra field, as Android's
`zipalign` does) so that its array data starts on a 64-byte boundary of the file: a reader can then map the arrays
straight from the file instead of reading them. Mapped pages belong to the operating system's file cache, are shared
by every process that maps the file, and count in a process's resident memory only once touched. Reading is as
careful as `np.load`: each member's `.npy` header is checked against the bytes present before anything is read, the
CRC-32 of every member is verified, Python objects are refused, and a check pass drops the pages it touched again.

Mapping is for POSIX systems: there a save replaces a file by rename (`ace.core.storage`) and a process keeps the
file it mapped until it lets go of the arrays. Windows cannot replace a mapped file, so there the arrays are read.
A program that rewrites a mapped file in place (not ACE's writers) changes what the process reads, and one that
truncates it makes the process fail with SIGBUS when it touches a missing page.
"""

from __future__ import annotations

import math
import mmap
import os
import struct
import sys
import zipfile
import zlib
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import numpy as np
import numpy.typing as npt

from ace.core.storage import Writer

__all__ = [
    "MAP_MIN_BYTES",
    "Member",
    "RowReader",
    "Stored",
    "Streamed",
    "drop_resident",
    "is_mapped",
    "npz_members",
    "npz_writer",
    "read_arrays",
    "rows_in_chunks",
    "text_array",
    "text_list",
]

MAP_MIN_BYTES = 1 << 20
"""Files smaller than this are read, not mapped: nothing to save, and a mapping holds a file descriptor."""
_CAN_MAP = os.name == "posix"
_ALIGN = 64
_PAD_ID = 0xD935  # the id zipalign uses for its padding field
_ZIP64_EXTRA = 20  # what `ZipFile.open(..., force_zip64=True)` adds to a local header
_LOCAL_HEADER = struct.Struct("<4s22xHH")
_CHUNK = 1 << 22
_Array = npt.NDArray[Any]


@dataclass(frozen=True)
class Member:
    """One `.npy` member of an `.npz`, from its headers: shape, type, and where its data starts when stored."""

    shape: tuple[int, ...]
    dtype: np.dtype[Any]
    info: zipfile.ZipInfo
    data_offset: int | None
    """Offset of the array's data in the file when the member is stored uncompressed and unencrypted; else `None`."""
    header_size: int
    """Bytes of the member's `.npy` header."""

    @property
    def nbytes(self) -> int:
        return math.prod(self.shape) * self.dtype.itemsize


@dataclass(frozen=True)
class Stored:
    """Arrays read by `read_arrays`, and for each member asked to be checked, which of its rows are finite."""

    arrays: dict[str, _Array]
    finite: dict[str, npt.NDArray[np.bool_]] = field(default_factory=dict)
    mapped: bool = False
    """Whether the arrays are views of the file mapped in memory (else they were read)."""


@dataclass(frozen=True)
class Streamed:
    """A member written in parts: `fill(write)` calls `write` with the array's bytes in order (C order)."""

    shape: tuple[int, ...]
    dtype: np.dtype[Any]
    fill: Callable[[Callable[[Any], object]], None]


def npz_members(path: Path, allowed: frozenset[str]) -> dict[str, Member] | str:
    """Each member (name without `.npy`) from its `.npy` header, checked against the member's size, or what is
    wrong: other members than `allowed`, an unknown `.npy` version, Python objects, a size that does not fit."""
    with zipfile.ZipFile(path) as zf, open(path, "rb") as raw:
        infos = {info.filename: info for info in zf.infolist()}
        if set(infos) != allowed or len(infos) != len(zf.infolist()):
            return f"holds {sorted(infos)}, not {sorted(allowed)}"
        out: dict[str, Member] = {}
        for name, info in infos.items():
            with zf.open(info) as member:
                version = np.lib.format.read_magic(member)
                if version == (1, 0):
                    shape, _, dtype = np.lib.format.read_array_header_1_0(member)
                elif version == (2, 0):
                    shape, _, dtype = np.lib.format.read_array_header_2_0(member)
                else:
                    return f"{name}: unsupported .npy version {version}"
                header_size = member.tell()
            if dtype.hasobject:
                return f"{name}: holds Python objects"
            if info.file_size != header_size + math.prod(shape) * dtype.itemsize:
                return f"{name}: its header announces {shape} of {dtype} but it holds {info.file_size} bytes"
            out[name[:-4]] = Member(shape, dtype, info, _data_offset(raw, info, header_size), header_size)
    return out


def _data_offset(raw: IO[bytes], info: zipfile.ZipInfo, header_size: int) -> int | None:
    """Where the member's array data starts in the file, when it can be mapped (stored, not encrypted)."""
    if info.compress_type != zipfile.ZIP_STORED or info.flag_bits & 1:
        return None
    raw.seek(info.header_offset)
    signature, name_len, extra_len = _LOCAL_HEADER.unpack(raw.read(_LOCAL_HEADER.size))
    if signature != b"PK\x03\x04":
        return None
    return int(info.header_offset + _LOCAL_HEADER.size + name_len + extra_len + header_size)


def read_arrays(
    path: Path,
    members: Mapping[str, Member],
    names: Iterable[str],
    *,
    writable: bool = False,
    finite: Collection[str] = (),
    only_mapped: Collection[str] = (),
    map_min_bytes: int | None = None,
) -> Stored | str:
    """The named arrays (members checked by `npz_members`), mapped when the file allows, else read; or what is wrong.

    `writable`: the arrays may be changed in place (a mapping is then copy-on-write: a change stays in the process).
    `finite`: members whose rows are checked for NaN and infinity in the same pass as the CRC (`Stored.finite`).
    `only_mapped`: members left out unless mapped (the caller streams them instead of holding them twice).
    `map_min_bytes`: smaller files are read (default `MAP_MIN_BYTES`).
    """
    wanted = list(names)
    if _CAN_MAP and path.stat().st_size >= (MAP_MIN_BYTES if map_min_bytes is None else map_min_bytes):
        mapped = _map(path, writable=writable)
        if mapped is not None:
            return _mapped(path, mapped, members, wanted, finite, only_mapped)
    out: dict[str, _Array] = {}
    with zipfile.ZipFile(path) as zf:
        for name in (n for n in wanted if n not in only_mapped):
            with zf.open(members[name].info) as member:  # read to the end: zipfile verifies the CRC
                out[name] = np.lib.format.read_array(member, allow_pickle=False)
    return Stored(out, {name: _finite_rows(out[name]) for name in finite if name in out})


def _map(path: Path, *, writable: bool) -> mmap.mmap | None:
    """The whole file mapped (copy-on-write when `writable`), or `None` where the file system cannot map it."""
    access = mmap.ACCESS_COPY if writable else mmap.ACCESS_READ
    try:
        with open(path, "rb") as f:
            if sys.version_info >= (3, 13):
                return mmap.mmap(f.fileno(), 0, access=access, trackfd=False)  # no descriptor held open
            return mmap.mmap(f.fileno(), 0, access=access)
    except OSError:
        return None


def _mapped(
    path: Path,
    mapped: mmap.mmap,
    members: Mapping[str, Member],
    names: list[str],
    finite: Collection[str],
    only_mapped: Collection[str],
) -> Stored | str:
    out: dict[str, _Array] = {}
    rows: dict[str, npt.NDArray[np.bool_]] = {}
    read: list[str] = []
    for name in names:
        m = members[name]
        start = m.data_offset
        if start is None or start % m.dtype.alignment or start + m.nbytes > len(mapped):
            read.append(name)  # compressed, or written unaligned by another writer: read it
            continue
        array = np.frombuffer(mapped, dtype=m.dtype, count=math.prod(m.shape), offset=start).reshape(m.shape)
        problem = _scan(mapped, m, start, array, rows if name in finite else None, name)
        if problem is not None:
            return problem
        out[name] = array
    if read:
        found = read_arrays(
            path,
            members,
            read,
            finite=[n for n in read if n in finite],
            only_mapped=only_mapped,
            map_min_bytes=sys.maxsize,
        )
        if isinstance(found, str):
            return found
        out |= found.arrays
        rows |= found.finite
    return Stored(out, rows, mapped=True)


def _scan(
    mapped: mmap.mmap, m: Member, start: int, array: _Array, rows: dict[str, npt.NDArray[np.bool_]] | None, name: str
) -> str | None:
    """Verify a mapped member's CRC-32 (and its rows' finiteness) chunk by chunk, dropping each chunk's pages after:
    a pass over a 150 MB member then adds a few MB to the resident memory, not 150."""
    view = memoryview(mapped)
    crc = zlib.crc32(view[start - m.header_size : start])
    per_row = max(1, m.nbytes // max(1, m.shape[0])) if m.shape else max(1, m.nbytes)
    step = max(1, _CHUNK // per_row)
    n_rows = m.shape[0] if m.shape else 1
    flat = array.reshape(n_rows, -1) if m.shape and n_rows else array.reshape(1, -1)
    ok = np.ones(n_rows, dtype=np.bool_) if rows is not None else None
    for lo in range(0, n_rows, step):
        hi = min(n_rows, lo + step)
        a, b = start + lo * per_row, start + min(m.nbytes, hi * per_row)
        crc = zlib.crc32(view[a:b], crc)
        if ok is not None:
            ok[lo:hi] = np.isfinite(flat[lo:hi]).all(axis=1)
        _drop_pages(mapped, a, b)
    view.release()
    if crc != m.info.CRC:
        return f"{name}: its CRC-32 does not match (the file is damaged)"
    if rows is not None and ok is not None:
        rows[name] = ok
    return None


def _drop_pages(mapped: mmap.mmap, start: int, stop: int, *, inner: bool = False) -> None:
    """Let go of the pages of `[start, stop)` (they stay in the file cache; a later touch maps them again): from the
    page `start` is in, or with `inner` only pages wholly inside. On a copy-on-write mapping this also drops the
    process's changes to those pages, so it is done before anything changes, or (`inner`) to an unchanged array."""
    dontneed = getattr(mmap, "MADV_DONTNEED", None)
    first = start - start % mmap.PAGESIZE + (mmap.PAGESIZE if inner and start % mmap.PAGESIZE else 0)
    last = stop - stop % mmap.PAGESIZE if inner else stop
    if dontneed is not None and last > first:
        mapped.madvise(dontneed, first, last - first)


def _mapping(array: _Array) -> mmap.mmap | None:
    """The file mapping `array` is a view of, if any."""
    owner: object = array
    while isinstance(owner, np.ndarray):
        owner = owner.base
    if isinstance(owner, memoryview):
        owner = owner.obj
    return owner if isinstance(owner, mmap.mmap) else None


def is_mapped(array: _Array) -> bool:
    """Whether `array` is a view of a file mapped by `read_arrays` (its pages are the file's, not the process's)."""
    return _mapping(array) is not None


def drop_resident(array: _Array) -> None:
    """Let go of the resident pages of an unchanged array mapped by `read_arrays` (nothing for an array in memory):
    they stay in the file cache and come back when touched. Only pages wholly inside the array: a neighbour's
    changes on a shared page stay."""
    owner = _mapping(array)
    if owner is None:
        return
    start = _offset(array, owner)
    _drop_pages(owner, start, start + array.nbytes, inner=True)


def _offset(array: _Array, owner: mmap.mmap) -> int:
    """Where `array`'s bytes start in the mapping `owner` (the file: mappings start at its first byte)."""
    return int(
        array.__array_interface__["data"][0] - np.frombuffer(owner, dtype=np.uint8).__array_interface__["data"][0]
    )


class RowReader:
    """Rows of a 2-D array mapped by `read_arrays`, read from its file with `pread` rather than through the mapping.

    A few rows read through a mapping map far more than their pages: on a file cached in large folios the kernel maps
    whole folios, so 1,024 rows scattered over a 153 MB matrix put ~150 MB in the process's resident set for a moment
    (its peak). `pread` copies just the rows. `reader(array, path, seen)` opens `path` only if it is still the file
    `seen` describes (`os.stat` taken before the array was mapped: device, inode, size, modification time) and holds
    the array's first and last rows: a file replaced since gives `None`, and callers read through the mapping.
    """

    def __init__(self, file: IO[bytes], start: int, row_bytes: int, dtype: np.dtype[Any], width: int) -> None:
        self._file, self._start, self._row_bytes, self._dtype, self._width = file, start, row_bytes, dtype, width

    @classmethod
    def reader(cls, array: _Array, path: Path, seen: os.stat_result) -> RowReader | None:
        owner = _mapping(array)
        if owner is None or array.ndim != 2 or not array.flags.c_contiguous or array.shape[0] == 0:
            return None
        if not hasattr(os, "preadv"):
            return None
        start = (
            array.__array_interface__["data"][0] - np.frombuffer(owner, dtype=np.uint8).__array_interface__["data"][0]
        )
        try:
            file = open(path, "rb")  # noqa: SIM115 (closed by `close`, when the array's owner lets go)
        except OSError:
            return None
        out = cls(file, start, array.strides[0], array.dtype, array.shape[1])
        now, ends = os.fstat(file.fileno()), np.asarray([0, array.shape[0] - 1], dtype=np.int64)
        same = (now.st_dev, now.st_ino, now.st_size, now.st_mtime_ns) == (
            seen.st_dev,
            seen.st_ino,
            seen.st_size,
            seen.st_mtime_ns,
        )
        if not same or out.take(ends).tobytes() != array[ends].tobytes():
            out.close()
            return None
        return out

    def take(self, rows: npt.NDArray[np.int64]) -> _Array:
        """A copy of `rows` (row numbers of the array)."""
        out = np.empty((rows.size, self._width), dtype=self._dtype)
        buffer, size, fd = out.data.cast("B"), self._row_bytes, self._file.fileno()
        for i, row in enumerate(rows.tolist()):
            if os.preadv(fd, [buffer[i * size : (i + 1) * size]], self._start + row * size) != size:
                raise OSError(f"{self._file.name}: a row could not be read (the file is shorter than its index)")
        return out

    def close(self) -> None:
        self._file.close()


def _finite_rows(array: _Array) -> npt.NDArray[np.bool_]:
    if array.ndim == 0 or array.shape[0] == 0:
        return np.ones(array.shape[:1], dtype=np.bool_)
    return np.asarray(np.isfinite(array.reshape(array.shape[0], -1)).all(axis=1), dtype=np.bool_)


def rows_in_chunks(rows: Iterable[_Array], *, per_chunk: int = 4096) -> Callable[[Callable[[Any], object]], None]:
    """A `Streamed.fill` writing 1-D rows in chunks of `per_chunk`, so no full copy of them is ever made."""

    def fill(write: Callable[[Any], object]) -> None:
        chunk: list[_Array] = []
        for row in rows:
            chunk.append(row)
            if len(chunk) == per_chunk:
                write(np.stack(chunk).data)
                chunk = []
        if chunk:
            write(np.stack(chunk).data)

    return fill


def text_array(values: Iterable[str]) -> _Array:
    """`values` as an array for an `.npz`: one byte per character (`S`) when they are all ASCII (ids, fingerprints),
    else `U` (four bytes per character). `text_list` reads either back."""
    listed = list(values)
    try:
        return np.asarray([v.encode("ascii") for v in listed], dtype=np.bytes_)
    except UnicodeEncodeError:
        return np.asarray(listed, dtype=np.str_)


def text_list(array: _Array) -> list[str]:
    """The strings of a text array written by `text_array` (or any `U` array); a byte that is not ASCII (a damaged
    file) reads as U+FFFD, so the id it is part of matches nothing."""
    if array.dtype.kind == "S":
        try:
            return array.astype(np.str_).tolist()  # type: ignore[no-any-return]  # numpy's decoding: 2x a loop's speed
        except UnicodeDecodeError:
            return [b.decode("ascii", errors="replace") for b in array.tolist()]
    return [str(v) for v in array.tolist()]


def npz_writer(members: Mapping[str, _Array | Streamed]) -> Writer:
    """A writer of an `.npz` (standard: `np.load` reads it) whose array data starts on 64-byte boundaries."""

    def write(f: IO[bytes]) -> None:
        with zipfile.ZipFile(f, "w", compression=zipfile.ZIP_STORED) as zf:
            for name, value in members.items():
                if isinstance(value, Streamed):
                    shape, dtype, fill = value.shape, value.dtype, value.fill
                else:
                    array = value if value.flags.c_contiguous else value.copy(order="C")  # keeps a 0-d array 0-d
                    shape, dtype = array.shape, array.dtype
                    fill = _whole(array)
                header = {"descr": np.lib.format.dtype_to_descr(dtype), "fortran_order": False, "shape": shape}
                info = zipfile.ZipInfo(f"{name}.npy", date_time=(1980, 1, 1, 0, 0, 0))
                info.compress_type = zipfile.ZIP_STORED
                info.extra = _padding(f.tell(), len(info.filename.encode("ascii")))
                with zf.open(info, "w", force_zip64=True) as member:
                    np.lib.format.write_array_header_1_0(member, header)
                    fill(member.write)

    return write


def _whole(array: _Array) -> Callable[[Callable[[Any], object]], None]:
    def fill(write: Callable[[Any], object]) -> None:
        if array.size:
            write(array.reshape(-1).view(np.uint8).data)

    return fill


def _padding(at: int, name_len: int) -> bytes:
    """A zip extra field that makes the member's data (after its 64-byte-multiple `.npy` header) start aligned."""
    used = at + _LOCAL_HEADER.size + name_len + _ZIP64_EXTRA + 4
    return struct.pack("<HH", _PAD_ID, -used % _ALIGN) + bytes(-used % _ALIGN)
