"""Benchmark scores (per task, per trial) as a file, and the one pass^k with its interval every benchmark, the gate
and the report use.

pass^k is tau-bench's metric as tau2's code computes it: for a task with `n` trials of which `c` succeeded,
C(c, k) / C(n, k) is the chance that `k` trials drawn without replacement all succeed; pass^k is its mean over
tasks. A trial succeeds when its reward is 1 within 1e-6. The 95 % interval is a percentile bootstrap over tasks
(tasks resampled with replacement, seeded), so it says how much the score would move on another draw of tasks.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from ace import json_safe
from ace.core.storage import atomic_write, bytes_writer
from ace.exceptions import UserError
from ace_eval.run.usage import RoleUsage

__all__ = [
    "BOOTSTRAP_RESAMPLES",
    "SUCCESS_TOLERANCE",
    "BenchmarkScores",
    "PassHatK",
    "ScoresFileError",
    "TrialScore",
    "bootstrap_interval",
    "bootstrap_intervals",
    "pass_hat_k",
    "pass_hat_k_interval",
    "pass_hat_ks",
    "read_score_json",
    "read_scores",
    "success_of",
    "write_scores",
]

SUCCESS_TOLERANCE = 1e-6
"""A reward within this of 1 is a success (tau-bench's and tau2's `is_successful`)."""
BOOTSTRAP_RESAMPLES = 10_000
"""Resamples of the tasks behind every bootstrap interval."""


class ScoresFileError(UserError):
    """A scores file that cannot be read as `BenchmarkScores`; the message names the file and the fix."""


def success_of(reward: float) -> bool:
    """Whether `reward` counts as a success: at least 1, within 1e-6 (as tau-bench and tau2 count for pass^k)."""
    return reward >= 1.0 - SUCCESS_TOLERANCE


class TrialScore(BaseModel):
    """One trial of one task: its reward, whether it succeeded, what it used, and its error when it failed to run."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    reward: float
    """The benchmark's reward (tau-bench and tau2: 0 or 1; a user's scorer: any float)."""
    success: bool
    """Whether the trial counts as a success for pass^k (`success_of(reward)` unless the benchmark says otherwise)."""
    tokens: int | None = None
    """Tokens the agent used in the trial, when known."""
    cost: float | None = None
    """Cost in USD of the trial, when known."""
    seed: int | None = None
    """The trial's seed, when the benchmark seeds trials."""
    error: str | None = None
    """Why the trial did not run to the end (a failure in pass^k; the gate leaves it out with its pair), or `None`."""

    @classmethod
    def of(cls, reward: float, **fields: object) -> TrialScore:
        """A trial whose success is `success_of(reward)`."""
        return cls.model_validate({"reward": reward, "success": success_of(reward), **fields})


class BenchmarkScores(BaseModel):
    """A benchmark's scores of one agent (with one skillbook or none): every trial of every task.

    Written and read as JSON by `write_scores` / `read_scores` (what `ace-eval gate compare --format scores` reads).
    """

    model_config = ConfigDict(extra="forbid")

    benchmark: str
    """The benchmark's name (as `ace-eval benchmarks list` shows it)."""
    tasks: dict[str, list[TrialScore]]
    """task id -> its trials, in trial order."""
    num_trials: int = Field(ge=1)
    """Trials asked for per task (a task may hold fewer when some were not run)."""
    seeds: list[int] = Field(default_factory=list)
    """The seed of each trial number, when the benchmark seeds trials."""
    models: dict[str, str] = Field(default_factory=dict)
    """role (agent, user, ...) -> model string."""
    skillbook: str | None = None
    """The skillbook the agent had (a path or a store version), `None` for the agent without one."""
    usage: dict[str, RoleUsage] = Field(default_factory=dict[str, RoleUsage])
    """role (agent, user, ...) -> requests, tokens and cost over all trials, when the benchmark counts them."""
    results: str | None = None
    """The benchmark's own results file of the phase, relative to the phase's folder (e.g. `results.json`)."""

    @model_validator(mode="after")
    def _at_most_num_trials(self) -> BenchmarkScores:
        over = sorted(task for task, trials in self.tasks.items() if len(trials) > self.num_trials)
        if over:
            raise ValueError(f"task(s) {', '.join(over[:5])} hold more trials than num_trials={self.num_trials}")
        return self

    def rewards(self) -> dict[str, list[float]]:
        """task id -> the reward of each trial."""
        return {task: [t.reward for t in trials] for task, trials in self.tasks.items()}

    def successes(self) -> dict[str, list[bool]]:
        """task id -> whether each trial succeeded (a trial that errored did not)."""
        return {task: [t.success and t.error is None for t in trials] for task, trials in self.tasks.items()}

    def pass_hat_ks(self, *, seed: int = 0) -> list[PassHatK]:
        """pass^1..k with intervals (`pass_hat_ks` over `successes()`)."""
        return pass_hat_ks(self.successes(), seed=seed)


