"""One segment of an e2e run (its first invocation, or a resume): the phases collect, train, baseline and evaluate,
under the run folder's lock, with `run.json` saved after every phase and closed as completed, failed or interrupted.

`ace_eval.e2e.runner` decides and checks everything before the first file is written, then hands over a `SegmentRun`.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from pydantic_ai.models import Model
from pydantic_ai.settings import ModelSettings

from ace.core.insight_source import utc_now
from ace.core.skillbook import Skillbook
from ace.core.storage import remove_stale_temps
from ace.embeddings.base import Embedder
from ace.llm import infer_model
from ace.observability import AttributeInput, Observability, ace_span, configure_observability
from ace.skill_manager.deps import SMSettings
from ace.skill_manager.manager import SkillManager
from ace.skill_manager.prompts import SKILL_MANAGER_PROMPT
from ace_eval.benchmarks import Benchmark, BenchmarkEnv
from ace_eval.benchmarks.phases import collect_phase, evaluate_phases, scores_record
from ace_eval.collection import TRACES_FILE, Trace, read_collection
from ace_eval.e2e.config import E2ESettings
from ace_eval.e2e.fail_fast import refuse_nothing_learned, retries_on_resume
from ace_eval.e2e.plan import refuse_other_pipeline, run_pipeline, step_times
from ace_eval.e2e.preflight import Checked, LLMRole
from ace_eval.e2e.sample_text import sample_line
from ace_eval.e2e.training import SampleResult, Trainer, TrainingConfig
from ace_eval.run.fields import summarize_run
from ace_eval.run.folder import RunFolder, check_resumable, file_sha256
from ace_eval.run.lock import folder_lock
from ace_eval.run.progress import FirstErrors, Progress
from ace_eval.run.record import CollectionRecord, ReportsReview, ResolvedBenchmark, RunRecord
from ace_eval.run.redaction import redaction_summary
from ace_eval.run.samples import load_samples
from ace_eval.run.segments import Segment
from ace_eval.run.spans import release_observability

__all__ = ["E2EResult", "RunInjections", "SegmentRun"]


@dataclass(frozen=True, kw_only=True)
class RunInjections:
    """What a caller (a test, the demo) may hand the runner instead of building it from the settings."""

    models: Mapping[LLMRole, Model] = field(default_factory=dict[LLMRole, Model])
    """pydantic-ai models by role; they replace the model strings of those roles."""
    dedup_model: Model | None = None
    """The `deduplicate` step's judge; it replaces `--dedup-model`."""
    embedder: Embedder | None = None
    sm_settings: SMSettings | None = None
    sm_instructions: str | None = None
    """The skill manager's system prompt (`None`: `SKILL_MANAGER_PROMPT`)."""
    sm_model_settings: ModelSettings | None = None
    """The skill manager's model settings (max tokens...) for every request."""
    reflector_options: Mapping[str, Any] = field(default_factory=dict[str, Any])
    """Extra keyword arguments for `make_reflector` (budgets, config)."""
    on_sample: Callable[[SampleResult], None] | None = None
    """Called after each finished sample (after the progress bar)."""
    show_progress: bool | None = None
    """Show the bar (`None`: only on a terminal)."""


@dataclass(frozen=True, kw_only=True)
class E2EResult:
    """A finished run: its folder and the `run.json` it wrote."""

    folder: RunFolder
    record: RunRecord
    skillbook: Skillbook
    observability: Observability | None = None
    """What the run's spans did (sent to Logfire or not, the local file), for the closing summary."""


def _start_skillbook(settings: E2ESettings) -> Skillbook:
    """What training starts from: a copy of `--skillbook` (a review run's fork of the published one), or empty."""
    path = settings.skillbook
    return Skillbook.load_from_file(path) if path is not None and path.is_file() else Skillbook()


