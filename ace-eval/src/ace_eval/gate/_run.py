"""`gate run`: score an incumbent and a candidate skillbook on the same tasks and seeds through the `Benchmark`
protocol, compare them, and publish the candidate to a store only when the gate promotes it."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ace.core.skillbook import Skillbook
from ace.core.storage import atomic_write, bytes_writer
from ace.exceptions import UserError
from ace_eval.benchmarks import Benchmark, BenchmarkEnv, BenchmarkScores
from ace_eval.benchmarks.phases import episode_progress
from ace_eval.benchmarks.scores import read_scores, write_scores
from ace_eval.gate._compare import compare
from ace_eval.gate._result import GateResult
from ace_eval.run.folder import RUN_JSON, RunFolder
from ace_eval.store import ProducedBy, SkillbookStore, Version, is_store

__all__ = [
    "GATE_FILE",
    "PLAN_FILE",
    "GateRun",
    "Side",
    "candidate_side",
    "incumbent_side",
    "publish_promoted",
    "run_gate",
]

GATE_FILE = "gate.json"
PLAN_FILE = "plan.json"
_SCORES = "scores.json"


@dataclass(frozen=True, kw_only=True)
class Side:
    """A skillbook the gate scores: its file (`None`: the agent without one) and how the result names it."""

    path: Path | None
    label: str

    def load(self) -> Skillbook | None:
        return Skillbook.load_from_file(self.path) if self.path is not None else None


def candidate_side(spec: Path) -> Side:
    """`--candidate SKILLBOOK|RUN_DIR` as a skillbook file.

    Raises:
        UserError: neither a skillbook file nor a run folder that published one.
    """
    if spec.is_dir():
        if not (spec / RUN_JSON).is_file():
            raise UserError(
                f"--candidate {spec} is a folder but not a run folder (no {RUN_JSON}): pass a skillbook.json"
            )
        book = RunFolder.open(spec).skillbook
        if not book.is_file():
            raise UserError(
                f"--candidate {spec} has published no skillbook yet: resume the run or pass a skillbook.json"
            )
        return Side(path=book, label=str(book))
    if not spec.is_file():
        raise UserError(f"--candidate {spec}: no such file or folder; pass a skillbook.json or a run folder")
    return Side(path=spec, label=str(spec))


def incumbent_side(spec: str) -> Side:
    """`--incumbent STORE|SKILLBOOK|none`: a store's current version, a skillbook file, or the agent without one
    (also a store with no version yet).

    Raises:
        UserError: the path is neither.
    """
    if spec == "none":
        return Side(path=None, label="none")
    path = Path(spec)
    if is_store(path):
        current = SkillbookStore(path).current()
        if current is None:
            return Side(path=None, label=f"none ({path} has no version yet)")
        return Side(path=current.skillbook_path, label=f"{path} version {current.number}")
    if path.is_file():
        return Side(path=path, label=str(path))
    raise UserError(f"--incumbent {spec}: not a store, a skillbook file, or `none`; pass one of them")


@dataclass(frozen=True, kw_only=True)
class GateRun:
    """Both sides' scores and the verdict, as written in `directory`."""

    result: GateResult
    baseline: BenchmarkScores
    candidate: BenchmarkScores
    directory: Path


def _score(
    benchmark: Benchmark,
    env: BenchmarkEnv,
    side: Side,
    *,
    task_ids: Sequence[str],
    num_trials: int,
    seeds: Sequence[int] | None,
    directory: Path,
) -> BenchmarkScores:
    """The side's scores: from `directory/scores.json` when a previous run left them (a resume), else scored."""
    path = directory / _SCORES
    if path.is_file():
        return read_scores(path)
    with episode_progress(benchmark, env, directory.name, len(task_ids) * num_trials) as shown:
        scores = benchmark.evaluate(
            shown,
            skillbook=side.load(),
            task_ids=list(task_ids),
            num_trials=num_trials,
            seeds=seeds,
            directory=directory,
        )
    scores = scores.model_copy(update={"skillbook": side.label})
    directory.mkdir(parents=True, exist_ok=True)
    write_scores(path, scores)
    return scores


def run_gate(
    benchmark: Benchmark,
    env: BenchmarkEnv,
    *,
    incumbent: Side,
    candidate: Side,
    task_ids: Sequence[str],
    num_trials: int,
    directory: Path,
    alpha: float = 0.05,
    min_effect: float = 0.0,
    seed: int = 0,
) -> GateRun:
    """Score the incumbent (`baseline/`), then the candidate on the seeds the incumbent's trials used
    (`candidate/`), compare, and write the verdict to `directory/gate.json`.

    A `directory` that holds a run of the same plan (benchmark, sides, tasks, trials) resumes it: a side already
    scored is read back. Another plan's folder is refused before anything is scored.
    """
    plan = {
        "benchmark": benchmark.name,
        "incumbent": incumbent.label,
        "candidate": candidate.label,
        "tasks": list(task_ids),
        "num_trials": num_trials,
    }
    _claim(directory, plan)
    baseline = _score(
        benchmark,
        env,
        incumbent,
        task_ids=task_ids,
        num_trials=num_trials,
        seeds=None,
        directory=directory / "baseline",
    )
    scored = _score(
        benchmark,
        env,
        candidate,
        task_ids=task_ids,
        num_trials=num_trials,
        seeds=baseline.seeds or None,
        directory=directory / "candidate",
    )
    result = compare(baseline, scored, alpha=alpha, min_effect=min_effect, seed=seed)
    atomic_write(directory / GATE_FILE, bytes_writer((result.model_dump_json(indent=1) + "\n").encode("utf-8")))
    return GateRun(result=result, baseline=baseline, candidate=scored, directory=directory)


def _claim(directory: Path, plan: dict[str, object]) -> None:
    path = directory / PLAN_FILE
    if path.is_file():
        if json.loads(path.read_text(encoding="utf-8")) != plan:
            raise UserError(f"{directory} holds a gate run of another comparison ({path}); pass another --output-dir")
        return
    if directory.is_dir() and any(directory.iterdir()):
        raise UserError(f"{directory} is not empty and holds no gate run; pass an empty or new --output-dir")
    atomic_write(path, bytes_writer((json.dumps(plan, indent=1) + "\n").encode("utf-8")))


def publish_promoted(
    store: SkillbookStore, source: Path, result: GateResult, *, produced_by: ProducedBy
) -> Version | None:
    """Publish `source` to `store` with the gate's evidence when `result` promotes it; `None` (nothing written)
    when it holds."""
    if result.decision != "promote":
        return None
    return store.publish(source, produced_by=produced_by, gate=json.loads(result.model_dump_json()))
