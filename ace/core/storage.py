"""Skillbook files written atomically: `skillbook.json` (diffable, no vectors) and its sidecars (the
`.embeddings.npz` cache of `ace.core.vectors`, the search index).

Every write goes to a temporary file in the same folder and is renamed over the target, so a crash
or an exception mid-write leaves the previous file intact. A temporary is named after its target and the writing
process (`.skillbook.json.<pid>.<random>.tmp`); the next save of the same file removes those of processes that no
longer run (a save killed halfway).
"""

from __future__ import annotations

import contextlib
import gc
import hashlib
import json
import os
import re
import sys
import tempfile
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Protocol, runtime_checkable

import ace.json_safe as json_safe
from ace.exceptions import SkillbookFormatError

__all__ = [
    "FileState",
    "PathLike",
    "SidecarOwner",
    "Writer",
    "atomic_write",
    "atomic_write_many",
    "bytes_writer",
    "commit_files",
    "format_errors",
    "fsync_folder",
    "gc_paused",
    "json_bytes",
    "json_writer",
    "read_json_file",
    "read_json_with_digest",
    "recover_commit",
    "remove_stale_temps",
    "sidecar_path",
]

_TEMP_NAME = re.compile(r"\.(?P<target>.+)\.(?P<pid>[0-9]+)\.[A-Za-z0-9_]+\.tmp")
_COMMIT_TEMP = re.compile(r"\.(?P<target>.+)\.(?P<pid>[0-9]+)\.[A-Za-z0-9_]+\.commit")


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
PathLike = str | os.PathLike[str]


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


def fsync_folder(folder: str | os.PathLike[str]) -> None:
    """Make a file created, renamed or deleted in `folder` durable: its directory entry (POSIX; Windows cannot
    open a folder and needs no such step)."""
    if sys.platform == "win32":
        return
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


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
            _write_temp(Path(path), write, ".tmp", pending)
        while pending:
            tmp, target = pending[0]
            os.replace(tmp, target)
            pending.pop(0)
    finally:
        for tmp, _ in pending:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)


def _write_temp(target: Path, write: Writer, suffix: str, pending: list[tuple[str, Path]]) -> None:
    """Write `target`'s content to a new fsynced temporary beside it, appended to `pending` as (temporary, target)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    remove_stale_temps(target.parent, target.name)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.{os.getpid()}.", suffix=suffix, dir=target.parent)
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


def commit_files(files: Sequence[tuple[str | os.PathLike[str], Writer]], *, intent: Path) -> None:
    """All or nothing across files of one folder, even against a kill between the renames.

    Every file is written to a temporary (`.<name>.<pid>.<random>.commit`, which `remove_stale_temps` leaves alone),
    then `intent` lists the renames (written atomically: from here the commit is decided), then the renames run and
    `intent` goes. A kill before `intent` leaves every target as it was; after it, `recover_commit(intent)` (run by
    the next reader) finishes the renames.
    """
    if any(Path(path).parent != intent.parent for path, _ in files):
        raise ValueError(f"commit_files writes into the folder of its intent record ({intent.parent}) only")
    pending: list[tuple[str, Path]] = []
    decided = False
    try:
        for path, write in files:
            _write_temp(Path(path), write, ".commit", pending)
        renames = [[Path(tmp).name, target.name] for tmp, target in pending]
        record = json.dumps({"pid": os.getpid(), "renames": renames}).encode("utf-8")

        def write_record(f: IO[bytes]) -> None:
            f.write(record)

        atomic_write(intent, write_record)
        decided = True
        _finish(intent, renames)
    finally:
        if not decided:
            for tmp, _ in pending:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(tmp)


def recover_commit(intent: Path) -> bool:
    """Finish the commit a killed `commit_files` left at `intent` (its process no longer runs); True when one was
    finished. Without an intent, the temporaries of commits killed before deciding are removed. A damaged intent
    (never written whole: it is renamed into place) is refused."""
    if not intent.is_file():
        with contextlib.suppress(OSError):  # a folder this reader may not list or write: leave it as it is
            for entry in os.scandir(intent.parent):
                match = _COMMIT_TEMP.fullmatch(entry.name)
                if match and entry.is_file(follow_symlinks=False) and not _process_may_run(int(match["pid"])):
                    os.unlink(entry.path)
        return False
    record = json_safe.read_json(intent)
    renames = record.get("renames") if isinstance(record, dict) else None
    pid = record.get("pid") if isinstance(record, dict) else None
    if not isinstance(renames, list) or not all(
        isinstance(r, list) and len(r) == 2 and all(isinstance(n, str) and "/" not in n for n in r) for r in renames
    ):
        raise json_safe.JsonInputError(
            "not a commit record of ace: move it away (the commit it describes is then lost)",
            kind="syntax",
            file=str(intent),
        )
    if isinstance(pid, int) and pid != os.getpid() and _process_may_run(pid):
        return False  # its writer is still renaming
    _finish(intent, renames)
    return True


def _finish(intent: Path, renames: list[list[str]]) -> None:
    for tmp, target in renames:
        with contextlib.suppress(FileNotFoundError):  # renamed already (before a kill, or by a concurrent recovery)
            os.replace(intent.parent / tmp, intent.parent / target)
    with contextlib.suppress(FileNotFoundError):
        intent.unlink()


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
    """Parse a JSON file with the safe reader (`ace.json_safe`: size, depth and integer limits); a refusal
    names the file, line, column and field."""
    return read_json_with_digest(path)[0]


def read_json_with_digest(path: str | os.PathLike[str]) -> tuple[Any, str]:
    """Parse a JSON file (as `read_json_file`) and return the SHA-256 of its bytes too."""
    p = Path(path)
    with format_errors(p):
        raw = json_safe.read_bytes(p)
        return json_safe.loads(raw, file=str(p)), hashlib.sha256(raw).hexdigest()


@contextlib.contextmanager
def format_errors(p: Path) -> Iterator[None]:
    """A file refused by the safe JSON reader (`JsonInputError`), as the `SkillbookFormatError` naming the file,
    and the line and column of malformed JSON."""
    try:
        yield
    except json_safe.JsonInputError as e:
        if e.kind == "missing":
            raise SkillbookFormatError(f"{p}: no such skillbook file", path=str(p)) from None
        if e.kind == "syntax" and e.column:
            where = f"{p}, line {e.line}, column {e.column}"
            raise SkillbookFormatError(f"{where}: malformed JSON: {e.reason}", path=str(p)) from None
        raise SkillbookFormatError(str(e), path=str(p)) from None