class SegmentRun:
    """One segment of a run: the first invocation or a resume."""

    def __init__(
        self,
        settings: E2ESettings,
        folder: RunFolder,
        record: RunRecord,
        inj: RunInjections,
        checked: Checked,
        *,
        resumed: bool,
        benchmark: Benchmark | None = None,
        resolved: ResolvedBenchmark | None = None,
    ) -> None:
        self.settings = settings
        self.benchmark = benchmark
        self.resolved = resolved
        """The benchmark's options as resolved for this segment (`run.json`'s `resolved_benchmark`)."""
        self.folder = folder
        self.record = record
        self.inj = inj
        self.segment = Segment(resumed=resumed)
        assert checked.embedder is not None, "the preflight resolves the embedder"
        self.embedder = checked.embedder
        self.redactor = settings.redactor()
        self._models: dict[LLMRole, Model] = {**checked.models, **inj.models}
        self._step_models: dict[str, Model] = {
            **checked.step_models,
            **({} if inj.dedup_model is None else {"dedup": inj.dedup_model}),
        }
        self.resumed_samples: int | None = None

    def model(self, role: LLMRole) -> Model:
        """The model of a role: the injected one, else the one the preflight built from its model string."""
        if role not in self._models:  # not checked: the preflight covers every role the run uses
            self._models[role] = infer_model(self.settings.model_for(role), role=role)
        model = self._models[role]
        self.record.resolve_model(role, f"{model.system}:{model.model_name}")
        return model

    def execute(self) -> E2EResult:
        """Run this segment holding the folder's lock (a second process on the folder is refused, naming this one)."""
        with folder_lock(self.folder.path):
            if self.segment.resumed:
                check_resumable(self.folder)  # before anything is written
                # run.json as the last holder of the lock left it: a resume that finished while this one was in
                # its preflight added a segment that this one's earlier read does not have
                self.record = self.folder.read_record()
                refuse_other_pipeline(self.folder, self.record, self.settings)
            remove_stale_temps(self.folder.path)
            return self._execute()

    def _execute(self) -> E2EResult:
        self.record.start_segment(self.segment)
        if self.resolved is not None:
            self.record.resolve_benchmark(self.resolved)
        self._save()
        s = self.settings
        obs = configure_observability(
            s.logfire or s.logfire_content,
            include_content=s.logfire_content,
            local_spans_path=self.folder.spans,
            redact=self.redactor or False,
        )
        self._record_logfire(obs)
        try:
            with ace_span("ace.run", {**self._span_attributes, "ace.resumed": self.segment.resumed}):
                skillbook = asyncio.run(self._phases())
        except BaseException as e:
            interrupted = isinstance(e, KeyboardInterrupt)
            self.segment.status = "interrupted" if interrupted else "failed"
            self.segment.error = f"{type(e).__name__}: {e}"
            try:
                self._close(obs, status=self.segment.status)
            except Exception as close_error:  # keep the run's own error; say why run.json is stale
                e.add_note(f"run.json could not be updated: {type(close_error).__name__}: {close_error}")
            e.add_note(f"Run folder: {self.folder.path}; continue it with: ace-eval e2e --resume {self.folder.path}")
            raise
        self.segment.status = "completed"
        self._close(obs, status="completed")
        return E2EResult(folder=self.folder, record=self.record, skillbook=skillbook, observability=obs)

    @property
    def _span_attributes(self) -> dict[str, AttributeInput]:
        """The run's id and folder, on its `ace.run` span and each epoch and sample span (a Logfire search finds
        a run's samples by them)."""
        return {"ace.run_id": self.folder.run_id, "ace.run_dir": str(self.folder.path)}

    def _record_logfire(self, obs: Observability) -> None:
        """Record whether this segment's spans went to Logfire, with the project URL and the token's origin."""
        target = obs.target
        self.record.set_logfire(
            sent=obs.sending,
            project_url=target.project_url if target is not None else None,
            token_from=target.source if target is not None else None,
        )

    def _close(self, obs: Observability, *, status: str) -> None:
        obs.flush()
        release_observability(obs)
        self.segment.finished_at = utc_now()
        self.record.close(status, self.segment.error)
        self._update_summary()
        self._save()

    async def _phases(self) -> Skillbook:
        s = self.settings
        if s.traces is None:
            assert self.benchmark is not None, "the runner plans the benchmark of a run that collects"
            with self.timed("collect"):
                env = self._benchmark_env(retry_errored=s.retry_failed and not self.folder.samples.exists())
                collected = await collect_phase(self.benchmark, env, self.folder, num_trials=s.num_trials)
                if collected is not None and collected.redactions:
                    self.record.set_collection_redactions(dict(collected.redactions))
        manifest, traces = read_collection(self.folder.collection)
        self.record.set_collection(
            CollectionRecord(
                source=str(s.traces) if s.traces is not None else "benchmark",
                traces_used=len(traces),
                sha256=file_sha256(self.folder.collection / TRACES_FILE),
                manifest=manifest.model_dump(mode="json"),
            )
        )
        with self.timed("train"):
            skillbook = await self._train(traces)
        if not s.no_benchmark and self.benchmark is not None:
            await evaluate_phases(
                self.benchmark,
                self._benchmark_env(retry_errored=s.retry_failed),
                self.folder,
                skillbook,
                num_trials=s.num_trials,
                timed=self.timed,
                replayed=traces if s.traces is not None else None,
            )
        return skillbook

    def _benchmark_env(self, *, retry_errored: bool) -> BenchmarkEnv:
        """What the benchmark gets: the run's models of the roles it calls, embedder, redactor, workers (and
        whether a resumed phase runs its errored episodes again)."""
        roles = [r for r in self.settings.benchmark_roles() if r in ("agent", "user")]
        return BenchmarkEnv(
            models={role: self.model(role) for role in roles},  # type: ignore[arg-type]  # checked: agent or user
            model_names=self.settings.models,
            embedder=self.embedder,
            redactor=self.redactor,
            max_workers=self.settings.max_workers,
            abort_after=self.settings.abort_after,
            verbose=self.settings.verbose,
            show_progress=self.inj.show_progress,
            retry_errored=retry_errored,
        )

    async def _train(self, traces: list[Trace]) -> Skillbook:
        from ace.reflector.simple import make_reflector

        s = self.settings
        reflector_options = dict(self.inj.reflector_options)
        if s.reflector_type == "rr":
            reflector_options.setdefault("embedder", self.embedder)
        model = None if s.reflector_type == "grounded" else self.model("reflector")
        reflector = make_reflector(s.reflector_type, model, **reflector_options)
        manager = SkillManager(
            self.model("skill_manager"),
            embedder=self.embedder,
            settings=self.inj.sm_settings,
            instructions=self.inj.sm_instructions or SKILL_MANAGER_PROMPT,
            model_settings=self.inj.sm_model_settings,
        )
        pipeline = run_pipeline(
            s,
            self.folder.path,
            reflector=reflector,
            skill_manager=manager,
            embedder=self.embedder,
            redactor=self.redactor,
            models=self._step_models,
        )
        trainer = Trainer(
            pipeline=pipeline,
            config=TrainingConfig(
                epochs=s.epochs,
                max_workers=s.max_workers,
                sm_sessions=s.sm_sessions,
                seed=s.seed,
                retry_failed=s.retry_failed,
                abort_after=s.abort_after,
                span_attributes=self._span_attributes,
            ),
        )
        done = [d for d in load_samples(self.folder.samples) if not (s.retry_failed and retries_on_resume(d))]
        total = len(traces) * s.epochs
        progress = Progress(
            "train",
            total,
            initial=len(done),
            initial_errors=sum(1 for d in done if d.error is not None),
            verbose=s.verbose,
            show=self.inj.show_progress,
        )
        first_errors = FirstErrors(progress)

        def on_sample(sample: SampleResult) -> None:
            progress.advance(error=sample.error is not None, line=sample_line(sample))
            if sample.error is not None:
                first_errors.see(sample.error_kind or "other", f"{sample.trace_uid} epoch {sample.epoch}", sample.error)
            if self.inj.on_sample is not None:
                self.inj.on_sample(sample)

        try:
            with progress:
                start = _start_skillbook(s)
                result = await trainer.run_async(traces, start, on_sample=on_sample)
        finally:
            self.segment.steps = step_times(pipeline)
            reviewing = next((r for r in pipeline.phases["commit"] if isinstance(r, ReportsReview)), None)
            if reviewing is not None:
                self.record.set_review(reviewing.review_record())
        self.segment.step_usage = dict(result.phase_usage)
        self.resumed_samples = self.segment.resumed_samples = result.resumed_samples
        refuse_nothing_learned(result)
        return result.skillbook

    @contextmanager
    def timed(self, phase: str) -> Iterator[None]:
        """Add the phase's wall time to this segment and save `run.json` (also when the phase fails)."""
        started = time.monotonic()
        try:
            yield
        finally:
            self.segment.add_time(phase, time.monotonic() - started)
            self._save()

    def _update_summary(self) -> None:
        s = self.settings
        self.record.set_summary(
            summarize_run(
                self.folder,
                segments=self.record.segments,
                resumed_samples=self.resumed_samples,
                skillbook=self.folder.learned_skillbook(self.record),
            )
        )
        replayed = s.traces is not None
        self.record.set_benchmark(
            scores_record(self.folder, self.benchmark, replayed=replayed, num_trials=s.num_trials)
        )
        collection = self.record.redaction.collection if self.record.redaction is not None else None
        self.record.set_redaction(redaction_summary(s.redact, load_samples(self.folder.samples), collection))

    def _save(self) -> None:
        self.record.update_segment(self.segment)
        self.record.write(self.folder.run_json, redactor=self.redactor)
