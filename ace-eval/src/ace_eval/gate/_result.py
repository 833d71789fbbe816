"""The gate's verdict as a file format: what `--json` prints and a store's `version.json` keeps as evidence."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from ace_eval.benchmarks.scores import PassHatK

__all__ = ["Decision", "DeltaSummary", "GateResult", "SideSummary", "TaskDelta", "TestSummary"]

Decision = Literal["promote", "hold"]


class _Frozen(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class SideSummary(_Frozen):
    """One side of the comparison (the baseline or the candidate)."""

    skillbook: str | None = None
    """The skillbook the side was scored with, as its scores file names it (`None`: none, or not recorded)."""
    models: dict[str, str] = Field(default_factory=dict)
    pass_hat_k: list[PassHatK]
    """pass^1..k with 95 % bootstrap intervals over tasks; item 0 is k = 1."""
    errors: int = 0
    """Trials that did not run to the end (each counted as a failure)."""


class DeltaSummary(_Frozen):
    """The mean over tasks of (candidate - baseline) success rate, with its paired bootstrap interval."""

    mean: float
    ci95: tuple[float, float]
    resamples: int
    seed: int


class TestSummary(_Frozen):
    """The two-sided sign-flip permutation test of the per-task differences."""

    method: Literal["exact", "monte-carlo"]
    nonzero: int
    """Tasks whose difference is not zero (the test's n; a zero difference changes no p-value)."""
    patterns: int
    seed: int | None


class ResolutionSummary(_Frozen):
    """What a run of this size can tell apart from noise (see `ace_eval.gate.Resolution`)."""

    min_p_value: float
    tasks_needed: int
    smallest_effect: float | None
    mde: float | None


class TaskDelta(_Frozen):
    """One task's success rate on both sides."""

    task: str
    baseline: float
    candidate: float
    delta: float


class GateResult(_Frozen):
    """A paired comparison of two scored skillbooks on the same tasks and seeds, and its decision."""

    benchmark: str
    tasks: int
    num_trials: int
    seeds: list[int] = Field(default_factory=list)
    alpha: float
    min_effect: float
    baseline: SideSummary
    candidate: SideSummary
    delta: DeltaSummary
    p_value: float
    test: TestSummary
    resolution: ResolutionSummary
    per_task: list[TaskDelta]
    decision: Decision
    """`promote` iff delta.ci95[0] > min_effect and p_value < alpha, else `hold`."""
    reasons: list[str] = Field(default_factory=list)
    """Why it holds (empty on promote)."""
