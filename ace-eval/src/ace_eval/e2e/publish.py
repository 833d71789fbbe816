"""`ace-eval e2e --publish STORE`: a finished run's skillbook into a store, through the gate when the run scored it.

The run's baseline (the agent without the learned skillbook) is the incumbent and its evaluation phase the
candidate: the phase `run.json` records as `benchmark.before`, i.e. `baseline/`, or the collected episodes
(`collection/`) of a benchmark that collects on the tasks it evaluates (`EpisodeFolders.collect_is_baseline`). Both
must cover the same tasks with the same trials and seeds, so the gate's paired comparison applies; a run whose two
phases do not is refused, naming the difference. A phase's scores
are its `scores.json` (a benchmark plugin's), the benchmark's own results file next to it, or the episodes'
trace collection (reward per trial). `--no-gate` publishes without the comparison, saying so in `version.json`.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

from ace.core.storage import atomic_write, bytes_writer
from ace.exceptions import UserError
from ace_eval.benchmarks.phases import SCORES_FILE
from ace_eval.benchmarks.score_files import read_score_file
from ace_eval.benchmarks.scores import BenchmarkScores, TrialScore
from ace_eval.collection import MANIFEST_FILE, read_collection
from ace_eval.gate import GATE_FILE, GateResult, compare, publish_promoted
from ace_eval.run.folder import RunFolder
from ace_eval.run.record import RunRecord
from ace_eval.store import ProducedBy, SkillbookStore, Version, is_store

__all__ = ["NO_GATE_REASON", "PublishOutcome", "check_publish", "phase_scores", "publish_run"]

RESULTS_FILE = "results.json"
"""The results file a benchmark that runs its own episodes leaves in a phase folder (read when it is a scored
file `ace_eval.benchmarks.score_files` knows)."""
NO_GATE_REASON = "published with --no-gate by ace-eval e2e: not compared with anything"


@dataclass(frozen=True, kw_only=True)
class PublishOutcome:
    """What `--publish` did: the gate's verdict (`None` with --no-gate) and the version made (`None`: held)."""

    result: GateResult | None
    version: Version | None
    previous: int | None = None
    """The store's current version before (`None`: none yet); the gate compared the run with its own baseline, not
    with it."""


def _from_collection(phase: Path) -> BenchmarkScores:
    manifest, traces = read_collection(phase)
    tasks: dict[str, list[TrialScore]] = defaultdict(list)
    for trace in traces:
        error = trace.metadata.get("error")
        trial = TrialScore(reward=0.0, success=False, error=str(error)) if error else TrialScore.of(trace.reward or 0.0)
        tasks[str(trace.task_id)].append(trial)
    most = max((len(t) for t in tasks.values()), default=1)
    return BenchmarkScores(benchmark=manifest.benchmark or manifest.source_system, tasks=dict(tasks), num_trials=most)


def _phase(phase: Path) -> BenchmarkScores | None:
    if (phase / SCORES_FILE).is_file():
        return read_score_file(phase / SCORES_FILE, "scores")
    if (phase / RESULTS_FILE).is_file():
        return read_score_file(phase / RESULTS_FILE)  # a benchmark's own results file, format sniffed
    if (phase / MANIFEST_FILE).is_file():
        return _from_collection(phase)
    return None


def _phase_folders(folder: RunFolder, record: RunRecord) -> tuple[Path, Path]:
    """The folders of the run's baseline and evaluation phases, as `run.json` records them (`benchmark.before` is
    the collection phase of a benchmark whose collected episodes are the baseline); `baseline/` and `evaluation/`
    in a folder that records no phase folders."""
    phases = record.benchmark
    before = phases.before.path if phases is not None and phases.before is not None else None
    after = phases.after.path if phases is not None and phases.after is not None else None
    return (folder.path / before if before else folder.baseline), (folder.path / after if after else folder.evaluation)


def phase_scores(folder: RunFolder) -> tuple[BenchmarkScores, BenchmarkScores] | None:
    """The run's baseline and evaluation scores, or `None` when it did not score both."""
    before, after = (_phase(path) for path in _phase_folders(folder, folder.read_record()))
    return (before, after) if before is not None and after is not None else None


