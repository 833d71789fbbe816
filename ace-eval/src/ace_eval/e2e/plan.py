"""The pipeline of an `ace-eval e2e` run: planned from the settings before anything is written, recorded in
`run.json`, compared on `--resume`, and built with the run's roles through `ace.steps.build_pipeline`."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from pydantic_ai.models import Model

from ace.embeddings.base import Embedder
from ace.pipeline import StepTiming
from ace.pipeline.phased import (
    DEFAULT_STEPS,
    PlannedStep,
    StepPipeline,
    StepRequest,
    build_pipeline,
    pipeline_differences,
    pipeline_requests,
    plan_pipeline,
)
from ace.pipeline.registry import StepConfigError, StepEnvironment, StepRegistry
from ace.redaction import Redactor
from ace.reflector.base import Reflector
from ace.skill_manager.manager import SkillManager
from ace_eval.e2e.config import E2ESettings
from ace_eval.run.folder import RunFolder, RunFolderError
from ace_eval.run.record import RunRecord

__all__ = ["E2E_STEPS", "plan_run_pipeline", "refuse_other_pipeline", "run_pipeline", "step_times"]

E2E_STEPS: tuple[str, ...] = (*DEFAULT_STEPS, "checkpoint")
"""The default pipeline of an e2e run: the library's, and the run's checkpoint in the run folder."""


def plan_run_pipeline(settings: E2ESettings) -> list[PlannedStep]:
    """The default steps, plus `settings.steps` (`--step`, `[e2e.steps]`), minus `settings.no_steps`, looked up
    and validated; raises `StepConfigError` / `PluginError` naming the step and the fix."""
    if "checkpoint" in settings.no_steps:
        raise StepConfigError(
            "an e2e run cannot leave out the step 'checkpoint': its samples.jsonl is the run's record (run.json, "
            "inspect, verify and --resume read it); configure it instead, e.g. --step checkpoint:snapshot_every=50"
        )
    if "review" in settings.steps:
        raise StepConfigError(
            "the step 'review' is added by --review --skillbook PATH (or [e2e] review = true), which also trains a "
            "fork of that skillbook: pass those instead of --step review"
        )
    requested = [StepRequest(name, options) for name, options in settings.steps.items()]
    if settings.review and settings.skillbook is not None:  # after `checkpoint`: it queues what was journaled
        requested.append(StepRequest("review", {"skillbook": str(settings.skillbook)}))
    without = (*settings.no_steps, *(() if settings.redact else ("redact",)))  # --no-redact: no redact step
    registry = StepRegistry.from_entry_points()
    requests = pipeline_requests(requested, without=without, defaults=E2E_STEPS, registry=registry)
    return plan_pipeline(requests, registry=registry)


def refuse_other_pipeline(folder: RunFolder, record: RunRecord, settings: E2ESettings) -> list[PlannedStep]:
    """Refuse to resume a run with a pipeline other than the one it recorded (steps, options, plugin versions);
    the planned pipeline when it is the same."""
    plan = plan_run_pipeline(settings)
    if record.pipeline is None:  # a run from before pipelines were recorded ran the default one
        return plan
    stored = [step.model_dump(mode="json") for step in record.pipeline.steps]
    now = [p.record() for p in plan]
    diffs = pipeline_differences(stored, now)
    if diffs:
        raise RunFolderError(
            f"cannot resume {folder.path} with a different pipeline ({'; '.join(diffs)}): resume with the run's "
            "steps (pass no --step / --no-step / --dedup, and the same plugin versions installed), or start a new run"
        )
    return plan


def run_pipeline(
    settings: E2ESettings,
    output_dir: Path,
    *,
    reflector: Reflector,
    skill_manager: SkillManager,
    embedder: Embedder,
    redactor: Redactor | None = None,
    models: Mapping[str, Model] | None = None,
) -> StepPipeline:
    """Build the run's pipeline: files of end-of-run steps go in `output_dir`; `redactor` (the run's, with its
    `[redaction]` patterns) is the `redact` step's; `models` are the steps' models by role (`dedup`: the judge
    the preflight checked, or a scripted one), which win over the model strings of the steps' options."""
    env = StepEnvironment(
        output_dir=output_dir,
        reflector=reflector,
        skill_manager=skill_manager,
        embedder=embedder,
        redactor=redactor,
        models=dict(models or {}),
        default_model=settings.skill_manager_model,
    )
    return build_pipeline(plan_run_pipeline(settings), env)


def step_times(pipeline: StepPipeline) -> dict[str, StepTiming]:
    """Calls and seconds of every step (copies, seconds rounded), for the segment in `run.json`."""
    return {name: StepTiming(t.calls, round(t.seconds, 6)) for name, t in pipeline.timings().items()}
