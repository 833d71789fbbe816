"""Skillbook files: `skillbook.json` (diffable, no vectors) and the `.embeddings.npz` cache beside it.

Every write goes to a temporary file in the same folder and is renamed over the target, so a crash
or an exception mid-write leaves the previous file intact. A temporary is named after its target and the writing
process (`.skillbook.json.<pid>.<random>.tmp`); the next save of the same file removes those of processes that no
longer run (a save killed halfway).

The vector cache is untrusted input like any file: its arrays' shapes and types are read from their `.npy` headers
and checked before anything is loaded, and vectors with NaN or infinite values are dropped (they are recomputed).
"""

from __future__ import annotations

import contextlib
import gc
import hashlib
import json
import math
import os
import re
import tempfile
import warnings
import zipfile
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Protocol, runtime_checkable

import numpy as np

from ace.core.skill import Embedding
from ace.exceptions import SkillbookFormatError

__all__ = [
    "FileState",
    "Sidecar",
    "SidecarOwner",
    "Writer",
    "atomic_write",
    "atomic_write_many",
    "bytes_writer",
    "embeddings_writer",
    "gc_paused",
    "json_bytes",
    "json_writer",
    "load_npz_arrays",
    "load_sidecar",
    "npz_headers",
    "read_embeddings",
    "read_json_file",
    "read_json_with_digest",
    "remove_stale_temps",
    "sidecar_path",
    "sidecar_problem",
]

_TEMP_NAME = re.compile(r"\.(?P<target>.+)\.(?P<pid>[0-9]+)\.[A-Za-z0-9_]+\.tmp")
_MAX_DIM = 65_536
_MAX_ID_CHARS = 256
_MAX_MODEL_CHARS = 1_024
_NPZ_MEMBERS = frozenset({"ids.npy", "hashes.npy", "embeddings.npy", "model.npy"})


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector while building many small acyclic objects (a load of 5,000 skills
    otherwise triggers repeated full collections that double its time); restores the previous state."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def sidecar_path(path: str | os.PathLike[str]) -> Path:
    """`skillbook.json` -> `skillbook.embeddings.npz` (same folder, same stem)."""
    p = Path(path)
    return p.with_name(f"{p.stem}.embeddings.npz")


Writer = Callable[[IO[bytes]], None]


@dataclass(frozen=True)
class FileState:
    """The skillbook file a skillbook was loaded from or saved to: path, SHA-256 of its bytes, version then."""

    path: str
    digest: str
    version: int


@runtime_checkable
class SidecarOwner(Protocol):
    """A derived cache (on `Skillbook.caches`) that persists beside the skillbook file when it is saved."""

    def sidecar_files(self, skillbook: Any, saved: FileState) -> list[tuple[Path, Writer]]:
        """The files to write with the skillbook saved as `saved` (none when the cache cannot match it)."""
        ...


def atomic_write(path: str | os.PathLike[str], write: Writer) -> None:
    """Call `write` on a temporary file beside `path`, fsync it, then rename it over `path`."""
    atomic_write_many([(path, write)])


def atomic_write_many(files: Sequence[tuple[str | os.PathLike[str], Writer]]) -> None:
    """Write every file to a temporary beside its target first, and rename them all only once all succeeded.

    An exception in any writer leaves every target as it was and no temporary file behind.
    """
    pending: list[tuple[str, Path]] = []
    try:
        for path, write in files:
            target = Path(path)
            target.parent.mkdir(parents=True, exist_ok=True)
            remove_stale_temps(target.parent, target.name)
            fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.{os.getpid()}.", suffix=".tmp", dir=target.parent)
            pending.append((tmp, target))
            try:
                with os.fdopen(fd, "wb") as f:
                    os.fchmod(f.fileno(), _default_mode())  # mkstemp makes 0600; a saved file is an ordinary file
                    write(f)
                    f.flush()
                    os.fsync(f.fileno())
            except OSError as e:  # a full disk fails a write(), which names no file: name the one being saved
                if e.filename is None and e.errno is not None:
                    e.filename = str(target)
                raise
        while pending:
            tmp, target = pending[0]
            os.replace(tmp, target)
            pending.pop(0)
    finally:
        for tmp, _ in pending:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)


