"""How a training run's samples are scheduled: each sample's reflect phase, then its skill-manager phase and commit.

`SampleScheduler` runs one sample after the other when `max_workers` is 1. With `max_workers > 1`,
`TrainingConfig.sm_sessions` chooses how the skill-manager phase (update, after_update steps, checkpoint) of
concurrent samples meets:

`"concurrent"` (the default): whole samples run concurrently, skill-manager sessions included, and their edits merge
on the shared skillbook under its lock, each tool call atomic. What makes that lose nothing is optimistic
concurrency in the tools (`ace.skill_manager.tools`): an edit of a skill another session rewrote since this one read
it is refused with the current text, and an add that a skill added concurrently would have matched is refused with
that skill; the model merges and retries (one extra call, only on a real collision). Throughput scales with the
workers (`benchmarks/pipeline_overhead.py`: 8 workers ~7x); the price is that the result depends on timing (which
session wins a race), so it is not the same for every `max_workers`. Samples commit (journal line) as they finish;
`on_sample` sees them in that order.

`"ordered"`: the reflections run concurrently, at most `max_workers` at a time, and the skill-manager phase is
serialised under an ordered asyncio lock, so the run is reproducible:

- Why serialise: a skill-manager session searches the skillbook before it adds or widens a skill. Two concurrent
  sessions would each miss the skill the other is adding and both add it (near-duplicates), or both rewrite
  the same skill from the same old text so that one widening overwrites the other (a lost update). Serialised,
  every session sees every earlier session's result, exactly as in a sequential run. The price: the speedup is
  bounded by `(reflection time + session time) / session time` (`benchmarks/pipeline_overhead.py`: 1.33x when
  a reflection is one call and a session three; 2.5x with a 1 s recursive reflection), which is worth it while
  reflections dominate; letting sessions run concurrently measured 7.7x but added near-duplicate skills.
- Why ordered: the phase runs in sample-index order (a ticket lock): a sample whose reflection finished early
  waits for every earlier sample to commit first. The skillbook after k committed samples is then the same
  whatever `max_workers` is (given the same reflections), and "resume after k samples" is well defined.
- Look-ahead is bounded: at most `2 * max_workers` samples are between start and commit, so a reflection never
  sees a skillbook more than that many samples behind, and an interruption discards little work.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass

from opentelemetry.trace import Span

from ace.core.journal import SkillbookMark
from ace.core.skillbook import Skillbook
from ace.llm.retry import failure_kind
from ace.pipeline.context import StepContext
from ace.pipeline.pipeline import Pipeline, StepFailed
from ace.reflector.simple import ReflectorError
from ace_eval.e2e.advice import cli_advice, conflict_note
from ace_eval.e2e.samples_plan import PlannedSample
from ace_eval.e2e.span_tree import EpochSpans
from ace_eval.e2e.training_results import RoleUsage, SampleResult, SMSessions
from ace_eval.run.abort import first_cause

__all__ = ["Commit", "SampleScheduler"]

Commit = Callable[[SampleResult], Awaitable[None]]
"""Records a finished sample (journal line, `on_sample`); the scheduler calls it once per sample."""


@dataclass(frozen=True)
class _Reflected:
    """A sample after its concurrent phase: the context so far, or the error that ended it."""

    item: PlannedSample
    ctx: StepContext
    error: Exception | None
    seconds: float
    step: str | None = None
    """The step that raised `error`."""


class _OrderedLock:
    """A ticket lock: `turn(k)` is entered by k = 0, 1, 2, ... in that order, one at a time."""

    def __init__(self) -> None:
        self._next = 0
        self._cond = asyncio.Condition()

    @asynccontextmanager
    async def turn(self, ticket: int) -> AsyncIterator[None]:
        async with self._cond:
            await self._cond.wait_for(lambda: self._next == ticket)
        try:
            yield
        finally:
            async with self._cond:
                self._next += 1
                self._cond.notify_all()


class SampleScheduler:
    """Runs planned samples through the pipeline's reflect and update phases, `max_workers` at a time, and commits
    each; `sm_sessions` chooses how concurrent samples' skill-manager phases meet (see the module docstring)."""

    def __init__(self, *, reflect: Pipeline, update: Pipeline, max_workers: int, sm_sessions: SMSessions) -> None:
        self._reflect = reflect
        self._update = update
        self.max_workers = max_workers
        self.sm_sessions = sm_sessions

    async def run(self, pending: Sequence[PlannedSample], book: Skillbook, commit: Commit, spans: EpochSpans) -> None:
        """Run and commit every pending sample on `book`, each in its `train.sample` span (`spans`)."""
        if self.max_workers == 1:
            await self._sequential(pending, book, commit, spans)
        elif self.sm_sessions == "ordered":
            await self._ordered(pending, book, commit, spans)
        else:
            await self._concurrent(pending, book, commit, spans)

    async def _sequential(
        self, pending: Sequence[PlannedSample], book: Skillbook, commit: Commit, spans: EpochSpans
    ) -> None:
        for item in pending:
            with spans.sample(item) as span:
                reflected = await self._reflect_phase(item, book)
                await self._serial_phase(reflected, book, commit, span)

    async def _ordered(
        self, pending: Sequence[PlannedSample], book: Skillbook, commit: Commit, spans: EpochSpans
    ) -> None:
        workers = self.max_workers
        reflecting = asyncio.Semaphore(workers)
        window = asyncio.Semaphore(2 * workers)
        ordered = _OrderedLock()

        async def one(ticket: int, item: PlannedSample) -> None:
            try:
                with spans.sample(item) as span:
                    async with reflecting:
                        reflected = await self._reflect_phase(item, book)
                    async with ordered.turn(ticket):
                        await self._serial_phase(reflected, book, commit, span)
            finally:
                window.release()

        try:
            async with asyncio.TaskGroup() as group:
                for ticket, item in enumerate(pending):
                    await window.acquire()
                    group.create_task(one(ticket, item))
        except BaseExceptionGroup as group_error:
            raise first_cause(group_error) from None

    async def _concurrent(
        self, pending: Sequence[PlannedSample], book: Skillbook, commit: Commit, spans: EpochSpans
    ) -> None:
        workers = self.max_workers
        slots = asyncio.Semaphore(workers)
        window = asyncio.Semaphore(2 * workers)
        previous: dict[str, asyncio.Event] = {}  # the last started sample of each trace: the next one waits for it
        committing = asyncio.Lock()

        async def one(item: PlannedSample, after: asyncio.Event | None, finished: asyncio.Event) -> None:
            try:
                if after is not None:
                    await after.wait()
                async with slots:
                    with spans.sample(item) as span:
                        reflected = await self._reflect_phase(item, book)
                        await self._serial_phase(reflected, book, commit, span, lock=committing)
            finally:
                finished.set()
                window.release()

        try:
            async with asyncio.TaskGroup() as group:
                for item in pending:
                    await window.acquire()
                    finished = asyncio.Event()
                    after = previous.get(item.trace_uid)
                    previous[item.trace_uid] = finished
                    group.create_task(one(item, after, finished))
        except BaseExceptionGroup as group_error:
            raise first_cause(group_error) from None

    async def _reflect_phase(self, item: PlannedSample, book: Skillbook) -> _Reflected:
        start = time.perf_counter()
        ctx = StepContext.for_trace(item.trace, book, epoch=item.epoch, identity=item.identity)
        try:
            return _Reflected(item, await self._reflect.run(ctx), None, time.perf_counter() - start)
        except StepFailed as e:
            ctx = e.ctx or ctx  # what the steps before the failed one produced (a reflection, usage) is recorded
            if isinstance(e.cause, ReflectorError):  # what the failed attempt cost still counts
                ctx = ctx.with_usage("reflector", e.cause.usage)
            return _Reflected(item, ctx, e.cause, time.perf_counter() - start, e.step)

    async def _serial_phase(
        self, reflected: _Reflected, book: Skillbook, commit: Commit, span: Span, *, lock: asyncio.Lock | None = None
    ) -> None:
        """Update (+ deduplicate, extra steps), then commit. `lock`: sessions run concurrently; only the commit
        is serialised, and the sample's operations are picked out of the shared audit log by its trace."""
        item, ctx, error, failed_step = reflected.item, reflected.ctx, reflected.error, reflected.step
        start = time.perf_counter()
        mark = SkillbookMark.of(book)
        if error is None:
            try:
                ctx = await self._update.run(ctx)
            except StepFailed as e:  # keep what the update and earlier steps did (usage, the session)
                error, failed_step, ctx = e.cause, e.step, e.ctx or ctx
        message = _error_text(error, failed_step) if error is not None else _incomplete(ctx)
        ops = book.operations_since(mark.ops)
        if lock is not None:
            ops = tuple(op for op in ops if op.trace_uid == item.trace_uid)
        result = SampleResult(
            trace_uid=item.trace_uid,
            trace_id=item.trace_id,
            epoch=item.epoch,
            index=item.index,
            error=message,
            reflection=ctx.reflections[0] if ctx.reflections else None,
            operations=tuple(op.to_dict() for op in ops),
            changed_skill_ids=tuple(dict.fromkeys(op.skill_id for op in ops if op.skill_id is not None)),
            usage={role: RoleUsage.from_run_usage(u) for role, u in ctx.usage.items()},
            redactions=dict(ctx.redactions),
            duration_s=reflected.seconds + time.perf_counter() - start,
            skipped=ctx.skipped,
            refusals=_refusals(ctx, workers=self.max_workers, applied=len(ops)),
            error_kind=None if message is None else "stopped" if error is None else failure_kind(error),
            attempt=item.attempt,
        )
        span.set_attribute("ace.operations_count", len(ops))
        if message is not None:
            span.set_attribute("ace.error", message)
        if lock is None:
            await commit(result)
        else:
            async with lock:
                await commit(result)


def _error_text(error: BaseException, step: str | None) -> str:
    where = f" (in step {step!r})" if step is not None else ""
    return cli_advice(f"{type(error).__name__}: {error}{where}")


def _incomplete(ctx: StepContext) -> str | None:
    """A skill-manager session that stopped early (budget, model retries) is reported, not hidden."""
    sm = ctx.sm_result
    if sm is not None and not sm.completed:
        return cli_advice(f"SkillManagerStopped: {sm.stop_reason or 'the session ended before the model finished'}")
    return None


def _refusals(ctx: StepContext, *, workers: int, applied: int) -> tuple[dict[str, str], ...]:
    """The skill-manager calls that were not applied, with the reasons the model was given (a collision with a
    concurrent session also says why sessions ran at once and whether the lesson was redone or lost)."""
    sm = ctx.sm_result
    if sm is None:
        return ()
    return tuple({"tool": r.tool, "reason": conflict_note(r.reason, workers, applied)} for r in sm.refusals)
