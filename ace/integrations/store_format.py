"""The on-disk format of a skillbook store, read side: where a store's current skillbook is, and a holder that
follows `current` as it moves.

```
STORE/
  store.json               the marker: {"format": "ace-skillbook-store", "format_version": 1}
  current                  the number of the current version ("0003\\n"), replaced atomically (temp + rename)
  versions/0001/           one immutable version: skillbook.json (+ .embeddings.npz, .index.npz), version.json
  versions/0002/ ...
```

It lives in `ace` (not in `ace_eval.store`, which writes stores) because an agent reads its skillbook through
`ace.integrations` and `ace` never imports `ace_eval`: this module is the whole of what a reader needs. `current`
is a small file rather than a symlink because a file renamed over another is atomic on POSIX and Windows alike,
while creating symlinks on Windows needs a privilege most users lack.
"""

from __future__ import annotations

import os
import re
import threading
import warnings
from pathlib import Path

from ace.core.skillbook import Skillbook
from ace.core.storage import read_json_file
from ace.exceptions import SkillbookFormatError, UserError
from ace.json_safe import JsonInputError

__all__ = [
    "CURRENT_FILE",
    "MARKER_FILE",
    "SKILLBOOK_FILE",
    "STORE_FORMAT",
    "VERSIONS_DIR",
    "VERSION_FILE",
    "CurrentSkillbook",
    "StoreFormatError",
    "check_marker",
    "current_skillbook_path",
    "is_store",
    "parse_version_name",
    "read_current",
    "version_folder",
    "version_name",
]

STORE_FORMAT = "ace-skillbook-store"
MARKER_FILE = "store.json"
CURRENT_FILE = "current"
VERSIONS_DIR = "versions"
SKILLBOOK_FILE = "skillbook.json"
VERSION_FILE = "version.json"
_NAME = re.compile(r"[0-9]{4,9}")
_MAX_POINTER = 64


class StoreFormatError(UserError, ValueError):
    """A store folder whose files do not read (a damaged `current`, a missing version); the message names the file
    and the fix."""


def version_name(number: int) -> str:
    """`3` -> `"0003"`: the folder name of version `number` (sorted as text and as numbers alike up to 9999)."""
    return f"{number:04d}"


def parse_version_name(name: str) -> int | None:
    """`"0003"` -> `3`; `None` for anything else (a temporary folder, a stray file)."""
    return int(name) if _NAME.fullmatch(name) and int(name) > 0 else None


def version_folder(root: Path, number: int) -> Path:
    """The folder of version `number` in the store at `root`."""
    return root / VERSIONS_DIR / version_name(number)


def is_store(path: str | os.PathLike[str]) -> bool:
    """Whether `path` is a skillbook store (a folder with the store's marker file)."""
    p = Path(path)
    return p.is_dir() and (p / MARKER_FILE).is_file()


def check_marker(root: Path) -> None:
    """Refuse a folder that is not a store of this format, naming the fix."""
    marker = root / MARKER_FILE
    if not root.is_dir():
        raise StoreFormatError(
            f"{root}: no such skillbook store; create it by publishing to it: "
            f"ace-eval skillbook publish SKILLBOOK --to {root}"
        )
    if not marker.is_file():
        raise StoreFormatError(
            f"{root} is not a skillbook store (it has no {MARKER_FILE}): pass the store's folder, or publish to a new "
            f"or empty folder to create one (ace-eval skillbook publish SKILLBOOK --to FOLDER)"
        )
    try:
        data = read_json_file(marker)
    except (SkillbookFormatError, JsonInputError) as e:
        raise StoreFormatError(f"{marker}: not a store marker ({e}); restore it: {_marker_fix()}") from None
    if not isinstance(data, dict) or data.get("format") != STORE_FORMAT:
        raise StoreFormatError(f"{marker}: not a store marker of {STORE_FORMAT}; restore it: {_marker_fix()}")
    if data.get("format_version") != 1:
        raise StoreFormatError(
            f"{marker}: store format version {data.get('format_version')!r}, this ace reads version 1: upgrade ace"
        )


def _marker_fix() -> str:
    return f'its content is {{"format": "{STORE_FORMAT}", "format_version": 1}}'


def read_current(root: Path) -> int | None:
    """The number `current` names (`None` before the first publish); a damaged or dangling pointer is refused."""
    pointer = root / CURRENT_FILE
    try:
        with open(pointer, "rb") as f:
            raw = f.read(_MAX_POINTER + 1)
    except FileNotFoundError:
        return None
    text = raw.decode("ascii", errors="replace").strip()
    number = parse_version_name(text) if len(raw) <= _MAX_POINTER else None
    if number is None:
        raise StoreFormatError(
            f"{pointer}: not a version number (it holds {text[:20]!r}); point it at a version of "
            f"{root / VERSIONS_DIR}: ace-eval skillbook rollback {root} --to N"
        )
    if not (version_folder(root, number) / VERSION_FILE).is_file():
        raise StoreFormatError(
            f"{pointer} names version {number}, which {root / VERSIONS_DIR} does not hold; point it at one that "
            f"exists: ace-eval skillbook rollback {root} --to N (ace-eval skillbook versions {root} lists them)"
        )
    return number


def current_skillbook_path(root: str | os.PathLike[str]) -> Path:
    """The skillbook file of the store's current version; refused (naming the fix) when there is none yet."""
    store = Path(root)
    check_marker(store)
    number = read_current(store)
    if number is None:
        raise StoreFormatError(
            f"{store} has no version yet: publish one (ace-eval skillbook publish SKILLBOOK --to {store})"
        )
    return version_folder(store, number) / SKILLBOOK_FILE


class CurrentSkillbook:
    """The skillbook of a store's current version, loaded again when `current` moves (publish, rollback).

    `get()` costs one `stat` of the pointer while it has not changed (its inode, size and mtime: a publish
    renames a new file over it, so all three change), and a read of the pointer and a load when it has. When the
    moved pointer or its version cannot be read, the version already loaded is kept, with a `RuntimeWarning`
    (an agent's run is not failed by a damaged store); the first `get()` raises instead. Thread-safe.
    """

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root)
        check_marker(self.root)
        self._lock = threading.Lock()
        self._stamp: tuple[int, int, int] | None = None
        self._number: int | None = None
        self._skillbook: Skillbook | None = None
        self.get()

    @property
    def version(self) -> int | None:
        """The version number last loaded."""
        return self._number

    def get(self) -> Skillbook:
        """The current version's skillbook (reloaded when `current` changed since the last call)."""
        pointer = self.root / CURRENT_FILE
        try:
            st = os.stat(pointer)
            stamp: tuple[int, int, int] | None = (st.st_ino, st.st_size, st.st_mtime_ns)
        except FileNotFoundError:
            stamp = None
        with self._lock:
            if self._skillbook is not None and stamp == self._stamp:
                return self._skillbook
            try:
                number = read_current(self.root)
                if number is None:
                    raise StoreFormatError(
                        f"{self.root} has no version yet: publish one (ace-eval skillbook publish SKILLBOOK --to "
                        f"{self.root})"
                    )
                if number != self._number or self._skillbook is None:
                    self._skillbook = Skillbook.load_from_file(version_folder(self.root, number) / SKILLBOOK_FILE)
                    self._number = number
            except (UserError, OSError) as e:
                if self._skillbook is None:
                    raise
                # an agent keeps serving the version it has rather than fail its run; said once per pointer change
                warnings.warn(f"kept version {self._number} of {self.root}: {e}", RuntimeWarning, stacklevel=2)
            self._stamp = stamp
            return self._skillbook