def read_scores(path: str | os.PathLike[str]) -> BenchmarkScores:
    """The `BenchmarkScores` in the JSON file at `path`.

    Raises:
        ScoresFileError: the file is missing, not JSON, or not shaped as `BenchmarkScores`.
    """
    p = Path(path)
    data = read_score_json(p, fix="pass a scores file written by ace-eval (`write_scores`)")
    try:
        return BenchmarkScores.model_validate(data)
    except ValidationError as e:
        first = e.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "(top level)"
        hint = "write it with `ace_eval.benchmarks.scores.write_scores`"
        if isinstance(data, dict) and "benchmark" not in data:
            hint += ", or pass the format it is in (e.g. `--format tau2` for a tau2 results file)"
        raise ScoresFileError(
            f"{p} is not a benchmark scores file: {where}: {first['msg']} ({e.error_count()} error(s)); {hint}"
        ) from None


def read_score_json(path: Path, *, fix: str) -> Any:
    """The JSON of a scored file, read within `ace.json_safe`'s limits (depth, integer length, size).

    Raises:
        ScoresFileError: the file is missing, too large or not JSON; the message names it and `fix`.
    """
    try:
        return json_safe.read_json(path)
    except json_safe.JsonInputError as e:
        if e.kind == "missing":
            raise ScoresFileError(f"cannot read scores file {path}: {e.reason}; pass an existing file") from None
        raise ScoresFileError(f"{e}; {fix}") from None


def write_scores(path: str | os.PathLike[str], scores: BenchmarkScores) -> None:
    """Write `scores` as JSON to `path` atomically (a temporary file renamed over it)."""
    atomic_write(path, bytes_writer((scores.model_dump_json(indent=1) + "\n").encode("utf-8")))


@dataclass(frozen=True)
class PassHatK:
    """pass^k averaged over tasks, with its bootstrap interval over tasks."""

    k: int
    value: float
    low: float
    high: float


def _counts(successes: Mapping[str, Sequence[bool]]) -> tuple[np.ndarray, np.ndarray]:
    c = np.array([sum(bool(s) for s in trials) for trials in successes.values()], dtype=np.int64)
    n = np.array([len(trials) for trials in successes.values()], dtype=np.int64)
    return c, n


def _per_task(successes: Mapping[str, Sequence[bool]], k: int) -> np.ndarray:
    """C(c, k) / C(n, k) of every task; raises `ValueError` for k < 1, no task, or a task with fewer than k trials."""
    if k < 1:
        raise ValueError(f"k must be at least 1, got {k}")
    if not successes:
        raise ValueError("pass^k needs at least one result")
    short = sorted(task for task, trials in successes.items() if len(trials) < k)
    if short:
        raise ValueError(f"pass^{k} needs at least {k} trials per task; too few for task(s) {', '.join(short[:5])}")
    c, n = _counts(successes)
    return np.array([math.comb(int(ci), k) / math.comb(int(ni), k) for ci, ni in zip(c, n, strict=True)])


