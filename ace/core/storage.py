"""Skillbook files: `skillbook.json` (diffable, no vectors) and the `.embeddings.npz` cache beside it.

Every write goes to a temporary file in the same folder and is renamed over the target, so a crash
or an exception mid-write leaves the previous file intact.
"""

from __future__ import annotations

import contextlib
import gc
import json
import os
import tempfile
import zipfile
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import IO, Any

import numpy as np

from ace.core.skill import Embedding
from ace.exceptions import SkillbookFormatError

__all__ = [
    "Writer",
    "atomic_write",
    "atomic_write_many",
    "embeddings_writer",
    "gc_paused",
    "json_writer",
    "read_embeddings",
    "read_json_file",
    "sidecar_path",
]


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
            fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
            pending.append((tmp, target))
            with os.fdopen(fd, "wb") as f:
                os.fchmod(f.fileno(), _default_mode())  # mkstemp makes 0600; a saved file is an ordinary file
                write(f)
                f.flush()
                os.fsync(f.fileno())
        while pending:
            tmp, target = pending[0]
            os.replace(tmp, target)
            pending.pop(0)
    finally:
        for tmp, _ in pending:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)


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
    """A writer of `payload` as UTF-8 JSON, one top-level field per line and, for the list fields named in
    `one_per_line`, one item per line: stable and diffable (a changed skill is a changed line), and encoded by
    the C encoder (an indented dump goes through the pure-Python encoder, ~10x slower)."""
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
    data = "\n".join(lines).encode("utf-8")

    def write(f: IO[bytes]) -> None:
        f.write(data)

    return write


def read_json_file(path: str | os.PathLike[str]) -> Any:
    """Parse a JSON file; a syntax error names the file, line, column and character offset."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise SkillbookFormatError(f"{p}: no such skillbook file", path=str(p)) from None
    except UnicodeDecodeError as e:
        raise SkillbookFormatError(f"{p}: not UTF-8 text (byte {e.start}): {e.reason}", path=str(p)) from None
    try:
        return json.loads(text)
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


def read_embeddings(
    path: str | os.PathLike[str], *, model: str | None, dim: int | None
) -> dict[str, tuple[str, Embedding]]:
    """The cached vectors by skill id, each with the fingerprint of the text it was computed from.

    A cache, never an error: a missing, corrupt or foreign file, one from another model or of another
    dimension than `dim`, yields `{}`.
    """
    p = Path(path)
    if not p.is_file():
        return {}
    try:
        with np.load(p, allow_pickle=False) as npz:
            ids = npz["ids"]
            hashes = npz["hashes"]
            matrix = npz["embeddings"]
            stored_model = str(npz["model"]) or None
    except Exception:
        return {}
    if (
        stored_model != model
        or matrix.dtype != np.float32
        or matrix.ndim != 2
        or (dim is not None and matrix.shape[1] != dim)
        or ids.ndim != 1
        or not (len(ids) == len(hashes) == matrix.shape[0])
    ):
        return {}
    return {str(i): (str(h), matrix[k]) for k, (i, h) in enumerate(zip(ids, hashes, strict=True))}