def remove_stale_temps(folder: str | os.PathLike[str], target: str | None = None) -> list[Path]:
    """Remove the temporaries that killed saves left in `folder` (of the file named `target`, or of any file).

    Only temporaries of processes that no longer run go: a save in progress, in this process or another, keeps its
    own. Where it cannot tell whether a process runs (not POSIX) nothing is removed. Returns what was removed.
    """
    removed: list[Path] = []
    try:
        entries = list(os.scandir(folder))
    except (FileNotFoundError, NotADirectoryError):
        return removed
    for entry in entries:
        match = _TEMP_NAME.fullmatch(entry.name)
        if match is None or (target is not None and match["target"] != target):
            continue
        if not entry.is_file(follow_symlinks=False) or _process_may_run(int(match["pid"])):
            continue
        with contextlib.suppress(FileNotFoundError):
            os.unlink(entry.path)
            removed.append(Path(entry.path))
    return removed


def _process_may_run(pid: int) -> bool:
    """Whether process `pid` may still be running (`True` when that cannot be known)."""
    if pid == os.getpid() or os.name != "posix":
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError):
        return True
    return True


def _default_mode() -> int:
    """The mode `open()` would give a new file under the current umask (read without changing it, since
    `os.umask` is process-wide and racy with other threads); 0o644 where the umask cannot be read."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return 0o666 & ~int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    return 0o644


def json_writer(payload: Mapping[str, Any], *, one_per_line: Sequence[str] = ()) -> Writer:
    """A writer of `payload` as `json_bytes` gives it."""
    return bytes_writer(json_bytes(payload, one_per_line=one_per_line))


def bytes_writer(data: bytes) -> Writer:
    """A writer of `data` as they are."""

    def write(f: IO[bytes]) -> None:
        f.write(data)

    return write


def json_bytes(payload: Mapping[str, Any], *, one_per_line: Sequence[str] = ()) -> bytes:
    """`payload` as UTF-8 JSON, one top-level field per line and, for the list fields named in `one_per_line`,
    one item per line: stable and diffable (a changed skill is a changed line), and encoded by the C encoder (an
    indented dump goes through the pure-Python encoder, ~10x slower)."""
    encode = json.JSONEncoder(ensure_ascii=False).encode
    lines = ["{"]
    for n, (key, value) in enumerate(payload.items()):
        comma = "," if n < len(payload) - 1 else ""
        if key in one_per_line and isinstance(value, list) and value:
            items = ",\n  ".join(encode(v) for v in value)
            lines.append(f" {encode(key)}: [\n  {items}\n ]{comma}")
        else:
            lines.append(f" {encode(key)}: {encode(value)}{comma}")
    lines.append("}\n")
    return "\n".join(lines).encode("utf-8")


def read_json_file(path: str | os.PathLike[str]) -> Any:
    """Parse a JSON file; a syntax error names the file, line, column and character offset."""
    return read_json_with_digest(path)[0]


def read_json_with_digest(path: str | os.PathLike[str]) -> tuple[Any, str]:
    """Parse a JSON file (as `read_json_file`) and return the SHA-256 of its bytes too."""
    p = Path(path)
    try:
        raw = p.read_bytes()
        digest = hashlib.sha256(raw).hexdigest()
        text = raw.decode("utf-8")
        del raw
    except FileNotFoundError:
        raise SkillbookFormatError(f"{p}: no such skillbook file", path=str(p)) from None
    except UnicodeDecodeError as e:
        raise SkillbookFormatError(f"{p}: not UTF-8 text (byte {e.start}): {e.reason}", path=str(p)) from None
    try:
        return json.loads(text), digest
    except json.JSONDecodeError as e:
        raise SkillbookFormatError(
            f"{p}: malformed JSON at line {e.lineno}, column {e.colno} (char {e.pos}): {e.msg}", path=str(p)
        ) from None


def embeddings_writer(*, ids: list[str], hashes: list[str], matrix: Embedding, model: str | None) -> Writer:
    """A writer of the vector cache: ids, the text fingerprint of each, one float32 matrix, the model name."""

    def write(f: IO[bytes]) -> None:
        # One entry per array, not per skill, and stored rather than deflated: float32 vectors shrink by
        # under 10% while deflate costs ~0.7 s at 5,000 x 384. It is still a standard `.npz` for `np.load`.
        with zipfile.ZipFile(f, "w", compression=zipfile.ZIP_STORED) as zf:
            for name, arr in (
                ("ids", np.asarray(ids, dtype=np.str_)),
                ("hashes", np.asarray(hashes, dtype=np.str_)),
                ("embeddings", np.ascontiguousarray(matrix, dtype=np.float32)),
                ("model", np.asarray(model or "", dtype=np.str_)),
            ):
                with zf.open(f"{name}.npy", "w", force_zip64=True) as member:
                    np.lib.format.write_array(member, arr, allow_pickle=False)

    return write


@dataclass(frozen=True)
class Sidecar:
    """A vector cache as stored: skill ids, the text fingerprint of each, their vectors and the model's name."""

    ids: tuple[str, ...]
    hashes: tuple[str, ...]
    matrix: np.ndarray[Any, np.dtype[Any]]
    model: str | None