def _unpaired(baseline: BenchmarkScores, candidate: BenchmarkScores) -> str | None:
    """How the two phases' episodes differ in tasks or trials per task (`None`: paired)."""
    trials = {task: len(t) for task, t in baseline.tasks.items()}
    other = {task: len(t) for task, t in candidate.tasks.items()}
    if trials == other:
        return None
    only = sorted(set(trials) - set(other)), sorted(set(other) - set(trials))
    uneven = sorted(t for t in set(trials) & set(other) if trials[t] != other[t])
    parts = [f"only the baseline has task(s) {', '.join(only[0][:5])}" if only[0] else "",
             f"only the evaluation has task(s) {', '.join(only[1][:5])}" if only[1] else "",
             ", ".join(f"task {t}: {trials[t]} trial(s) before, {other[t]} after" for t in uneven[:5])]  # fmt: skip
    return "; ".join(p for p in parts if p)


def _refuse_unpaired(
    folder: RunFolder, record: RunRecord, baseline: BenchmarkScores, candidate: BenchmarkScores
) -> None:
    """Refuse a run whose baseline and evaluation are not the same tasks x trials, naming the difference and the
    command that scores both on the same ones."""
    why = _unpaired(baseline, candidate)
    if why is None:
        return
    before, after = (path.relative_to(folder.path) for path in _phase_folders(folder, record))
    tasks = ",".join(candidate.tasks)
    raise UserError(
        f"{folder.path}: its baseline ({before}/) and its evaluation ({after}/) did not run the same episodes "
        f"({why}), so the gate cannot pair them: score both on the same tasks with `ace-eval gate run --candidate "
        f"{folder.path} --incumbent none --benchmark {candidate.benchmark} --tasks {tasks} --num-trials "
        f"{candidate.num_trials} --publish STORE`, or publish it ungated with --no-gate"
    )


def check_publish(store_path: Path | None) -> None:
    """Refuse, before the run writes anything, a --publish target that is not a store (a missing one is made)."""
    if store_path is not None and store_path.exists() and not is_store(store_path):
        raise UserError(f"--publish {store_path} exists but is not a skillbook store: pass a store or a new folder")


def publish_run(
    run_dir: Path,
    store_path: Path,
    *,
    gate: bool = True,
    command: str | None = None,
    alpha: float = 0.05,
    min_effect: float = 0.0,
    seed: int = 0,
) -> PublishOutcome:
    """Publish the run's skillbook to the store at `store_path` (created if missing): through the gate (the run's
    baseline against its evaluation, the verdict kept in the run folder's `gate.json`), or ungated with `gate=False`.

    Raises:
        UserError: the run did not score its skillbook against a baseline (and `gate` is true).
    """
    folder = RunFolder.open(run_dir)
    by = ProducedBy(kind="run", command=command)
    previous = SkillbookStore(store_path).current_number() if is_store(store_path) else None
    if not gate:
        store = SkillbookStore.open_or_create(store_path)
        return PublishOutcome(
            result=None, version=store.publish(run_dir, produced_by=by, ungated_reason=NO_GATE_REASON)
        )
    pair = phase_scores(folder)
    if pair is None:
        raise UserError(
            f"{run_dir} did not score its skillbook against a baseline, so the gate has nothing to compare: run the "
            "benchmark (drop --no-benchmark), or publish it ungated with --no-gate"
        )
    baseline, candidate = pair
    record = folder.read_record()
    _refuse_unpaired(folder, record, baseline, candidate)
    before = _phase_folders(folder, record)[0].name
    label = "none (the run's baseline)" if before == folder.baseline.name else f"none (the run's baseline: {before}/)"
    result = compare(
        baseline.model_copy(update={"skillbook": baseline.skillbook or label}),
        candidate.model_copy(update={"skillbook": candidate.skillbook or str(folder.skillbook)}),
        alpha=alpha,
        min_effect=min_effect,
        seed=seed,
    )
    atomic_write(folder.path / GATE_FILE, bytes_writer((result.model_dump_json(indent=1) + "\n").encode("utf-8")))
    if result.decision != "promote":
        return PublishOutcome(result=result, version=None, previous=previous)
    store = SkillbookStore.open_or_create(store_path)
    version = publish_promoted(store, run_dir, result, produced_by=by)
    return PublishOutcome(result=result, version=version, previous=previous)
