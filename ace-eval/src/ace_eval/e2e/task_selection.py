"""The benchmark tasks a phase of a run evaluates the agent on."""

from __future__ import annotations

from collections.abc import Sequence

from ace_eval.benchmarks.tau_bench import AirlineData
from ace_eval.collection import Trace
from ace_eval.e2e.config import ConfigError, E2ESettings

__all__ = ["select_tasks"]


def select_tasks(settings: E2ESettings, data: AirlineData, traces: Sequence[Trace] | None) -> list[int]:
    """The benchmark tasks a phase runs: the first `--limit` tasks, or the tasks of the replayed traces.

    Raises `ConfigError` when the traces are not tau-bench airline tasks of this data folder.
    """
    if settings.traces is None or traces is None:
        count = len(data.tasks) if settings.limit is None else min(settings.limit, len(data.tasks))
        return list(range(count))
    ids: set[int] = set()
    for trace in traces:
        task = trace.task_id
        if task is None or not task.isdigit() or int(task) >= len(data.tasks):
            raise ConfigError(
                f"trace {trace.trace_uid!r} has task_id {task!r}, which is not a task of the tau-bench airline data "
                f"(0-{len(data.tasks) - 1}): the agent cannot be evaluated on these traces; pass --no-benchmark"
            )
        ids.add(int(task))
    return sorted(ids)
