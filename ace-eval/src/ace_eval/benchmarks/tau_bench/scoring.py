"""Scoring as the benchmark does it: the final database against the gold replay, the required outputs, pass^k."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from ace_eval.benchmarks import scores
from ace_eval.benchmarks.scores import success_of
from ace_eval.benchmarks.tau_bench.data import Action, Task
from ace_eval.collection.grading import RESPOND_ACTION, find_outputs

__all__ = [
    "RESPOND_ACTION",
    "RewardResult",
    "calculate_reward",
    "find_outputs",
    "is_success",
    "pass_hat_k",
    "pass_hat_ks",
]

_SUCCESS_TOLERANCE = 1e-6


@dataclass(frozen=True, kw_only=True)
class RewardResult:
    """The verdict on one episode, with both checks kept for the trace."""

    reward: float
    """1.0 when the database matches the gold replay and every required output was said, else 0.0."""
    data_hash: str
    """Hash of the episode's final database."""
    gt_data_hash: str
    """Hash of a fresh database after the task's gold actions."""
    outputs: dict[str, bool] = field(default_factory=dict)
    """Each required output and whether some agent reply contained it (empty when the task requires none)."""
    actions: tuple[Action, ...] = ()
    """The gold actions (replies to the user excluded)."""

    @property
    def r_actions(self) -> bool:
        """Whether the final database equals the gold one."""
        return self.data_hash == self.gt_data_hash

    @property
    def r_outputs(self) -> bool:
        """Whether every required output was said (true when none is required)."""
        return all(self.outputs.values())

    def to_info(self) -> dict[str, object]:
        """Upstream's `reward_info` shape: its `info` is the outputs check when the task has outputs."""
        if self.outputs:
            info: dict[str, object] = {"r_outputs": float(self.r_outputs), "outputs": dict(self.outputs)}
        else:
            info = {"r_actions": float(self.r_actions), "gt_data_hash": self.gt_data_hash}
        return {
            "reward": self.reward,
            "info": info,
            "actions": [{"name": a.name, "kwargs": a.kwargs} for a in self.actions],
        }

    def to_dict(self) -> dict[str, object]:
        """Everything, for a trace's metadata: upstream's shape plus both checks."""
        return {
            **self.to_info(),
            "r_actions": self.r_actions,
            "r_outputs": self.r_outputs,
            "data_hash": self.data_hash,
            "gt_data_hash": self.gt_data_hash,
            "outputs": dict(self.outputs),
        }


def calculate_reward(*, task: Task, data_hash: str, gt_data_hash: str, replies: Sequence[str]) -> RewardResult:
    """Reward 1.0 only when the database hashes match and every output of the task is in some reply."""
    outputs = find_outputs(task.outputs, replies)
    ok = data_hash == gt_data_hash and all(outputs.values())
    return RewardResult(
        reward=1.0 if ok else 0.0,
        data_hash=data_hash,
        gt_data_hash=gt_data_hash,
        outputs=outputs,
        actions=tuple(a for a in task.actions if a.name != RESPOND_ACTION),
    )


def is_success(reward: float) -> bool:
    """A reward of 1 (within 1e-6), as upstream counts successes for pass^k."""
    return success_of(reward)


def _successes(results: Iterable[tuple[object, float]]) -> dict[str, list[bool]]:
    """task id -> whether each of its trials succeeded."""
    outcomes: dict[str, list[bool]] = defaultdict(list)
    for task_id, reward in results:
        outcomes[str(task_id)].append(success_of(reward))
    return dict(outcomes)


def pass_hat_k(results: Iterable[tuple[object, float]], k: int) -> float:
    """pass^k (`ace_eval.benchmarks.scores.pass_hat_k`) over `(task_id, reward)` pairs of every trial.

    Raises `ValueError` when there are no results or a task has fewer than `k` trials.
    """
    return scores.pass_hat_k(_successes(results), k)


def pass_hat_ks(results: Iterable[tuple[object, float]]) -> dict[int, float]:
    """pass^k for every k from 1 to the smallest number of trials of a task."""
    successes = _successes(results)
    if not successes:
        return {}
    return {k: scores.pass_hat_k(successes, k) for k in range(1, min(map(len, successes.values())) + 1)}
