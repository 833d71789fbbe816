"""Summary numbers of a collection: successes, conversation sizes, tool use, results per task."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from ace_eval.collection.chat import AssistantMessage
from ace_eval.collection.model import Trace

__all__ = ["CollectionStats", "Spread", "TaskStats", "collection_stats"]


@dataclass(frozen=True, kw_only=True)
class Spread:
    """Mean, smallest and largest of a per-trace count."""

    mean: float
    min: int
    max: int

    @classmethod
    def of(cls, values: Sequence[int]) -> Spread:
        """The spread of `values` (all zero when empty)."""
        if not values:
            return cls(mean=0.0, min=0, max=0)
        return cls(mean=sum(values) / len(values), min=min(values), max=max(values))


@dataclass(frozen=True, kw_only=True)
class TaskStats:
    """The runs of one task."""

    task_id: str
    traces: int
    successes: int
    mean_reward: float | None
    """Over the runs with a reward; None when none has one."""


@dataclass(frozen=True, kw_only=True)
class CollectionStats:
    """What `ace-eval collection stats` prints."""

    traces: int
    with_reward: int
    successes: int
    success_rate: float | None
    """Successes over traces with a reward; None when no trace has one."""
    mean_reward: float | None
    messages: Spread
    tool_calls: Spread
    tools: dict[str, int]
    """Calls per tool name, most used first."""
    tasks: list[TaskStats]
    """Per task id, in natural order (`2` before `10`); traces without a task id are left out."""

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready dict."""
        return asdict(self)


def _task_order(task_id: str) -> tuple[int, int, str]:
    return (0, int(task_id), "") if task_id.isdigit() else (1, 0, task_id)


def _mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


def collection_stats(traces: Sequence[Trace], success_threshold: float = 1.0) -> CollectionStats:
    """Compute the stats of `traces`; a success is a reward of at least `success_threshold`."""
    rewards = [t.reward for t in traces if t.reward is not None]
    successes = sum(t.is_success(success_threshold) for t in traces)
    tools: Counter[str] = Counter()
    calls_per_trace: list[int] = []
    for trace in traces:
        names = [
            call.function.name
            for message in trace.chat_messages()
            if isinstance(message, AssistantMessage)
            for call in message.tool_calls or ()
        ]
        tools.update(names)
        calls_per_trace.append(len(names))
    by_task: dict[str, list[Trace]] = {}
    for trace in traces:
        if trace.task_id is not None:
            by_task.setdefault(trace.task_id, []).append(trace)
    tasks = [
        TaskStats(
            task_id=task_id,
            traces=len(runs),
            successes=sum(t.is_success(success_threshold) for t in runs),
            mean_reward=_mean([t.reward for t in runs if t.reward is not None]),
        )
        for task_id, runs in sorted(by_task.items(), key=lambda item: _task_order(item[0]))
    ]
    return CollectionStats(
        traces=len(traces),
        with_reward=len(rewards),
        successes=successes,
        success_rate=successes / len(rewards) if rewards else None,
        mean_reward=_mean(rewards),
        messages=Spread.of([len(t.messages) for t in traces]),
        tool_calls=Spread.of(calls_per_trace),
        tools=dict(tools.most_common()),
        tasks=tasks,
    )
