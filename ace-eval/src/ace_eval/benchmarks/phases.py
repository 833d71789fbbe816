"""A benchmark's phases in an e2e run folder, through the `Benchmark` protocol only: collect the learn split into
`collection/`, score the evaluation split without the skillbook (`baseline/`), with it (`evaluation/`) and with its
quarantined skills back (`evaluation_with_quarantined/`), each phase's scores in its folder's `scores.json`.

A phase whose `scores.json` exists is done: a resume scores only the phases it is missing.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path

from ace.core.effectiveness import with_quarantined_released
from ace.core.skillbook import Skillbook
from ace_eval.benchmarks._protocol import Benchmark, BenchmarkEnv
from ace_eval.benchmarks.scores import BenchmarkScores, PassHatK, read_scores, write_scores
from ace_eval.benchmarks.table import format_table
from ace_eval.collection import MANIFEST_FILE
from ace_eval.run.folder import RunFolder
from ace_eval.run.phases import BenchmarkRecord, PhaseRecord, TaskResult

__all__ = ["SCORES_FILE", "collect_phase", "evaluate_phases", "scores_record", "scores_table"]

SCORES_FILE = "scores.json"


async def collect_phase(benchmark: Benchmark, env: BenchmarkEnv, folder: RunFolder, *, num_trials: int) -> None:
    """The learn split's traces into the run's `collection/` (once: a resume after it keeps it)."""
    if (folder.collection / MANIFEST_FILE).is_file():
        return
    await asyncio.to_thread(
        benchmark.collect,
        env,
        skillbook=None,
        task_ids=list(benchmark.tasks("learn")),
        num_trials=num_trials,
        directory=folder.collection,
    )


async def evaluate_phases(
    benchmark: Benchmark,
    env: BenchmarkEnv,
    folder: RunFolder,
    skillbook: Skillbook,
    *,
    num_trials: int,
    timed: Callable[[str], AbstractContextManager[None]],
) -> None:
    """The evaluation split without the skillbook, with it, and with its quarantined skills back (if any), each
    timed as its phase; the same seeds (the benchmark's) for every phase, so the phases are paired."""
    phases: list[tuple[str, Path, Skillbook | None]] = [
        ("baseline", folder.baseline, None),
        ("evaluate", folder.evaluation, skillbook),
    ]
    unquarantined = with_quarantined_released(skillbook)
    if unquarantined is not None:
        phases.append(("evaluate_with_quarantined", folder.evaluation_with_quarantined, unquarantined))
    task_ids = list(benchmark.tasks("evaluate"))
    for phase, directory, book in phases:
        if (directory / SCORES_FILE).is_file():
            continue
        with timed(phase):
            scores = await asyncio.to_thread(
                benchmark.evaluate,
                env,
                skillbook=book,
                task_ids=task_ids,
                num_trials=num_trials,
                seeds=None,
                directory=directory,
            )
            directory.mkdir(parents=True, exist_ok=True)
            write_scores(directory / SCORES_FILE, scores)


def _phase_record(name: str, scores: BenchmarkScores, path: Path, root: Path) -> PhaseRecord:
    rows = scores.pass_hat_ks()
    trials = [t for task in scores.tasks.values() for t in task]
    errors = sum(1 for t in trials if t.error is not None)
    scored = [t.reward for t in trials if t.error is None]
    return PhaseRecord(
        name=name,
        benchmark=scores.benchmark,
        task_ids=list(scores.tasks),
        num_trials=scores.num_trials,
        path=str(path.parent.relative_to(root)),
        results=str(path.relative_to(root)),
        episodes=len(trials),
        tasks=len(scores.tasks),
        scored=len(scored),
        errors=errors,
        mean_reward=sum(scored) / len(scored) if scored else None,
        pass_hat_k=[row.value for row in rows],
        pass_hat_k_95=[(row.low, row.high) for row in rows],
        task_results=[
            TaskResult(task_id=task, rewards=[None if t.error is not None else t.reward for t in trials])
            for task, trials in scores.tasks.items()
        ],
    )


def scores_record(folder: RunFolder) -> BenchmarkRecord | None:
    """`run.json`'s `benchmark` from the phases' `scores.json`: pass^k with 95 % intervals before / after and each
    task's rewards (`None` before any phase was scored)."""
    phases = {
        "baseline": folder.baseline,
        "evaluate": folder.evaluation,
        "evaluate_with_quarantined": folder.evaluation_with_quarantined,
    }
    return BenchmarkRecord.of(
        {
            name: _phase_record(name, read_scores(path / SCORES_FILE), path / SCORES_FILE, folder.path)
            for name, path in phases.items()
            if (path / SCORES_FILE).is_file()
        },
        collect_is_before=False,
    )


def scores_table(benchmark: BenchmarkRecord | None) -> str | None:
    """pass^k baseline -> with the skillbook, each with its 95 % interval, from `run.json`'s `benchmark` (`None`
    when the benchmark recorded no intervals)."""
    if benchmark is None or benchmark.before is None or not benchmark.before.pass_hat_k_95:
        return None

    def rows(phase: PhaseRecord | None) -> list[PassHatK]:
        if phase is None or not phase.pass_hat_k_95:
            return []
        return [
            PassHatK(k, value, *interval)
            for k, value, interval in zip(phase.ks, phase.pass_hat_k, phase.pass_hat_k_95, strict=False)
            if value is not None and interval is not None
        ]

    after = rows(benchmark.after)
    return format_table(rows(benchmark.before), after or None)