def load_sidecar(path: str | os.PathLike[str], *, dim: int | None = None, max_rows: int | None = None) -> Sidecar:
    """The vector cache at `path`, its `.npy` headers checked before anything is loaded (`sidecar_problem`).

    Raises:
        SkillbookFormatError: the file is missing, damaged or suspicious; the message names the problem.
    """
    p = Path(path)
    found = _load_sidecar(p, dim=dim, max_rows=max_rows)
    if isinstance(found, str):
        raise SkillbookFormatError(f"{p}: {found}", path=str(p))
    return found


def _load_sidecar(p: Path, *, dim: int | None, max_rows: int | None) -> Sidecar | str:
    """The cache, or what is wrong with it."""
    try:
        problem = sidecar_problem(p, dim=dim, max_rows=max_rows)
    except Exception as e:
        problem = f"not a readable .npz ({type(e).__name__}: {e})"
    if problem is not None:
        return problem
    try:
        with np.load(p, allow_pickle=False) as npz:
            ids, hashes, matrix, model = npz["ids"], npz["hashes"], npz["embeddings"], str(npz["model"]) or None
    except Exception as e:
        return f"cannot be loaded ({type(e).__name__}: {e})"
    return Sidecar(tuple(str(i) for i in ids), tuple(str(h) for h in hashes), matrix, model)


def read_embeddings(
    path: str | os.PathLike[str], *, model: str | None, dim: int | None, max_rows: int | None = None
) -> dict[str, tuple[str, Embedding]]:
    """The cached vectors by skill id, each with the fingerprint of the text it was computed from.

    A cache, never an error: a missing file, or one from another model or of another dimension than `dim`, yields
    `{}`; so does a damaged or suspicious one (its `.npy` headers announce other arrays than the cache's, more than
    `max_rows` vectors, absurd sizes, or sizes its members do not hold), with a warning. Vectors holding NaN or
    infinite values are dropped with a warning. What is not returned is recomputed when needed.
    """
    p = Path(path)
    if not p.is_file():
        return {}
    found = _load_sidecar(p, dim=dim, max_rows=max_rows)
    if isinstance(found, str):
        _ignored(p, found)
        return {}
    ids, hashes, matrix = found.ids, found.hashes, found.matrix
    if (
        found.model != model
        or matrix.dtype != np.float32
        or matrix.ndim != 2
        or (dim is not None and matrix.shape[1] != dim)
        or not (len(ids) == len(hashes) == matrix.shape[0])
    ):
        return {}
    finite = np.isfinite(matrix).all(axis=1)
    if not finite.all():
        bad = [i for i, ok in zip(ids, finite, strict=True) if not ok]
        _ignored(p, f"vectors of {', '.join(bad[:5])}{' ...' if len(bad) > 5 else ''} hold NaN or infinite values")
    return {i: (h, matrix[k]) for k, (i, h) in enumerate(zip(ids, hashes, strict=True)) if finite[k]}


