"""Stop a run that cannot work: the same unfixable error on several samples (or benchmark episodes) in a row.

A wrong key, a model the provider does not know, a request it refuses, a local model that is not installed: no
retry fixes them, and every further sample would fail the same way (the issue behind this: 120 identical errors,
then "completed"). Until a sample has succeeded, `abort_after` samples in a row failing with the same such kind
abort the run; afterwards only credential failures do (a key revoked or a session token expired mid-run), since
one refused request after many successes is about that sample, not the configuration.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Protocol

from ace.exceptions import RunError
from ace.llm.retry import NON_RETRYABLE

__all__ = ["AbortWatch", "Outcome", "RunAborted", "RunFailedError", "first_cause"]

_CREDENTIALS = frozenset({"auth", "permission"})


class Outcome(Protocol):
    """A finished unit of work (a sample, an episode): its error and the error's kind, `None` on success."""

    @property
    def error(self) -> str | None: ...

    @property
    def error_kind(self) -> str | None: ...


class RunFailedError(RunError):
    """Every sample (or every episode of a benchmark phase) failed: the run is marked `failed`, not `completed`."""


class RunAborted(RunError):
    """The run stopped because its samples or episodes kept failing with an error no retry fixes."""

    def __init__(self, message: str, *, kind: str) -> None:
        self.kind = kind
        super().__init__(message)


@dataclass
class AbortWatch:
    """Sees every committed sample (`see`) and raises `RunAborted` when the run should stop."""

    after: int
    """Samples in a row with the same unfixable error kind that abort the run; 0 never aborts."""
    succeeded: bool = False
    kind: str | None = None
    streak: int = 0

    def see(self, sample: Outcome) -> None:
        """Count a committed sample; raises `RunAborted` on the `after`-th unfixable failure of one kind in a row."""
        self.see_outcome(sample.error, sample.error_kind, what="samples")

    def see_outcome(self, error: str | None, kind: str | None, *, what: str) -> None:
        """Count one finished item (`error` and its `kind`, `None` on success) of the `what` being run."""
        if error is None:
            self.succeeded, self.kind, self.streak = True, None, 0
            return
        armed = kind in NON_RETRYABLE and (not self.succeeded or kind in _CREDENTIALS)
        if not armed or kind is None:
            self.kind, self.streak = None, 0
            return
        self.streak = self.streak + 1 if kind == self.kind else 1
        self.kind = kind
        if self.after and self.streak >= self.after:
            raise RunAborted(
                f"aborted: {self.streak} {what} in a row failed with an error no retry can fix ({kind}); "
                f"the last one: {error}",
                kind=kind,
            )


def first_cause(group: BaseExceptionGroup[BaseException]) -> BaseException:
    """The exception that aborted a task group (not the cancellations it caused)."""
    for exc in group.exceptions:
        if isinstance(exc, BaseExceptionGroup):
            return first_cause(exc)
        if not isinstance(exc, asyncio.CancelledError):
            return exc
    return group.exceptions[0]
