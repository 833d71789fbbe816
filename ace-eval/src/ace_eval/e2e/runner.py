"""The end-to-end run behind `ace-eval e2e`: collect traces (or replay a collection), train a skillbook, evaluate.

`run_e2e` starts a run, `resume_e2e` continues an interrupted one; both are usable without click. Each refuses
what it can before the first file is written, then runs one segment (`ace_eval.e2e.segment`). Scripted models
(tests) are passed as `models={"reflector": FunctionModel(...), ...}` and replace the model strings.
"""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ace.core.insight_source import utc_now
from ace.core.skillbook import Skillbook
from ace.llm import LocalModel
from ace.observability import find_logfire_target
from ace.pipeline.phased import PlannedStep
from ace_eval.benchmarks import Benchmark, BenchmarkConfigError, BenchmarkEnv, load_benchmark, resolved_options
from ace_eval.benchmarks.phases import episode_folders
from ace_eval.collection import (
    TRACES_FILE,
    CollectionError,
    CollectionManifest,
    Trace,
)
from ace_eval.e2e.config import ConfigError, E2ESettings
from ace_eval.e2e.plan import plan_run_pipeline, refuse_other_pipeline
from ace_eval.e2e.preflight import Checked, LLMRole, preflight, roles_used, step_models
from ace_eval.e2e.profiles import small_judge, with_profiles
from ace_eval.e2e.segment import E2EResult, RunInjections, SegmentRun
from ace_eval.e2e.traces_source import load_traces_source
from ace_eval.run.fields import versions
from ace_eval.run.folder import RunFolder, RunFolderError, check_resumable, config_differences
from ace_eval.run.record import PipelineRecord, ResolvedBenchmark, RunConfig, RunRecord, SkillbookOrigin
from ace_eval.run.redaction import install_run_collection, redaction_summary
from ace_eval.store import store_origin

__all__ = ["E2EResult", "LLMRole", "RunInjections", "plan_line", "resume_e2e", "run_e2e"]

_PER_INVOCATION = ("no_preflight", "retry_failed")
"""Settings a resume does not inherit from the run: each invocation says them again (or takes the default)."""


def _refuse_ungraded(traces: list[Trace]) -> None:
    """The grounded reflector on a collection with no grader's verdict at all would fail every sample: refuse it
    before writing (a collection graded in part runs; each trace without a verdict fails with the reason)."""
    from ace.reflector.verdict import read_verdict

    if traces and not any(read_verdict(t.model_dump()) is not None for t in traces):
        raise ConfigError(
            f"--reflector-type grounded reads the grader's verdict in each trace, and none of the {len(traces)} "
            "traces carries one (a `grader` comparison with the gold, or a benchmark's `metadata.reward_info`): use an "
            "LLM reflector (--reflector-type simple) for these traces"
        )


def run_e2e(settings: E2ESettings, *, injections: RunInjections | None = None) -> E2EResult:
    """Start a run in a new folder under `settings.output_dir`.

    A `--traces` collection is validated whole before anything is written; a malformed one raises
    `CollectionError` naming the file, line and field. Then every model and the embedder go through the
    preflight (`ace_eval.e2e.preflight`), which raises `PreflightError` before the folder is created.
    """
    settings, inj = with_profiles(_published_skillbook(settings), injections or RunInjections())
    traces_sha: str | None = None
    source: tuple[Path, CollectionManifest, list[Trace]] | None = None
    imported_from: str | None = None
    if settings.traces is not None:
        loaded = load_traces_source(settings.traces, settings.traces_format, settings.outcomes)
        if not loaded.traces:
            raise CollectionError(
                "holds no traces: there is nothing to learn from; import traces into it first "
                "(`ace-eval collection import`)",
                file=str(settings.traces / TRACES_FILE if settings.traces.is_dir() else settings.traces),
            )
        source = (settings.traces, loaded.manifest, loaded.traces[: settings.limit])
        traces_sha, imported_from = loaded.sha256, loaded.imported_from
    benchmark = _plan_benchmark(settings, source[2] if source is not None else None)
    resolved = _resolved(settings, benchmark)
    if resolved is not None:
        settings = settings.with_resolved(resolved.options)
    if settings.logfire:
        find_logfire_target()  # a broken .logfire/ credentials file is refused before the run folder exists
    if source is not None and settings.reflector_type == "grounded":
        _refuse_ungraded(source[2])
    plan = plan_run_pipeline(settings)  # unknown steps, bad options, broken plugins: refused before writing
    inj = _with_small_judge(settings, inj, plan)
    checked = _preflight(settings, inj, plan)
    print(plan_line(settings, source[2] if source else None, imported_from), file=sys.stderr)
    redactor = settings.redactor()
    folder = RunFolder.create(settings.output_dir)
    collection_redactions: dict[str, int] = {}
    if source is not None:
        collection_redactions = install_run_collection(folder, *source, redactor=redactor, limit=settings.limit)
    record = RunRecord(
        run_id=folder.run_id,
        status="running",
        created_at=utc_now(),
        versions=versions(),
        config=RunConfig.model_validate({**settings.to_dict(), "traces_sha256": traces_sha}),
        models={**settings.models, **{role: m.model for role, m in step_models(settings, plan).items()}},
        pipeline=PipelineRecord.model_validate({"steps": [p.record() for p in plan]}),
        redaction=redaction_summary(settings.redact, [], collection_redactions),
        skillbook_origin=SkillbookOrigin.model_validate(origin.to_dict())
        if (origin := store_origin(settings.skillbook))
        else None,
    )
    return SegmentRun(
        settings, folder, record, inj, checked, resumed=False, benchmark=benchmark, resolved=resolved
    ).execute()


