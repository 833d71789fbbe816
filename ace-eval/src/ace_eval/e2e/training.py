"""Training: every trace of a collection through reflect -> update (-> deduplicate -> extra steps), for N epochs.

`_train_sequential` runs one sample after the other. With `max_workers > 1`, `TrainingConfig.sm_sessions`
chooses how the skill-manager phase (update, deduplicate, extra steps, checkpoint) of concurrent samples meets:

`"concurrent"` (`_train_concurrent`, the default): whole samples run concurrently, skill-manager sessions
included, and their edits merge on the shared skillbook under its lock, each tool call atomic. What makes that
lose nothing is optimistic concurrency in the tools (`ace.implementations.sm_tools`): an edit of a skill another
session rewrote since this one read it is refused with the current text, and an add that a skill added
concurrently would have matched is refused with that skill; the model merges and retries (one extra call, only
on a real collision). Throughput scales with the workers (`benchmarks/pipeline_overhead.py`: 8 workers ~7x);
the price is that the result depends on timing (which session wins a race), so it is not the same for every
`max_workers`. Samples commit (journal line) as they finish; `on_sample` sees them in that order.

`"ordered"` (`_train_parallel`): the reflections run concurrently, at most `max_workers` at a time, and the
skill-manager phase is serialised under an ordered asyncio lock, so the run is reproducible:

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

Resuming a concurrent run: a journal line carries everything the skillbook gained since the previous line, so
the edits of sessions still running ride along. After an interruption, a sample that has edits in the resumed
skillbook but no line of its own is recorded as interrupted (its edits kept, `SampleResult.error` says so) and is
not re-run, which would apply them twice; samples with no edit recorded are run again. In the concurrent mode two
samples of the same trace (different epochs) never run at the same time, which keeps that attribution exact.

Errors: an `Exception` in a sample (reflector, skill manager, a step) is recorded in `SampleResult.error` (its
kind in `error_kind`) and in the run summary; the run goes on. Operations applied before the failure stand and
are listed. When `abort_after` samples in a row fail with the same error no retry fixes (a wrong key, an unknown
model: `ace_eval.e2e._fail_fast`), the run stops with `RunAborted` after committing them. A
`BaseException` that is not an `Exception` (KeyboardInterrupt, cancellation, SystemExit) aborts the run: the
committed samples are in the checkpoint and the run resumes after them.

Checkpoint (`checkpoint_dir`): after every sample a journal line, every so often a skillbook snapshot; see
`ace_eval.e2e._checkpoint`. A run whose `checkpoint_dir` already holds `samples.jsonl` resumes: the skillbook is
rebuilt from the checkpoint (the `skillbook` argument is ignored) and recorded `(trace_uid, epoch)` samples are
not run again, except, with `retry_failed`, those that failed without applying an operation: they run again
and their new line (`attempt` + 1) supersedes the failed one (the journal's last line of a sample wins).
A failed sample that applied operations is kept as it is: running it again would apply them twice.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ace.core.skillbook import Skillbook
from ace.implementations.reflector import Reflector, ReflectorError
from ace.implementations.skill_manager import SkillManager
from ace.llm.retry import failure_kind
from ace.observability import AttributeInput, ace_span
from ace.steps.context import INITIAL_FIELDS, Step, StepContext
from ace.steps.deduplicate import DeduplicateStep
from ace.steps.pipeline import Pipeline
from ace.steps.reflect import ReflectStep
from ace.steps.update import UpdateStep
from ace_eval.e2e._checkpoint import (
    Checkpoint,
    CheckpointError,
    SkillbookMark,
    journal_start,
    load_checkpoint,
    skillbook_delta,
)
from ace_eval.e2e._fail_fast import AbortWatch, RunAborted, first_cause
from ace_eval.e2e._samples_plan import (
    PlannedSample,
    interrupted_samples,
    match_records,
    plan_samples,
    retried_samples,
)
from ace_eval.e2e._training_results import RoleUsage, SampleResult, SMSessions, TrainingResult
from ace_eval.e2e.folder_lock import folder_lock

__all__ = [
    "CheckpointError",
    "PlannedSample",
    "RoleUsage",
    "RunAborted",
    "SMSessions",
    "SampleResult",
    "Trainer",
    "TrainingConfig",
    "TrainingResult",
    "plan_samples",
]

OnSample = Callable[[SampleResult], None]
_Commit = Callable[[SampleResult], Awaitable[None]]


@dataclass(frozen=True, kw_only=True)
class TrainingConfig:
    """How a training run goes over the traces."""

    epochs: int = 1
    max_workers: int = 1
    """Samples in flight at once; 1 runs the sequential path."""
    sm_sessions: SMSessions = "concurrent"
    """With several workers: `"concurrent"` skill-manager sessions merging under optimistic concurrency (fast),
    or `"ordered"` sessions one at a time in sample order (reproducible whatever `max_workers`)."""
    seed: int | None = None
    """Shuffles each epoch's order deterministically when set; `None` keeps the given order."""
    checkpoint_dir: Path | None = None
    """Journal (`samples.jsonl`, a line per sample) and skillbook snapshots; resumes when a journal is there."""
    deduplicate: bool = False
    """Run the trainer's `deduplicator` step after every skill-manager session."""
    snapshot_every: int | None = None
    """Snapshot the skillbook every this many samples; `None`: when the last snapshot is older than 20x its
    cost (every sample for a small skillbook, rarely for 5,000 skills). The journal makes every sample resumable
    either way."""
    retry_failed: bool = True
    """On resume, run again the recorded samples that failed without applying an operation."""
    abort_after: int = 3
    """Stop after this many samples in a row failed with the same error no retry fixes; 0 never stops."""

    def __post_init__(self) -> None:
        for name in ("epochs", "max_workers"):
            if getattr(self, name) < 1:
                raise ValueError(f"TrainingConfig.{name} must be at least 1, got {getattr(self, name)}")
        if self.abort_after < 0:
            raise ValueError(f"TrainingConfig.abort_after must be 0 or more, got {self.abort_after}")
        if self.sm_sessions not in ("concurrent", "ordered"):
            raise ValueError(f"TrainingConfig.sm_sessions must be 'concurrent' or 'ordered', got {self.sm_sessions!r}")
        if self.snapshot_every is not None and self.snapshot_every < 1:
            raise ValueError(f"TrainingConfig.snapshot_every must be at least 1 or None, got {self.snapshot_every}")


