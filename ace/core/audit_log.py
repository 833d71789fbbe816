"""`AuditLog`: the skillbook's operations log, its version counter and the recent changes behind `changes_since`.

Not locked itself: the skillbook holds its lock around every call.
"""

from __future__ import annotations

from collections import deque
from typing import Any

from ace.core.update_operation import UpdateOperation, logged

__all__ = ["AuditLog", "LogMark"]

_CHANGELOG_SIZE = 10_000
LogMark = tuple[int, int, int]
"""Where the log stood (`AuditLog.mark`): its length, the version and the number of recent changes."""


class AuditLog:
    """The audit log (one `UpdateOperation` per mutation, oldest first) and the version it counts."""

    __slots__ = ("_changes", "_entries", "_read", "version")

    def __init__(self, entries: list[UpdateOperation] | None = None) -> None:
        self._entries: list[Any] = entries if entries is not None else []
        """`UpdateOperation`s, and the field tuples of entries not read yet (`logged(*fields)` makes them)."""
        self._read = len(self._entries)
        """Every entry before this index is an `UpdateOperation`."""
        self._changes: deque[tuple[int, str]] = deque(maxlen=_CHANGELOG_SIZE)
        self.version = 0
        """Increases by one with every entry; indexes compare it to know when they are stale."""

    def __len__(self) -> int:
        return len(self._entries)

    def append(self, entry: UpdateOperation | tuple[Any, ...], skill_id: str) -> None:
        """Log one mutation of `skill_id`: its entry, or the fields of `logged` to make it when first read (a tuple
        costs a tenth of an entry to make, and most entries are read in bulk, if ever)."""
        self._entries.append(entry)
        self.version += 1
        self._changes.append((self.version, skill_id))

    def since(self, position: int) -> tuple[UpdateOperation, ...]:
        """The entries from `position` on (made once: the same objects on every read)."""
        entries = self._entries
        start = max(position, self._read)
        for i in range(start, len(entries)):
            if type(entries[i]) is tuple:
                entries[i] = logged(*entries[i])
        if position <= self._read:
            self._read = len(entries)
        return tuple(entries[position:])

    def entries(self) -> list[UpdateOperation]:
        """A copy of every entry."""
        return list(self.since(0))

    def changed_since(self, version: int) -> set[str] | None:
        """Ids of skills changed after `version`, or `None` when the recent changes no longer reach back."""
        if version == self.version:
            return set()
        if not self._changes or self._changes[0][0] > version + 1:
            return None
        changed: set[str] = set()
        for v, sid in reversed(self._changes):  # newest first: stop at the first change already seen
            if v <= version:
                break
            changed.add(sid)
        return changed

    def mark(self) -> LogMark:
        """The current position, for `rollback`."""
        return len(self._entries), self.version, len(self._changes)

    def rollback(self, mark: LogMark) -> None:
        """Forget every entry logged after `mark` (a refused batch)."""
        length, version, changes = mark
        del self._entries[length:]
        self._read = min(self._read, length)
        self.version = version
        while len(self._changes) > changes:
            self._changes.pop()
