"""`ReviewQueue`: the queue file of one skillbook, read and written under its lock."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ace.core.serialization import commit_intent
from ace.core.storage import recover_commit
from ace.exceptions import UserError
from ace_eval.review._model import QueueFile, queue_path, read_queue, write_queue
from ace_eval.run.lock import file_lock

__all__ = ["QueueBusyError", "ReviewQueue"]

_WAIT_S = 30.0
"""How long a writer waits for another one (a run committing a sample, a reviewer deciding) before giving up."""


class QueueBusyError(UserError, RuntimeError):
    """Another process kept the queue's lock for longer than a write takes; names it."""


@dataclass(frozen=True)
class ReviewQueue:
    """The review queue beside `skillbook` (`<stem>.review.json`) and its lock file (`.<stem>.review.lock`)."""

    skillbook: Path

    @property
    def path(self) -> Path:
        return queue_path(self.skillbook)

    @property
    def lock_path(self) -> Path:
        return self.skillbook.with_name(f".{self.skillbook.stem}.review.lock")

    def read(self) -> QueueFile:
        """The queue as it is now (an empty one when there is no file yet), without the lock; an accept a kill
        interrupted is finished first."""
        recover_commit(commit_intent(self.skillbook))
        return read_queue(self.path, self.skillbook)

    @contextmanager
    def editing(self) -> Iterator[QueueFile]:
        """The queue, under its lock, for a read-modify-write; `save` inside the block writes it."""
        self.skillbook.parent.mkdir(parents=True, exist_ok=True)
        with file_lock(self.lock_path, self._busy, wait_s=_WAIT_S):
            recover_commit(commit_intent(self.skillbook))
            yield read_queue(self.path, self.skillbook)

    def save(self, queue: QueueFile) -> None:
        """Write the queue atomically; call it inside `editing()`."""
        write_queue(self.path, queue)

    def _busy(self, holder: dict[str, Any]) -> QueueBusyError:
        return QueueBusyError(
            f"the review queue {self.path} has been locked by process {holder.get('pid', '?')} for more than "
            f"{_WAIT_S:.0f} s: wait for it to finish (a review run, or another `ace-eval review`), then try again"
        )
