"""`--max-parallel N`: up to N candidates at once, each in a process of its own running what a sequential trial
runs for it (`score_candidate` of `_run`: the e2e runner, then the benchmark's dev scoring); the trial's process
only schedules them, checks the budget before each start, and afterwards reads every result from its folder, so
the scoreboard is the one a sequential trial writes.

Processes, not threads: a run's spans go to the run's own file through process-wide Logfire configuration. The
dev scoring takes turns through one slot shared by the processes, so episodes and model requests in flight stay
within `--max-workers` and the benchmark's provider limits, as in a sequential trial; learning runs N at once.
A child dies with the trial's process (Linux: `PR_SET_PDEATHSIG`), so a killed trial leaves nothing running.
"""

from __future__ import annotations

import ctypes
import multiprocessing
import os
import signal
import sys
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from multiprocessing.connection import wait
from multiprocessing.context import ForkProcess
from typing import Any

from ace.exceptions import RunError
from ace_eval.trials._plan import BudgetExceeded, TrialPlan
from ace_eval.trials._scoreboard import CandidateEntry
from ace_eval.trials._vary import Candidate

Work = Callable[[Candidate, AbstractContextManager[object] | None], tuple[CandidateEntry, tuple[int, float]]]
"""A candidate learned and scored on the dev tasks, or read from its folder when finished (`score_candidate`); the
context manager, when given, is held around the dev scoring."""

__all__ = ["run_in_parallel"]


class _Slot:
    """One process at a time inside; the holder's pid is kept, so a holder that died is let go of."""

    def __init__(self, context: Any) -> None:
        self._lock = context.Lock()
        self._holder = context.Value("i", 0)

    @contextmanager
    def held(self) -> Iterator[None]:
        with self._lock:
            self._holder.value = os.getpid()
            try:
                yield
            finally:
                self._holder.value = 0

    def free_if_held_by(self, pid: int | None) -> None:
        if pid is not None and self._holder.value == pid:
            self._holder.value = 0
            self._lock.release()


def _die_with(parent: int) -> None:
    if sys.platform.startswith("linux"):
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    if os.getppid() != parent:  # the trial died before the line above
        os._exit(1)


def _child(work: Work, candidate: Candidate, slot: _Slot, parent: int) -> None:
    _die_with(parent)
    work(candidate, slot.held())


def run_in_parallel(plan: TrialPlan, spent: tuple[int, float], work: Work) -> None:
    """Learn and score every candidate, up to `plan.max_parallel` at once (a candidate that continues another's
    checkpoint starts when that one finished). Raises `BudgetExceeded` (after the running ones finish) when the
    next would exceed the budget, counting the running ones at the estimate; `RunError` when one failed."""
    context = multiprocessing.get_context("fork")
    slot = _Slot(context)
    pending = deque(range(len(plan.candidates)))
    running: dict[int, ForkProcess] = {}
    finished: list[str] = []
    failed: list[str] = []
    estimate: tuple[int, float] | None = None
    limited = plan.budget.max_episodes is not None or plan.budget.max_cost is not None
    stop: BudgetExceeded | None = None

    def now() -> str:
        names = ", ".join(plan.candidates[i].name for i in sorted(running)) or "none"
        return f"running now: {names}; so far {spent[0]} episodes, ${spent[1]:.4f}"

    def done(index: int) -> None:
        nonlocal spent, estimate
        entry, used = work(plan.candidates[index], None)  # read from its folder
        finished.append(entry.name)
        spent, estimate = (spent[0] + used[0], spent[1] + used[1]), estimate or used
        plan.say(f"{plan.label(plan.candidates[index])}: done, dev mean {entry.dev.mean:.3f}; {now()}")

    try:
        while running or (pending and stop is None and not failed):
            while pending and stop is None and not failed and len(running) < plan.max_parallel:
                candidate = plan.candidates[pending[0]]
                if candidate.start_from is not None and candidate.start_from not in finished:
                    break  # its previous checkpoint first
                if plan.scored_already(candidate):
                    done(pending.popleft())
                    continue
                if limited and estimate is None and running:
                    break  # the budget's estimate comes from the first candidate to finish
                if estimate is not None:
                    ahead = (spent[0] + estimate[0] * len(running), spent[1] + estimate[1] * len(running))
                    try:
                        plan.budget.check(candidate.name, finished, ahead, estimate)
                    except BudgetExceeded as e:
                        stop = e
                        break
                index = pending.popleft()
                process = context.Process(target=_child, args=(work, candidate, slot, os.getpid()),
                                          name=f"trial-{candidate.name}", daemon=False)  # fmt: skip
                process.start()
                running[index] = process
                plan.say(f"{plan.label(candidate)}: learning (process {process.pid}); {now()}")
            if not running:
                break
            ready = wait([p.sentinel for p in running.values()])
            for index, process in sorted(running.items()):
                if process.sentinel not in ready:
                    continue
                process.join()
                del running[index]
                if process.exitcode == 0:
                    done(index)
                else:
                    slot.free_if_held_by(process.pid)
                    failed.append(f"{plan.candidates[index].name} (exit code {process.exitcode})")
    finally:
        for process in running.values():
            process.join()
    if failed:
        raise RunError(f"candidate(s) {', '.join(failed)} failed in their own process (the error is above); "
                       "the others are kept: continue with --resume")  # fmt: skip
    if stop is not None:
        raise stop