def resume_e2e(
    run_dir: Path, overrides: Mapping[str, Any] | None = None, *, injections: RunInjections | None = None
) -> E2EResult:
    """Continue an interrupted run with its recorded settings: finished samples and episodes are not redone.

    `overrides` are settings given again on the command line; one that would change the results (a model,
    the epochs, the traces...) is refused with the difference named, the others (workers, verbosity,
    --logfire) apply to the rest of the run.
    """
    folder = RunFolder.open(run_dir)
    check_resumable(folder)  # the folder's own refusals come before the models' (checked again under the lock)
    record = folder.read_record()
    if record.status == "completed" and not record.errors:
        print(
            f"note: {folder.path} completed with no failed sample: there is nothing left to resume (its summary "
            "follows; start a new run to learn again)",
            file=sys.stderr,
        )
    stored = record.config.as_dict()
    requested = dict(overrides or {})
    if requested.get("traces") is not None:
        traces = Path(requested.pop("traces"))
        requested["traces_sha256"] = load_traces_source(traces, requested.get("traces_format")).sha256
    requested.pop("output_dir", None)
    requested.pop("config_file", None)
    if "steps" in requested:  # --step on a resume adds to the run's steps (and is then refused as a difference)
        requested["steps"] = {**(record.config.steps or {}), **requested["steps"]}
    if "no_steps" in requested:
        requested["no_steps"] = tuple(dict.fromkeys([*(record.config.no_steps or ()), *requested["no_steps"]]))
    diffs = config_differences(stored, {k: str(v) if isinstance(v, Path) else v for k, v in requested.items()})
    if diffs:
        raise RunFolderError(
            f"cannot resume {folder.path} with different settings ({'; '.join(diffs)}): resume with the run's "
            "settings (pass only --resume and e.g. --max-workers/--verbose), or start a new run"
        )
    stored = {k: v for k, v in stored.items() if k not in _PER_INVOCATION}
    merged = {k: v for k, v in {**stored, **requested}.items() if k != "traces_sha256"}
    try:
        settings = E2ESettings.from_dict(merged)
    except (TypeError, ValueError) as e:
        raise RunFolderError(f"{folder.run_json}: its config cannot be used ({e})") from None
    if settings.traces is not None and not folder.collection.is_dir():
        raise RunFolderError(f"{folder.path} has no collection/: the run stopped before it started; start a new run")
    plan = refuse_other_pipeline(folder, record, settings)
    settings = _keep_resolved(settings, record, requested)
    benchmark = _plan_benchmark(settings, None)
    settings, inj = with_profiles(settings, injections or RunInjections())
    inj = _with_small_judge(settings, inj, plan)
    checked = _preflight(settings, inj, plan)
    resolved = _resolved(settings, benchmark)
    run = SegmentRun(settings, folder, record, inj, checked, resumed=True, benchmark=benchmark, resolved=resolved)
    changed = {k: str(v) if isinstance(v, Path) else v for k, v in requested.items()}
    run.segment.overrides = {k: v for k, v in changed.items() if stored.get(k) != v}
    return run.execute()


def plan_line(settings: E2ESettings, traces: list[Trace] | None, imported_from: str | None) -> str:
    """One line saying what the run will do: replay or collect, and whether the benchmark evaluates."""
    if traces is None:
        what = f"collect traces with the {settings.benchmark} agent, learn a skillbook, evaluate it"
    else:
        origin = f" imported from {settings.traces} ({imported_from})" if imported_from else f" of {settings.traces}"
        what = f"replay {len(traces)} trace(s){origin}, learn a skillbook"
        if settings.no_benchmark:
            what += f" (no benchmark: {settings.source_of('no_benchmark')}; --benchmark evaluates the skillbook)"
        else:
            what += f", evaluate it on {settings.benchmark}"
    return f"Plan: {what}."


