"""A benchmark's phases in an e2e run folder, through the `Benchmark` protocol only: collect the learn split into
`collection/`, score the evaluation split without the skillbook (`baseline/`), with it (`evaluation/`) and with its
quarantined skills back (`evaluation_with_quarantined/`), each phase's scores in its folder's `scores.json`.

A phase whose `scores.json` exists is done: a resume scores only the phases it is missing.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

from ace.core.effectiveness import with_quarantined_released
from ace.core.skillbook import Skillbook
from ace_eval.benchmarks._protocol import Benchmark, BenchmarkEnv
from ace_eval.benchmarks.scores import BenchmarkScores, PassHatK, read_scores, write_scores
from ace_eval.benchmarks.table import format_table
from ace_eval.collection import MANIFEST_FILE
from ace_eval.run.folder import RunFolder

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


def _phase_record(scores: BenchmarkScores, path: Path, root: Path) -> dict[str, Any]:
    rows = scores.pass_hat_ks()
    trials = [t for task in scores.tasks.values() for t in task]
    errors = sum(1 for t in trials if t.error is not None)
    costs = [t.cost for t in trials if t.cost is not None]
    return {
        "scores": str(path.relative_to(root)),
        "episodes": len(trials),
        "tasks": len(scores.tasks),
        "scored": len(trials) - errors,
        "errors": errors,
        "mean_reward": sum(t.reward for t in trials) / len(trials) if trials else None,
        "pass_hat_k": {str(row.k): row.value for row in rows},
        "pass_hat_k_95": {str(row.k): [row.low, row.high] for row in rows},
        "tokens": sum(t.tokens or 0 for t in trials),
        "cost_usd": sum(costs) if costs else None,
    }


def scores_record(folder: RunFolder) -> dict[str, Any] | None:
    """`run.json`'s `benchmark` from the phases' `scores.json`: pass^k with 95 % intervals before / after and each
    task's success rate before and after (`None` before any phase was scored)."""
    phases = {
        "before": folder.baseline,
        "after": folder.evaluation,
        "after_with_quarantined": folder.evaluation_with_quarantined,
    }
    scored = {name: read_scores(path / SCORES_FILE) for name, path in phases.items() if (path / SCORES_FILE).is_file()}
    if not scored:
        return None
    out: dict[str, Any] = {
        name: _phase_record(scores, phases[name] / SCORES_FILE, folder.path) for name, scores in scored.items()
    }
    out.setdefault("before", None)
    out.setdefault("after", None)
    if "before" in scored and "after" in scored:
        before, after = scored["before"].successes(), scored["after"].successes()
        out["task_deltas"] = [
            {"task_id": task, "baseline": _rate(before[task]), "with_ace": _rate(after.get(task, [])),
             "delta": _rate(after.get(task, [])) - _rate(before[task])}
            for task in before
        ]  # fmt: skip
    return out


def _rate(successes: list[bool]) -> float:
    return sum(successes) / len(successes) if successes else 0.0


def scores_table(record: Mapping[str, Any]) -> str | None:
    """pass^k baseline -> with the skillbook, each with its 95 % interval, from `run.json`'s `benchmark`."""
    benchmark = record.get("benchmark") or {}
    before = benchmark.get("before")
    if not before or "pass_hat_k_95" not in before:
        return None

    def rows(phase: Mapping[str, Any] | None) -> list[PassHatK]:
        if not phase:
            return []
        return [
            PassHatK(int(k), float(v), *map(float, phase["pass_hat_k_95"][k])) for k, v in phase["pass_hat_k"].items()
        ]

    after = rows(benchmark.get("after"))
    return format_table(rows(before), after or None)