def _ignored(path: Path, problem: str) -> None:
    warnings.warn(
        f"{path}: {problem}; ignored (it is a cache: the vectors are recomputed when needed, and the next save "
        "rewrites it)",
        RuntimeWarning,
        stacklevel=4,
    )


def npz_headers(path: Path, members_allowed: frozenset[str]) -> dict[str, tuple[tuple[int, ...], np.dtype[Any]]] | str:
    """Each member's (shape, dtype) from its `.npy` header (name without `.npy`), checked against the member's
    size, or what is wrong: other members than `members_allowed`, an unknown `.npy` version, Python objects."""
    with zipfile.ZipFile(path) as zf:
        members = {info.filename: info for info in zf.infolist()}
        if set(members) != members_allowed:
            return f"holds {sorted(members)}, not {sorted(members_allowed)}"
        headers: dict[str, tuple[tuple[int, ...], np.dtype[Any]]] = {}
        for name, info in members.items():
            with zf.open(info) as member:
                version = np.lib.format.read_magic(member)
                if version == (1, 0):
                    shape, _, dtype = np.lib.format.read_array_header_1_0(member)
                elif version == (2, 0):
                    shape, _, dtype = np.lib.format.read_array_header_2_0(member)
                else:
                    return f"{name}: unsupported .npy version {version}"
                data_start = member.tell()
            if dtype.hasobject:
                return f"{name}: holds Python objects"
            if info.file_size != data_start + math.prod(shape) * dtype.itemsize:
                return f"{name}: its header announces {shape} of {dtype} but it holds {info.file_size} bytes"
            headers[name[:-4]] = (shape, dtype)
    return headers


def load_npz_arrays(path: Path, names: Iterable[str]) -> dict[str, np.ndarray[Any, np.dtype[Any]]]:
    """The named arrays of an `.npz` (no pickles); check its `npz_headers` first."""
    with np.load(path, allow_pickle=False) as npz:
        return {name: npz[name] for name in names}


def sidecar_problem(path: Path, *, dim: int | None, max_rows: int | None) -> str | None:
    """What is wrong with a vector cache, judged from its members' `.npy` headers alone; `None`: fine to load."""
    headers = npz_headers(path, _NPZ_MEMBERS)
    if isinstance(headers, str):
        return headers
    (ids, ids_type), (hashes, hashes_type) = headers["ids"], headers["hashes"]
    (matrix, matrix_type), (model, model_type) = headers["embeddings"], headers["model"]
    text = {
        "ids": (ids_type, _MAX_ID_CHARS),
        "hashes": (hashes_type, _MAX_ID_CHARS),
        "model": (model_type, _MAX_MODEL_CHARS),
    }
    for name, (dtype, longest) in text.items():
        if dtype.kind != "U" or dtype.itemsize > 4 * longest:
            return f"{name}: {dtype} is not text of at most {longest} characters"
    if len(ids) != 1 or hashes != ids or model != ():
        return f"ids {ids}, hashes {hashes} and model {model} do not fit together"
    if matrix_type != np.dtype(np.float32) or len(matrix) != 2 or matrix[0] != ids[0]:
        return f"embeddings are {matrix} of {matrix_type}, not {ids[0]} float32 vectors"
    rows, width = matrix
    if not 0 < width <= _MAX_DIM or (dim is not None and width != dim):
        return f"vectors of dimension {width}, expected {dim if dim is not None else f'1 to {_MAX_DIM}'}"
    if max_rows is not None and rows > max_rows:
        return f"{rows} vectors for a skillbook of {max_rows} skills"
    return None
