"""pass^k over a tau2 results file with 95 % bootstrap intervals over tasks, per-task deltas, tokens per role.

Computed from the file's JSON on its own by `ace_eval.benchmarks.scores` (the one pass^k of the project), then
checked against tau2's own metric code (`tau2.metrics`).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ace.exceptions import RunError
from ace_eval.benchmarks import scores
from ace_eval.benchmarks.score_files import scores_from_tau2
from ace_eval.benchmarks.scores import BOOTSTRAP_RESAMPLES, PassHatK, pass_hat_ks
from ace_eval.benchmarks.table import format_table

__all__ = [
    "MetricsMismatchError",
    "PassHatK",
    "TaskDelta",
    "TaskOutcome",
    "check_against_tau2",
    "format_table",
    "pass_hat_k",
    "task_deltas",
    "task_outcomes",
    "usage_by_role",
]


class MetricsMismatchError(RunError):
    """Our pass^k differs from tau2's on the same file."""


@dataclass(frozen=True)
class TaskOutcome:
    """One task's trials and how many succeeded (reward 1.0)."""

    task_id: str
    trials: int
    successes: int

    def outcomes(self) -> list[bool]:
        """The task's trials as successes (pass^k depends on the counts alone, not on their order)."""
        return [True] * self.successes + [False] * (self.trials - self.successes)

    def pass_hat(self, k: int) -> float:
        """The chance that k trials drawn without replacement all succeed (tau2's `pass_hat_k`)."""
        return scores.pass_hat_k({self.task_id: self.outcomes()}, k)


@dataclass(frozen=True)
class TaskDelta:
    """One task's pass^1 without and with ACE."""

    task_id: str
    baseline: float
    candidate: float

    @property
    def delta(self) -> float:
        return self.candidate - self.baseline


def _simulations(results: str | os.PathLike[str] | Mapping[str, Any]) -> list[Mapping[str, Any]]:
    data = results if isinstance(results, Mapping) else json.loads(Path(results).read_text(encoding="utf-8"))
    sims: list[Mapping[str, Any]] = data["simulations"]
    return sims


def task_outcomes(results: str | os.PathLike[str] | Mapping[str, Any]) -> list[TaskOutcome]:
    """Per task (in first-seen order): trials and successes, a success being a reward within 1e-6 of 1."""
    data = results if isinstance(results, Mapping) else json.loads(Path(results).read_text(encoding="utf-8"))
    scores = scores_from_tau2(data, source="the results" if isinstance(results, Mapping) else str(results))
    return [TaskOutcome(task, len(trials), sum(trials)) for task, trials in scores.successes().items()]


def pass_hat_k(
    results: str | os.PathLike[str] | Mapping[str, Any] | Sequence[TaskOutcome],
    *,
    resamples: int = BOOTSTRAP_RESAMPLES,
    confidence: float = 0.95,
    seed: int = 0,
) -> list[PassHatK]:
    """pass^1..k (k up to the fewest trials any task has, as tau2 does), each with its bootstrap interval."""
    outcomes = task_outcomes(results) if isinstance(results, str | os.PathLike | Mapping) else list(results)
    successes = {outcome.task_id: outcome.outcomes() for outcome in outcomes}
    return pass_hat_ks(successes, resamples=resamples, confidence=confidence, seed=seed)


def task_deltas(
    baseline: str | os.PathLike[str] | Mapping[str, Any], candidate: str | os.PathLike[str] | Mapping[str, Any]
) -> list[TaskDelta]:
    """pass^1 per task in both runs (tasks of the baseline, in its order); a task missing from one counts 0."""
    before = {o.task_id: o.pass_hat(1) for o in task_outcomes(baseline)}
    after = {o.task_id: o.pass_hat(1) for o in task_outcomes(candidate)}
    ids = [*before, *(task_id for task_id in after if task_id not in before)]
    return [TaskDelta(task_id, before.get(task_id, 0.0), after.get(task_id, 0.0)) for task_id in ids]


def usage_by_role(results: str | os.PathLike[str] | Mapping[str, Any]) -> dict[str, dict[str, float]]:
    """Requests, prompt and completion tokens and cost of the agent and the user simulator, summed over episodes."""
    totals = {
        role: {"requests": 0.0, "prompt_tokens": 0.0, "completion_tokens": 0.0, "cost": 0.0}
        for role in ("agent", "user")
    }
    for sim in _simulations(results):
        for message in sim.get("messages") or []:
            role = {"assistant": "agent", "user": "user"}.get(message.get("role"))
            usage = message.get("usage") or {}
            if role is None:
                continue
            totals[role]["requests"] += 1 if message.get("usage") else 0
            totals[role]["prompt_tokens"] += usage.get("prompt_tokens") or 0
            totals[role]["completion_tokens"] += usage.get("completion_tokens") or 0
            totals[role]["cost"] += message.get("cost") or 0.0
    return totals


def check_against_tau2(results: str | os.PathLike[str]) -> dict[int, float]:
    """tau2's own pass^k on the file (`tau2.metrics.compute_metrics`); raises if ours differs. Returns tau2's."""
    from ace_eval.benchmarks.tau2._tau2 import Results, compute_metrics

    theirs = {int(k): float(v) for k, v in compute_metrics(Results.load(Path(results))).pass_hat_ks.items()}
    ours = {row.k: row.value for row in pass_hat_k(results, resamples=1)}
    if theirs.keys() != ours.keys() or any(abs(theirs[k] - ours[k]) > 1e-9 for k in ours):
        raise MetricsMismatchError(f"pass^k of {results} differs from tau2.metrics: ours {ours}, tau2's {theirs}")
    return theirs