@dataclass(frozen=True)
class _Reflected:
    """A sample after its concurrent phase: the context so far, or the error that ended it."""

    item: PlannedSample
    ctx: StepContext
    error: Exception | None
    seconds: float


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


class Trainer:
    """Runs the ACE learning loop over traces; see the module docstring for the concurrency and checkpoint design."""

    def __init__(
        self,
        *,
        reflector: Reflector,
        skill_manager: SkillManager,
        config: TrainingConfig,
        extra_steps: Sequence[Step] = (),
        deduplicator: DeduplicateStep | None = None,
    ) -> None:
        """Build the pipeline: reflect, then (serialised) update, deduplicate when configured, `extra_steps`.

        Raises:
            ValueError: `config.deduplicate` without a `deduplicator`, or steps whose requirements are unmet.
        """
        if config.deduplicate and deduplicator is None:
            raise ValueError(
                "TrainingConfig(deduplicate=True) needs a judge: pass deduplicator=DeduplicateStep(model) to Trainer"
            )
        self.config = config
        serial: list[Step] = [UpdateStep(skill_manager)]
        if config.deduplicate and deduplicator is not None:
            serial.append(deduplicator)
        serial.extend(extra_steps)
        reflect = ReflectStep(reflector)
        Pipeline([reflect, *serial])  # checks the whole order once
        self._reflect = Pipeline([reflect])
        self._serial = Pipeline(serial, initial=INITIAL_FIELDS | reflect.provides)

    def run(
        self, traces: Sequence[Mapping[str, Any]], skillbook: Skillbook, *, on_sample: OnSample | None = None
    ) -> TrainingResult:
        """Blocking `run_async`; inside a running event loop use `await run_async(...)`."""
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return asyncio.run(self.run_async(traces, skillbook, on_sample=on_sample))
        raise RuntimeError("Trainer.run was called inside a running event loop: use `await trainer.run_async(...)`")

    async def run_async(
        self, traces: Sequence[Mapping[str, Any]], skillbook: Skillbook, *, on_sample: OnSample | None = None
    ) -> TrainingResult:
        """Train `skillbook` on `traces` for `config.epochs` epochs.

        The skillbook is mutated in place, except when resuming: then the checkpoint's skillbook is used and
        returned instead (`TrainingResult.skillbook`). `on_sample` is called with each committed sample, in
        commit order (an exception it raises aborts the run, after that sample was checkpointed). Returns every
        sample, resumed ones included, in commit order.

        With a `checkpoint_dir`, the folder's lock is held for the whole run: another trainer or run on it is
        refused (`FolderBusyError`). A folder holding a skillbook but no journal is refused (`CheckpointError`):
        a fresh start would overwrite that skillbook.
        """
        folder = self.config.checkpoint_dir
        with folder_lock(Path(folder)) if folder is not None else contextlib.nullcontext():
            return await self._run(traces, skillbook, on_sample)

    async def _run(
        self, traces: Sequence[Mapping[str, Any]], skillbook: Skillbook, on_sample: OnSample | None
    ) -> TrainingResult:
        plan = plan_samples(traces, epochs=self.config.epochs, seed=self.config.seed)
        done: dict[int, SampleResult] = {}
        checkpoint: Checkpoint | None = None
        book = skillbook
        interrupted: list[SampleResult] = []
        if self.config.checkpoint_dir is not None:
            folder = Path(self.config.checkpoint_dir)
            loaded = load_checkpoint(folder)
            if loaded is not None:
                book, records = loaded
                done = match_records(records, plan, folder)
                start = journal_start(folder)
                interrupted = interrupted_samples(plan, done, book, book.operations_count if start is None else start)
            checkpoint = Checkpoint(folder, snapshot_every=self.config.snapshot_every)
            checkpoint.open(book, fresh=loaded is None)
        retried = retried_samples(plan, done) if self.config.retry_failed else {}
        for index in retried:
            del done[index]
        results = dict(done)
        journaled = SkillbookMark.of(book)
        watch = AbortWatch(self.config.abort_after)

        async def commit(result: SampleResult) -> None:
            # The line holds everything since the previous line: the sample's own edits, and in the concurrent
            # mode those of sessions still running. Sessions may be editing meanwhile: one consistent read.
            nonlocal journaled
            if checkpoint is not None:
                with book.locked():
                    delta = skillbook_delta(book, journaled)
                    journaled = SkillbookMark.of(book)
                await checkpoint.commit({**result.to_dict(), "checkpoint": delta}, book)
            results[result.index] = result
            if on_sample is not None:
                on_sample(result)
            watch.see(result)

        for result in interrupted:
            await commit(result)
        pending = [retried.get(p.index, p) for p in plan if p.index not in results]

        try:
            if self.config.max_workers == 1:
                await self._train_sequential(pending, book, commit)
            elif self.config.sm_sessions == "ordered":
                await self._train_parallel(pending, book, commit)
            else:
                await self._train_concurrent(pending, book, commit)
        except BaseException:
            if checkpoint is not None:
                checkpoint.abandon()
            raise
        if checkpoint is not None:
            await checkpoint.close(book)
        return TrainingResult(samples=[results[i] for i in sorted(results)], skillbook=book, resumed_samples=len(done))

    async def _train_sequential(self, pending: Sequence[PlannedSample], book: Skillbook, commit: _Commit) -> None:
        for item in pending:
            reflected = await self._reflect_phase(item, book)
            await self._serial_phase(reflected, book, commit)

    async def _train_parallel(self, pending: Sequence[PlannedSample], book: Skillbook, commit: _Commit) -> None:
        workers = self.config.max_workers
        reflecting = asyncio.Semaphore(workers)
        window = asyncio.Semaphore(2 * workers)
        ordered = _OrderedLock()

        async def one(ticket: int, item: PlannedSample) -> None:
            try:
                async with reflecting:
                    reflected = await self._reflect_phase(item, book)
                async with ordered.turn(ticket):
                    await self._serial_phase(reflected, book, commit)
            finally:
                window.release()

        try:
            async with asyncio.TaskGroup() as group:
                for ticket, item in enumerate(pending):
                    await window.acquire()
                    group.create_task(one(ticket, item))
        except BaseExceptionGroup as group_error:
            raise first_cause(group_error) from None

    async def _train_concurrent(self, pending: Sequence[PlannedSample], book: Skillbook, commit: _Commit) -> None:
        workers = self.config.max_workers
        slots = asyncio.Semaphore(workers)
        window = asyncio.Semaphore(2 * workers)
        previous: dict[str, asyncio.Event] = {}  # the last started sample of each trace: the next one waits for it
        committing = asyncio.Lock()

        async def one(item: PlannedSample, after: asyncio.Event | None, finished: asyncio.Event) -> None:
            try:
                if after is not None:
                    await after.wait()
                async with slots:
                    reflected = await self._reflect_phase(item, book)
                    await self._serial_phase(reflected, book, commit, lock=committing)
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
        ctx = StepContext(trace=item.trace, skillbook=book, epoch=item.epoch)
        try:
            return _Reflected(item, await self._reflect.run(ctx), None, time.perf_counter() - start)
        except Exception as e:
            if isinstance(e, ReflectorError):  # what the failed attempt cost still counts
                ctx = ctx.with_usage("reflector", e.usage)
            return _Reflected(item, ctx, e, time.perf_counter() - start)

    async def _serial_phase(
        self, reflected: _Reflected, book: Skillbook, commit: _Commit, *, lock: asyncio.Lock | None = None
    ) -> None:
        """Update (+ deduplicate, extra steps), then commit. `lock`: sessions run concurrently; only the commit
        is serialised, and the sample's operations are picked out of the shared audit log by its trace."""
        item, ctx, error = reflected.item, reflected.ctx, reflected.error
        start = time.perf_counter()
        mark = SkillbookMark.of(book)
        attrs: dict[str, AttributeInput] = {
            "ace.trace_uid": item.trace_uid,
            "ace.epoch": item.epoch,
            "ace.sample_index": item.index,
        }
        with ace_span("train.sample", attrs) as span:
            if error is None:
                try:
                    ctx = await self._serial.run(ctx)
                except Exception as e:
                    error = e
            message = _error_text(error) if error is not None else _incomplete(ctx)
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
                duration_s=reflected.seconds + time.perf_counter() - start,
                refusals=_refusals(ctx),
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


def _error_text(error: BaseException) -> str:
    return f"{type(error).__name__}: {error}"


def _incomplete(ctx: StepContext) -> str | None:
    """A skill-manager session that stopped early (budget, model retries) is reported, not hidden."""
    sm = ctx.sm_result
    if sm is not None and not sm.completed:
        return f"SkillManagerStopped: {sm.stop_reason or 'the session ended before the model finished'}"
    return None


def _refusals(ctx: StepContext) -> tuple[dict[str, str], ...]:
    """The skill-manager calls that were not applied, with the reasons the model was given."""
    sm = ctx.sm_result
    return () if sm is None else tuple({"tool": r.tool, "reason": r.reason} for r in sm.refusals)