def _published_skillbook(settings: E2ESettings) -> E2ESettings:
    """`settings` with `--skillbook` as an absolute path (a resume finds it from anywhere), refused before anything
    is written when it is missing (outside a review run) or unreadable."""
    if settings.skillbook is None:
        return settings
    path = settings.skillbook.resolve()
    if path.is_file():
        Skillbook.load_from_file(path)  # a damaged or old-format file is refused now, not after the collection
    elif not settings.review:
        raise ConfigError(
            f"--skillbook {settings.skillbook}: no such file ({settings.source_of('skillbook')}); pass an existing "
            "skillbook to start from (only a review run may name one that does not exist yet)"
        )
    return dataclasses.replace(settings, skillbook=path)


def _plan_benchmark(settings: E2ESettings, replayed: list[Trace] | None) -> Benchmark | None:
    """The benchmark built from its options when its agent runs, its checks passed (missing data: a `ConfigError`)
    and its tasks resolved before any file is written: the splits, or the tasks of the `replayed` traces for a
    benchmark that evaluates those (`EpisodeFolders`; a trace of no task is refused). A bad option, task id or
    model: a `UserError`, exit 2."""
    if not settings.runs_agent:
        return None
    benchmark = load_benchmark(settings.benchmark, settings.benchmark_raw_options())
    try:
        benchmark.check(
            BenchmarkEnv(
                model_names=settings.models, max_workers=settings.max_workers, check_names=not settings.no_preflight
            )
        )
    except BenchmarkConfigError as e:
        raise ConfigError(str(e)) from None  # a setting of the run (its data folder, a model) to fix
    if settings.traces is None:
        benchmark.tasks("learn")
    if not settings.no_benchmark:
        if replayed is not None and (episodes := episode_folders(benchmark)) is not None:
            episodes.replayed_tasks(replayed)
        else:
            benchmark.tasks("evaluate")
    return benchmark


def _resolved(settings: E2ESettings, benchmark: Benchmark | None) -> ResolvedBenchmark | None:
    """The benchmark's options as it resolved them, for `run.json` (`None`: no agent runs)."""
    if benchmark is None:
        return None
    options = resolved_options(settings.benchmark, settings.benchmark_raw_options(), benchmark, settings.models)
    return ResolvedBenchmark.model_validate({"name": settings.benchmark, "options": options})


def _keep_resolved(settings: E2ESettings, record: RunRecord, requested: Mapping[str, Any]) -> E2ESettings:
    """`settings` whose benchmark options keep what the run resolved (`run.json`'s `resolved_benchmark`) where the
    benchmark would now resolve them otherwise (e.g. its data folder's environment variable changed) and this
    resume does not give them again (a flag, `--benchmark-option`); each kept one gets a note."""
    recorded = record.resolved_benchmark
    if recorded is None or not settings.runs_agent or recorded.name != settings.benchmark:
        return settings
    raw = settings.benchmark_raw_options()
    now = resolved_options(settings.benchmark, raw, load_benchmark(settings.benchmark, raw), settings.models)
    given = {*requested, *dict(requested.get("benchmark_options") or {})}
    kept = {k: v for k, v in recorded.options.items() if k in now and k not in given and now[k] != v}
    for key, value in kept.items():
        print(
            f"note: {settings.benchmark} resolved its option {key} to {value!r} when the run started and would now "
            f"resolve it to {now[key]!r} (the environment or the working folder changed): the resume keeps the "
            f"run's value (--benchmark-option {key}=VALUE changes it)",
            file=sys.stderr,
        )
    return dataclasses.replace(settings, benchmark_options={**kept, **settings.benchmark_options}) if kept else settings


def _with_small_judge(settings: E2ESettings, inj: RunInjections, plan: list[PlannedStep]) -> RunInjections:
    """`inj` with the `deduplicate` step's judge on the small profile when it runs on the embedded model."""
    judge = step_models(settings, plan).get("dedup")
    if judge is None or inj.dedup_model is not None or (small := small_judge(settings, judge.model)) is None:
        return inj
    return dataclasses.replace(inj, dedup_model=small)


def _preflight(settings: E2ESettings, inj: RunInjections, plan: list[PlannedStep]) -> Checked:
    """The preflight of the run's models and its steps' (`PreflightError` when one cannot work); its warnings go
    to stderr."""
    steps = step_models(settings, plan)
    injected_steps = {} if inj.dedup_model is None else {"dedup": inj.dedup_model}
    if (
        inj.embedder is None
        or any(role not in inj.models for role in roles_used(settings))
        or (set(steps) - set(injected_steps))
        or any(isinstance(m, LocalModel) for m in inj.models.values())  # the profile's: checked like the others
    ):
        print("Checking the run's models before starting (keys, model strings, installs) ...", file=sys.stderr)
    checked = preflight(
        settings, inj.models, inj.embedder, live=not settings.no_preflight, steps=steps, injected_steps=injected_steps
    )
    for warning in checked.warnings:
        print(f"preflight warning: {warning}", file=sys.stderr)
    if settings.verbose and checked.requests:
        print(f"preflight: {checked.requests} test request(s) sent", file=sys.stderr)
    return checked