def pass_hat_k(successes: Mapping[str, Sequence[bool]], k: int) -> float:
    """pass^k: the mean over tasks of C(c, k) / C(n, k), as tau2's metric code computes it.

    Raises:
        ValueError: `k` < 1, no task, or a task with fewer than `k` trials.
    """
    return float(_per_task(successes, k).mean())


def bootstrap_intervals(
    values: Sequence[Sequence[float]] | np.ndarray,
    *,
    confidence: float = 0.95,
    resamples: int = BOOTSTRAP_RESAMPLES,
    seed: int = 0,
) -> list[tuple[float, float]]:
    """Percentile bootstrap intervals of the mean of each row of `values` (one column per task), all from the same
    resamples of the tasks (with replacement): row i's interval does not depend on the other rows."""
    array = np.atleast_2d(np.asarray(values, dtype=np.float64))
    tasks = array.shape[1]
    if tasks == 0:
        raise ValueError("a bootstrap interval needs at least one value")
    rng = np.random.default_rng(seed)
    means = np.empty((array.shape[0], resamples))
    chunk = max(1, 2_000_000 // tasks)  # bounded memory: picks of at most ~2M indices at a time
    for start in range(0, resamples, chunk):
        stop = min(resamples, start + chunk)
        picks = rng.integers(0, tasks, size=(stop - start, tasks))
        for row in range(array.shape[0]):
            means[row, start:stop] = array[row][picks].mean(axis=1)
    tail = (1.0 - confidence) / 2 * 100
    bounds = np.percentile(means, [tail, 100 - tail], axis=1)
    return [(float(low), float(high)) for low, high in bounds.T]


def bootstrap_interval(
    values: Sequence[float] | np.ndarray,
    *,
    confidence: float = 0.95,
    resamples: int = BOOTSTRAP_RESAMPLES,
    seed: int = 0,
) -> tuple[float, float]:
    """Percentile bootstrap interval of the mean of `values` (one per task; tasks resampled with replacement)."""
    row = np.asarray(values, dtype=np.float64)[np.newaxis, :]
    return bootstrap_intervals(row, confidence=confidence, resamples=resamples, seed=seed)[0]


def pass_hat_k_interval(
    successes: Mapping[str, Sequence[bool]],
    k: int,
    *,
    confidence: float = 0.95,
    resamples: int = BOOTSTRAP_RESAMPLES,
    seed: int = 0,
) -> PassHatK:
    """pass^k with a percentile bootstrap interval over tasks (seeded: the same call gives the same interval)."""
    return pass_hat_ks(successes, min_k=k, max_k=k, confidence=confidence, resamples=resamples, seed=seed)[0]


def pass_hat_ks(
    successes: Mapping[str, Sequence[bool]],
    *,
    min_k: int = 1,
    max_k: int | None = None,
    confidence: float = 0.95,
    resamples: int = BOOTSTRAP_RESAMPLES,
    seed: int = 0,
) -> list[PassHatK]:
    """pass^k with intervals for k from `min_k` up to the fewest trials a task has (or `max_k` if smaller); []
    for no task. Every k's interval comes from the same resamples of the tasks.

    Raises:
        ValueError: `min_k` < 1, or above the fewest trials of a task.
    """
    if not successes:
        return []
    top = min(len(trials) for trials in successes.values())
    if max_k is not None:
        top = min(top, max_k)
    ks = range(min_k, top + 1)
    values = [_per_task(successes, k) for k in ks] or [_per_task(successes, min_k)]  # the latter raises
    intervals = bootstrap_intervals(np.stack(values), confidence=confidence, resamples=resamples, seed=seed)
    return [
        PassHatK(k=k, value=float(v.mean()), low=min(low, float(v.mean())), high=max(high, float(v.mean())))
        for k, v, (low, high) in zip(ks, values, intervals, strict=True)
    ]
