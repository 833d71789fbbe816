"""`AuditLog`: the skillbook's operations log, its version counter and the recent changes behind `changes_since`.

Not locked itself: the skillbook holds its lock around every call.
"""

from __future__ import annotations

from collections import deque

from ace.core.update_operation import UpdateOperation

__all__ = ["AuditLog", "LogMark"]

_CHANGELOG_SIZE = 10_000
LogMark = tuple[int, int, int]
"""Where the log stood (`AuditLog.mark`): its length, the version and the number of recent changes."""


class AuditLog:
    """The audit log (one `UpdateOperation` per mutation, oldest first) and the version it counts."""

    __slots__ = ("_changes", "_entries", "version")

    def __init__(self, entries: list[UpdateOperation] | None = None) -> None:
        self._entries: list[UpdateOperation] = entries if entries is not None else []
        self._changes: deque[tuple[int, str]] = deque(maxlen=_CHANGELOG_SIZE)
        self.version = 0
        """Increases by one with every entry; indexes compare it to know when they are stale."""

    def __len__(self) -> int:
        return len(self._entries)

    def append(self, entry: UpdateOperation, skill_id: str) -> None:
        """Log one mutation of `skill_id`."""
        self._entries.append(entry)
        self.version += 1
        self._changes.append((self.version, skill_id))

    def since(self, position: int) -> tuple[UpdateOperation, ...]:
        """The entries from `position` on."""
        return tuple(self._entries[position:])

    def entries(self) -> list[UpdateOperation]:
        """A copy of every entry."""
        return list(self._entries)

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
        self.version = version
        while len(self._changes) > changes:
            self._changes.pop()
