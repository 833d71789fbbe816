"""An exclusive lock on a run (or checkpoint) folder, held for the whole run or resume.

Two processes writing one folder would each append their samples to `samples.jsonl` and snapshot their own
skillbook over the other's. The lock is an OS lock on `FOLDER/.lock` (`fcntl.flock` on POSIX, `msvcrt.locking`
on Windows): the OS releases it when its holder exits, however it exits, so a killed run never leaves the folder
locked. The file records the holder's PID, host and start time, and a refused process names them.

The lock is re-entrant within one thread (the runner holds it and the trainer it starts asks for it again); another
thread of the same process is refused like another process. Where neither OS lock exists the folder is used
unlocked, with a warning.
"""

from __future__ import annotations

import json
import os
import socket
import sys
import threading
import time
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from ace import json_safe
from ace.core.insight_source import utc_now
from ace.exceptions import UserError

__all__ = ["LOCK_FILE", "FolderBusyError", "file_lock", "folder_lock"]

LOCK_FILE = ".lock"
_WINDOWS_LOCK_OFFSET = 1 << 20  # lock a byte past the holder record, so a refused process can still read it


class FolderBusyError(UserError, RuntimeError):
    """Another process (or thread) holds the folder's lock; the message names it and what to do."""

    def __init__(self, folder: Path, holder: dict[str, object]) -> None:
        self.folder = folder
        self.holder = holder
        who = f"process {holder.get('pid', '?')}"
        if holder.get("host") and holder.get("host") != socket.gethostname():
            who += f" on {holder['host']}"
        since = f" since {holder['started_at']}" if holder.get("started_at") else ""
        super().__init__(
            f"{folder} is in use by {who}{since}: two runs in one folder would record samples twice. Wait for it "
            f"to finish, or stop it (`kill {holder.get('pid', '<pid>')}`) and resume then"
        )


@contextmanager
def folder_lock(folder: Path) -> Iterator[None]:
    """Hold `folder`'s exclusive lock for the block; raises `FolderBusyError` at once when it is taken."""
    folder.mkdir(parents=True, exist_ok=True)
    with file_lock(folder / LOCK_FILE, lambda holder: FolderBusyError(folder, holder)):
        yield


@contextmanager
def file_lock(path: Path, busy: Callable[[dict[str, object]], Exception], *, wait_s: float = 0.0) -> Iterator[None]:
    """Hold the OS lock on the file `path` for the block, re-entrant within one thread; when another holder keeps
    it for longer than `wait_s` seconds, raise `busy(holder record)`."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        deadline = time.monotonic() + wait_s
        while not _try_lock(fd):
            holder = _read_holder(fd)
            if holder.get("pid") == os.getpid() and holder.get("thread") == threading.get_ident():
                yield  # this thread already holds it (the runner, around its trainer)
                return
            if time.monotonic() >= deadline:
                raise busy(holder)
            time.sleep(0.05)
        record = {"pid": os.getpid(), "thread": threading.get_ident(), "host": socket.gethostname()}
        _write_holder(fd, {**record, "started_at": utc_now()})
        try:
            yield
        finally:
            _write_holder(fd, {})
            _unlock(fd)
    finally:
        os.close(fd)


if sys.platform == "win32":
    import msvcrt

    def _try_lock(fd: int) -> bool:
        """Take the lock without waiting; `False` when someone holds it."""
        os.lseek(fd, _WINDOWS_LOCK_OFFSET, os.SEEK_SET)
        try:
            msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)
        except OSError:
            return False
        return True

    def _unlock(fd: int) -> None:
        os.lseek(fd, _WINDOWS_LOCK_OFFSET, os.SEEK_SET)
        msvcrt.locking(fd, msvcrt.LK_UNLCK, 1)

else:
    try:
        import fcntl

        _HAVE_FCNTL = True
    except ImportError:  # neither lock (e.g. WASI): degrade, loudly
        _HAVE_FCNTL = False

    def _try_lock(fd: int) -> bool:
        """Take the lock without waiting; `False` when someone holds it."""
        if not _HAVE_FCNTL:
            warnings.warn(
                "this platform has neither fcntl nor msvcrt: run folders are not locked, so never run two processes "
                "on one folder",
                RuntimeWarning,
                stacklevel=4,
            )
            return True
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        return True

    def _unlock(fd: int) -> None:
        if _HAVE_FCNTL:
            fcntl.flock(fd, fcntl.LOCK_UN)


def _write_holder(fd: int, record: dict[str, object]) -> None:
    data = (json.dumps(record) + "\n").encode("utf-8") if record else b""
    os.ftruncate(fd, 0)
    os.lseek(fd, 0, os.SEEK_SET)
    os.write(fd, data)


def _read_holder(fd: int) -> dict[str, object]:
    """The holder's record; `{}` when it cannot be read (the holder is between taking the lock and writing)."""
    try:
        os.lseek(fd, 0, os.SEEK_SET)
        data = os.read(fd, 4096)
        record = json_safe.loads(data) if data.strip() else {}
    except (OSError, ValueError):
        return {}
    return record if isinstance(record, dict) else {}
