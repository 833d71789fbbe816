"""The writes of a store, each one durable before the next: a version is built whole in a temporary folder, made
read-only, renamed into place, and only then does `current` move (a small file renamed over the old one).

A kill at any point leaves `current` naming the old version or the new one, and no version folder half-written:
a temporary folder (`versions/.NNNN.<pid>.<random>.tmp`) is invisible to readers and removed by the next publisher.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import secrets
import shutil
import stat
import sys
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

from ace.core.storage import atomic_write, fsync_folder, json_bytes
from ace.integrations.store_format import CURRENT_FILE, VERSION_FILE, VERSIONS_DIR, version_name
from ace_eval.run.lock import file_lock

__all__ = [
    "LOCK_FILE",
    "READ_ONLY",
    "build_version",
    "file_sha256",
    "remove_temporaries",
    "store_lock",
    "write_pointer",
]

LOCK_FILE = ".lock"
READ_ONLY = stat.S_IRUSR | stat.S_IRGRP | stat.S_IROTH
_TEMP_SUFFIX = ".tmp"
_CHUNK = 1 << 20


@contextmanager
def store_lock(root: Path, busy: Callable[[dict[str, object]], Exception], *, wait_s: float) -> Iterator[None]:
    """The store's publisher lock (an OS lock, released by the OS when its holder dies however it dies)."""
    with file_lock(root / LOCK_FILE, busy, wait_s=wait_s):
        yield


def file_sha256(path: Path) -> str:
    """The SHA-256 of the file's bytes, read in chunks."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def _copy(source: Path, target: Path) -> str:
    """Copy `source` to the new file `target`, fsync it, make it read-only; returns the SHA-256 of what was written."""
    digest = hashlib.sha256()
    with open(source, "rb") as src, open(target, "xb") as dst:
        while chunk := src.read(_CHUNK):
            digest.update(chunk)
            dst.write(chunk)
        dst.flush()
        os.fsync(dst.fileno())
    os.chmod(target, READ_ONLY)
    return digest.hexdigest()


def build_version(
    root: Path, number: int, files: Mapping[str, Path], record: Callable[[dict[str, str]], Mapping[str, Any]]
) -> Path:
    """Build version `number` from `files` (name -> source) and rename it into `versions/NNNN`; `record(hashes)`
    gives `version.json`'s content once every file is copied. Returns the version's folder.

    The caller holds the store lock, so the number is free; `os.rename` of a folder onto a name that exists fails,
    so even a second writer that ignored the lock could not replace a version.
    """
    versions = root / VERSIONS_DIR
    versions.mkdir(exist_ok=True)
    temp = versions / f".{version_name(number)}.{os.getpid()}.{secrets.token_hex(4)}{_TEMP_SUFFIX}"
    os.mkdir(temp)  # not `mkdtemp`: its 0700 would make the version unreadable to the agent's other users
    try:
        hashes = {name: _copy(source, temp / name) for name, source in files.items()}
        data = json_bytes(dict(record(hashes)))
        with open(temp / VERSION_FILE, "xb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(temp / VERSION_FILE, READ_ONLY)
        fsync_folder(temp)
        final = versions / version_name(number)
        os.rename(temp, final)
    except BaseException:
        _remove_tree(temp)
        raise
    fsync_folder(versions)
    return final


def write_pointer(root: Path, number: int) -> None:
    """Point `current` at version `number`: a temporary written and fsynced, renamed over `current`, the store
    folder fsynced (so the rename survives a power cut)."""

    def write(f: IO[bytes]) -> None:
        f.write(f"{version_name(number)}\n".encode("ascii"))

    atomic_write(root / CURRENT_FILE, write)
    fsync_folder(root)


def remove_temporaries(root: Path) -> list[Path]:
    """Remove the temporary folders of publishers that died (call with the store lock held: then no live publisher
    has one). Returns what was removed."""
    versions = root / VERSIONS_DIR
    removed: list[Path] = []
    with contextlib.suppress(FileNotFoundError):
        for entry in os.scandir(versions):
            if entry.name.startswith(".") and entry.name.endswith(_TEMP_SUFFIX) and entry.is_dir(follow_symlinks=False):
                _remove_tree(Path(entry.path))
                removed.append(Path(entry.path))
    return removed


def _remove_tree(path: Path) -> None:
    """Remove a folder of read-only files (Windows refuses to delete a read-only file until it is made writable)."""

    def make_writable(function: Callable[..., object], target: str, _exc: object) -> None:
        os.chmod(target, stat.S_IWUSR | stat.S_IRUSR)
        function(target)

    if not path.exists():
        return
    if sys.version_info >= (3, 12):
        shutil.rmtree(path, onexc=make_writable)
    else:
        shutil.rmtree(path, onerror=make_writable)
