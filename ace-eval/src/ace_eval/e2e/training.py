"""Training: every trace of a collection through a `StepPipeline` (default reflect -> update), for N epochs.

The pipeline's phases map onto the loop: a sample's `before_reflect` / `reflect` / `after_reflect` steps run
concurrently across samples, its `update` / `after_update` steps form the skill-manager phase; after every
sample of an epoch committed, the `end_of_epoch` steps run (the loop waits at each epoch's end only when there
are such steps); after the last epoch and the checkpoint's final snapshot, the `end_of_run` steps.

`ace_eval.e2e.scheduling` runs the samples: one after the other, or with `max_workers > 1` either with
concurrent skill-manager sessions (`sm_sessions="concurrent"`, fast, merged under optimistic concurrency) or
with ordered ones (`"ordered"`, reproducible whatever `max_workers`); its docstring gives the reasons.

Resuming a concurrent run: a journal line carries everything the skillbook gained since the previous line, so
the edits of sessions still running ride along. After an interruption, a sample that has edits in the resumed
skillbook but no line of its own is recorded as interrupted (its edits kept, `SampleResult.error` says so) and is
not re-run, which would apply them twice; samples with no edit recorded are run again. In the concurrent mode two
samples of the same trace (different epochs) never run at the same time, which keeps that attribution exact.

Errors: an `Exception` in a sample (reflector, skill manager, a step) is recorded in `SampleResult.error`, with
the step it came from (its kind in `error_kind`), and in the run summary; the run goes on. Operations applied
before the failure stand and are listed. When `abort_after` samples in a row fail with the same error no retry
fixes (a wrong key, an unknown model: `ace_eval.e2e.fail_fast`), the run stops with `RunAborted` after
committing them. An exception in an `end_of_epoch` or `end_of_run` step stops the run with `RunStepError`: every
committed sample is in the checkpoint, and the resumed run runs that phase again (an epoch's end runs again
unless a sample of a later epoch was committed, which proves it ran). A `BaseException` that is not an
`Exception` (KeyboardInterrupt, cancellation, SystemExit) aborts the run: the committed samples are in the
checkpoint and the run resumes after them.

Checkpoint (`checkpoint_dir`): after every sample a journal line, every so often a skillbook snapshot; see
`ace_eval.run.checkpoint`. A `commit` step whose state derives from the journal (`CatchesUp`, e.g. `review`)
gets the starting skillbook and every recorded line before the first sample, so it catches up after a kill.
A run whose `checkpoint_dir` already holds `samples.jsonl` resumes: the skillbook is
rebuilt from the checkpoint (the `skillbook` argument is ignored) and recorded `(trace_uid, epoch)` samples are
not run again, except, with `retry_failed`, those that failed without applying an operation: they run again
and their new line (`attempt` + 1) supersedes the failed one (the journal's last line of a sample wins).
A failed sample that applied operations is kept as it is: running it again would apply them twice.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ace.core.journal import SkillbookMark, delta_since
from ace.core.skillbook import Skillbook
from ace.core.trace import TraceInput
from ace.exceptions import RunError
from ace.observability import AttributeInput
from ace.pipeline.context import StepContext
from ace.pipeline.phased import StepPipeline, StepRequest, build_pipeline
from ace.pipeline.pipeline import Pipeline, StepFailed
from ace.pipeline.registry import StepEnvironment
from ace.redaction import Redactor
from ace.reflector.simple import Reflector
from ace.skill_manager.manager import SkillManager
from ace.steps.redact import TRACE_ID_FIELDS, RedactStep
from ace_eval.e2e.samples_plan import (
    PlannedSample,
    interrupted_samples,
    match_records,
    plan_samples,
    retried_samples,
)
from ace_eval.e2e.scheduling import SampleScheduler
from ace_eval.e2e.span_tree import EpochSpans
from ace_eval.e2e.training_results import RoleUsage, SampleResult, SMSessions, TrainingResult
from ace_eval.reporting import describe_os_error
from ace_eval.run.abort import AbortWatch, RunAborted
from ace_eval.run.checkpoint import Checkpoint, CheckpointError, journal_start
from ace_eval.run.checkpoint_step import CatchesUp, CheckpointStep
from ace_eval.run.lock import folder_lock

__all__ = [
    "CheckpointError",
    "PlannedSample",
    "RoleUsage",
    "RunAborted",
    "RunStepError",
    "SMSessions",
    "SampleResult",
    "Trainer",
    "TrainingConfig",
    "TrainingResult",
    "plan_samples",
]

OnSample = Callable[[SampleResult], None]
_COMMIT_FIELDS = frozenset({"skillbook", "epoch", "checkpoint.line"})


class RunStepError(RunError):
    """An `end_of_epoch` or `end_of_run` step failed: the run stops; it resumes from its checkpoint."""


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
    """Journal (`samples.jsonl`, a line per sample) and skillbook snapshots; resumes when a journal is there.
    A shortcut for the registered `checkpoint` step (`--step checkpoint`), added when the pipeline has none."""
    redact: bool = True
    """With the `reflector` + `skill_manager` shortcut, run the `redact` step first. Whenever the pipeline has the
    `redact` step, the skillbook and the journal redact what they store too (the trained skillbook's `redactor`
    is the step's for the run); without it the raw text is kept everywhere."""
    snapshot_every: int | None = None
    """Snapshot the skillbook every this many samples; `None`: when the last snapshot is older than 20x its
    cost (every sample for a small skillbook, rarely for 5,000 skills). The journal makes every sample resumable
    either way."""
    retry_failed: bool = True
    """On resume, run again the recorded samples that failed without applying an operation."""
    abort_after: int = 3
    """Stop after this many samples in a row failed with the same error no retry fixes; 0 never stops."""
    span_attributes: Mapping[str, AttributeInput] = field(default_factory=dict[str, AttributeInput])
    """Added to every `train.epoch` and `train.sample` span: an e2e run puts its id and folder here, so a search
    in Logfire finds a run's samples."""

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


class Trainer:
    """Runs the ACE learning loop over traces; see the module docstring for the concurrency and checkpoint design."""

    def __init__(
        self,
        *,
        config: TrainingConfig,
        pipeline: StepPipeline | None = None,
        reflector: Reflector | None = None,
        skill_manager: SkillManager | None = None,
        redactor: Redactor | None = None,
    ) -> None:
        """Train with `pipeline` (`ace.steps.build_pipeline`), or with redact (unless `config.redact` is off) ->
        reflect -> update -> quarantine built from the registry for `reflector`, `skill_manager` and `redactor`
        (detectors and allow-list; default: the built-in ones), a shortcut for the same `build_pipeline` call.

        Raises:
            StepConfigError: neither a pipeline nor both roles.
        """
        if pipeline is None:
            env = StepEnvironment(reflector=reflector, skill_manager=skill_manager, redactor=redactor)
            names = (
                ("redact", "reflect", "update", "quarantine") if config.redact else ("reflect", "update", "quarantine")
            )
            pipeline = build_pipeline([StepRequest(name) for name in names], env)
        elif reflector is not None or skill_manager is not None or redactor is not None:
            raise ValueError(
                "pass either a pipeline or reflector + skill_manager (+ redactor) to Trainer, not both: a pipeline's "
                "redactor is its `redact` step's (StepEnvironment(redactor=...))"
            )
        self.config = config
        self.pipeline = pipeline
        self._commit: Pipeline = pipeline.commit
        self._scheduler = SampleScheduler(
            reflect=pipeline.reflect,
            update=pipeline.update,
            max_workers=config.max_workers,
            sm_sessions=config.sm_sessions,
        )
        if config.checkpoint_dir is not None and not any(isinstance(s, CheckpointStep) for s in self._commit.steps):
            # the same registered `checkpoint` step an e2e run has, built for this folder
            options = {} if config.snapshot_every is None else {"snapshot_every": config.snapshot_every}
            env = StepEnvironment(output_dir=Path(config.checkpoint_dir))
            added = build_pipeline([StepRequest("checkpoint", options)], env).commit
            self._commit = Pipeline([*self._commit.steps, *added.steps], initial=_COMMIT_FIELDS)
            self._commit.timings = {**pipeline.commit.timings, **added.timings}  # the pipeline's timings count on
        self._checkpoint_step = next((s for s in self._commit.steps if isinstance(s, CheckpointStep)), None)
        redact = next((s for s in pipeline.reflect.steps if isinstance(s, RedactStep)), None)
        self.redactor: Redactor | None = None if redact is None else redact.redactor
        """The pipeline's `redact` step's redactor: the skillbook and the journal lines redact with it too."""

    def run(
        self, traces: Sequence[TraceInput], skillbook: Skillbook, *, on_sample: OnSample | None = None
    ) -> TrainingResult:
        """Blocking `run_async`; inside a running event loop use `await run_async(...)`."""
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return asyncio.run(self.run_async(traces, skillbook, on_sample=on_sample))
        raise RuntimeError("Trainer.run was called inside a running event loop: use `await trainer.run_async(...)`")

    async def run_async(
        self, traces: Sequence[TraceInput], skillbook: Skillbook, *, on_sample: OnSample | None = None
    ) -> TrainingResult:
        """Train `skillbook` on `traces` (mappings in the collection format, or `TraceLike` objects such as
        `ace_eval.collection.Trace`, passed as they are) for `config.epochs` epochs.

        The skillbook is mutated in place, except when resuming: then the checkpoint's skillbook is used and
        returned instead (`TrainingResult.skillbook`). `on_sample` is called with each committed sample, in
        commit order (an exception it raises aborts the run, after that sample was checkpointed). Returns every
        sample, resumed ones included, in commit order.

        With a checkpoint (the `checkpoint` step or `checkpoint_dir`), the folder's lock is held for the whole
        run: another trainer or run on it is refused (`FolderBusyError`). A folder holding a skillbook but no
        journal is refused (`CheckpointError`): a fresh start would overwrite that skillbook.
        """
        step = self._checkpoint_step
        with folder_lock(step.folder) if step is not None else contextlib.nullcontext():
            return await self._run(traces, skillbook, on_sample)

    async def _run(
        self, traces: Sequence[TraceInput], skillbook: Skillbook, on_sample: OnSample | None
    ) -> TrainingResult:
        plan = plan_samples(traces, epochs=self.config.epochs, seed=self.config.seed)
        done: dict[int, SampleResult] = {}
        checkpoint: Checkpoint | None = None
        book = skillbook
        interrupted: list[SampleResult] = []
        records: list[dict[str, Any]] = []
        step = self._checkpoint_step
        if step is not None:
            folder = step.folder
            loaded = step.load()
            if loaded is not None:
                book, records = loaded
                done = match_records(records, plan, folder)
                start = journal_start(folder)
                interrupted = interrupted_samples(plan, done, book, book.operations_count if start is None else start)
            checkpoint = step.journal
            checkpoint.open(book, fresh=loaded is None)
        for catching_up in self._commit.steps:
            if isinstance(catching_up, CatchesUp):
                catching_up.resume(book, records)
        retried = retried_samples(plan, done) if self.config.retry_failed else {}
        for index in retried:
            del done[index]
        results = dict(done)
        journaled = SkillbookMark.of(book)
        book.redactor = self.redactor
        watch = AbortWatch(self.config.abort_after)

        async def commit(result: SampleResult) -> None:
            # The line holds everything since the previous line: the sample's own edits, and in the concurrent
            # mode those of sessions still running. Sessions may be editing meanwhile: one consistent read.
            nonlocal journaled
            if self._commit.steps:
                with book.locked():
                    delta = delta_since(book, journaled)
                    journaled = SkillbookMark.of(book)
                line = {**result.to_dict(), "checkpoint": delta}
                if self.redactor is not None:  # the second line: a reflection quoting a secret the step missed
                    line = self.redactor.redact_data(line, numbered=False, skip_keys=TRACE_ID_FIELDS)[0]
                ctx = StepContext(trace={}, skillbook=book, epoch=result.epoch).with_extra("checkpoint", "line", line)
                try:
                    await self._commit.run(ctx)
                except StepFailed as e:
                    raise e.cause from None  # a sample that cannot be committed stops the run
            results[result.index] = result
            if on_sample is not None:
                on_sample(result)
            watch.see(result)

        for result in interrupted:
            await commit(result)
        pending = [retried.get(p.index, p) for p in plan if p.index not in results]

        phase_usage: dict[str, RoleUsage] = {}
        by_epoch = bool(self.pipeline.end_of_epoch.steps)
        spans = EpochSpans(pending, attributes=self.config.span_attributes, hold=by_epoch)
        try:
            if not by_epoch:
                await self._scheduler.run(pending, book, commit, spans)
            else:
                ended = {e for e in range(self.config.epochs) if any(s.epoch > e for s in done.values())}
                for epoch in range(self.config.epochs):
                    await self._scheduler.run([p for p in pending if p.epoch == epoch], book, commit, spans)
                    if epoch not in ended:
                        with spans.epoch_end(epoch):
                            used = await self._run_phase(
                                "end_of_epoch", book, epoch, checkpointed=checkpoint is not None
                            )
                        _add_usage(phase_usage, used)
        except BaseException:
            if checkpoint is not None:
                checkpoint.abandon()
            raise
        finally:
            spans.close()
        if checkpoint is not None:
            await checkpoint.close(book)
        used = await self._run_phase("end_of_run", book, self.config.epochs - 1, checkpointed=checkpoint is not None)
        _add_usage(phase_usage, used)
        return TrainingResult(
            samples=[results[i] for i in sorted(results)],
            skillbook=book,
            resumed_samples=len(done),
            phase_usage=phase_usage,
        )

    async def _run_phase(self, phase: str, book: Skillbook, epoch: int, *, checkpointed: bool) -> Mapping[str, Any]:
        """The `end_of_epoch` / `end_of_run` steps; returns their model usage by role. A failure stops the run
        with a message naming the step."""
        pipeline = self.pipeline.end_of_epoch if phase == "end_of_epoch" else self.pipeline.end_of_run
        if not pipeline.steps:
            return {}
        try:
            return (await pipeline.run(StepContext(trace={}, skillbook=book, epoch=epoch))).usage
        except StepFailed as e:
            kept = (
                "every finished sample is checkpointed: fix the cause and resume the run (ace-eval e2e --resume "
                "RUN_DIR, or the same Trainer on the same checkpoint_dir) to run this phase again"
                if checkpointed
                else "the run has no checkpoint_dir, so it cannot be resumed"
            )
            error = e.cause
            if isinstance(error, OSError) and error.errno is not None:  # a real file-system failure
                cause = describe_os_error(error)
            else:
                cause = f"{type(error).__name__}: {error}"
            raise RunStepError(f"step {e.step!r} ({phase}, epoch {epoch}) failed: {cause}; {kept}") from e.cause


def _add_usage(total: dict[str, RoleUsage], used: Mapping[str, Any]) -> None:
    for role, usage in used.items():
        mine = RoleUsage.from_run_usage(usage)
        total[role] = total[role] + mine if role in total else mine
