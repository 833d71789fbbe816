"""A benchmark's results in `run.json`, typed and benchmark-agnostic: each phase (the agent without the skillbook,
with it, ...) is a `PhaseRecord` (its benchmark, task ids, trials, pass^k from k = 1, the rewards of every task and
trial, its files), whichever benchmark produced it; `BenchmarkRecord` holds the phases of a run."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from ace_eval.run.usage import RoleUsage

__all__ = ["BenchmarkRecord", "PhaseRecord", "TaskDelta", "TaskResult", "pass_hat_list", "task_results"]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True)


class TaskResult(_Strict):
    """One task of a phase: the reward of each trial, in trial order."""

    task_id: str
    rewards: list[float | None]
    """`None` for a trial that errored before it was scored (a model failed): it counts in no pass^k."""


class PhaseRecord(_Strict):
    """One phase of a benchmark: its episodes (tasks x trials) run by the agent with or without a skillbook."""

    name: str | None = None
    """What the phase did: `collect` (the learn split), `baseline`, `evaluate`, `evaluate_with_quarantined`;
    `None` in a folder written before phases were named."""
    benchmark: str | None = None
    """The benchmark that ran it (e.g. `tau-bench-airline`, `tau2-mock`); `None` in an older folder."""
    task_ids: list[str] = Field(default_factory=list[str])
    """The tasks asked for, in order (empty in an older folder)."""
    num_trials: int | None = None
    """Trials per task asked for."""
    path: str | None = None
    """The phase's folder, relative to the run folder (e.g. `evaluation`)."""
    results: str | None = None
    """The benchmark's own results file, relative to the run folder (tau2: `baseline/results.json`), if any."""
    episodes: int = 0
    tasks: int = 0
    """Distinct tasks among the episodes."""
    scored: int = 0
    """Episodes that were scored (not errored); pass^k and the mean reward are over these only."""
    errors: int = 0
    mean_reward: float | None = None
    pass_hat_k: list[float | None] = Field(default_factory=list[float | None])
    """pass^1, pass^2, ... up to the fewest trials a task has (`pass_hat_k[0]` is pass^1); empty when none scored."""
    pass_hat_k_95: list[tuple[float, float] | None] | None = None
    """A 95 % interval `(low, high)` per k, when the benchmark gives one."""
    task_results: list[TaskResult] = Field(default_factory=list[TaskResult])
    """Every task's rewards per trial (empty in a folder written before they were recorded)."""
    usage: dict[str, RoleUsage] = Field(default_factory=dict[str, RoleUsage])
    """The agent's and the simulated user's model usage in this phase."""

    @model_validator(mode="before")
    @classmethod
    def _from_keyed_by_k(cls, data: Any) -> Any:
        """A folder written before pass^k was a list keeps it as `{"1": value, ...}`: read it as the list."""
        if isinstance(data, Mapping):
            data = dict(data)
            for key in ("pass_hat_k", "pass_hat_k_95"):
                if isinstance(data.get(key), Mapping):
                    data[key] = pass_hat_list(data[key])
        return data

    def pass_hat_k_at(self, k: int) -> float | None:
        """pass^k, `None` when the phase has no value for `k` (fewer trials, or nothing scored)."""
        return self.pass_hat_k[k - 1] if 1 <= k <= len(self.pass_hat_k) else None

    @property
    def ks(self) -> range:
        """The k that have a value: 1 .. len(pass_hat_k)."""
        return range(1, len(self.pass_hat_k) + 1)


def task_results(trials: Iterable[tuple[str, object, float | None]]) -> list[TaskResult]:
    """`(task_id, trial, reward)` of each episode as the tasks' rewards in trial order (tasks in first-seen order;
    a trial that is not an int takes the next free place)."""
    per_task: dict[str, dict[int, float | None]] = {}
    for task_id, trial, reward in trials:
        mine = per_task.setdefault(task_id, {})
        mine[trial if isinstance(trial, int) else len(mine)] = reward
    return [TaskResult(task_id=t, rewards=[r[k] for k in sorted(r)]) for t, r in per_task.items()]


def pass_hat_list(by_k: Mapping[Any, Any]) -> list[Any]:
    """`{1: v1, 2: v2}` (keys ints or digit strings) as `[v1, v2]`; a k missing below the largest is `None`."""
    values = {int(k): v for k, v in by_k.items()}
    return [values.get(k) for k in range(1, max(values, default=0) + 1)]


class TaskDelta(_Strict):
    """One task's pass^1 before and after learning."""

    task_id: str
    baseline: float
    with_ace: float
    delta: float


class BenchmarkRecord(_Strict):
    """The benchmark phases of a run."""

    before: PhaseRecord | None = None
    """The agent without the learned skillbook: the baseline phase, else the collection phase (tau-bench)."""
    after: PhaseRecord | None = None
    """The agent with the learned skillbook."""
    after_with_quarantined: PhaseRecord | None = None
    """The agent with the learned skillbook and its quarantined skills released (only when any were quarantined)."""
    learn: PhaseRecord | None = None
    """The learn split's episodes, when they are not the `before` phase (tau2)."""
    task_deltas: list[TaskDelta] | None = None
    """pass^1 per task before and after, when both phases ran."""

    @classmethod
    def of(cls, phases: Mapping[str, PhaseRecord], *, collect_is_before: bool) -> BenchmarkRecord | None:
        """The record of the phases that ran, by name (`collect`, `baseline`, `evaluate`,
        `evaluate_with_quarantined`); `None` when none did. `collect_is_before`: the collection phase is the
        agent without a skillbook on the evaluated tasks (tau-bench), so it is `before` when no baseline ran."""
        before = phases.get("baseline") or (phases.get("collect") if collect_is_before else None)
        after = phases.get("evaluate")
        if not phases:
            return None
        record = cls(
            before=before,
            after=after,
            after_with_quarantined=phases.get("evaluate_with_quarantined"),
            learn=None if collect_is_before else phases.get("collect"),
        )
        if before is not None and after is not None and before.task_results and after.task_results:
            record.task_deltas = task_deltas(before.task_results, after.task_results)
        return record

    def phases(self) -> dict[str, PhaseRecord]:
        """Every phase recorded, by its slot (`before`, `after`, `after_with_quarantined`, `learn`)."""
        slots = {"before": self.before, "after": self.after, "after_with_quarantined": self.after_with_quarantined}
        return {name: phase for name, phase in {**slots, "learn": self.learn}.items() if phase is not None}


def task_deltas(before: Sequence[TaskResult], after: Sequence[TaskResult]) -> list[TaskDelta]:
    """pass^1 (the share of scored trials with reward 1) per task before and after, tasks of `before` first; a task
    missing from one side counts 0."""
    b = {t.task_id: _success_rate(t) for t in before}
    a = {t.task_id: _success_rate(t) for t in after}
    ids = [*b, *(task_id for task_id in a if task_id not in b)]
    return [
        TaskDelta(task_id=i, baseline=b.get(i, 0.0), with_ace=a.get(i, 0.0), delta=a.get(i, 0.0) - b.get(i, 0.0))
        for i in ids
    ]


def _success_rate(task: TaskResult) -> float:
    rewards = [r for r in task.rewards if r is not None]  # an errored trial was never scored
    return sum(1 for r in rewards if r is not None and abs(r - 1.0) <= 1e-6) / len(rewards) if rewards else 0.0
