"""tau2 domains and their task selections: a split of `split_tasks.json` (train, test, base, ...) or task ids."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ace.exceptions import UserError
from ace_eval.benchmarks.tau2._tau2 import registry

__all__ = [
    "BENCHMARKS",
    "DEFAULT_EVAL_SPLIT",
    "DEFAULT_TRAIN_SPLIT",
    "TaskSelectionError",
    "benchmark_domain",
    "load_tasks",
    "task_splits",
]

BENCHMARKS: dict[str, str] = {
    "tau2-airline": "airline",
    "tau2-retail": "retail",
    "tau2-telecom": "telecom",
    "tau2-mock": "mock",
}
"""The benchmark names ace-eval accepts and the tau2 domain each runs."""
DEFAULT_TRAIN_SPLIT = "train"
DEFAULT_EVAL_SPLIT = "test"


class TaskSelectionError(UserError, ValueError):
    """An unknown domain, split or task id; the message lists the valid ones."""


def benchmark_domain(benchmark: str) -> str:
    """The tau2 domain of `tau2-<domain>` (a bare domain name is accepted too)."""
    if benchmark in BENCHMARKS:
        return BENCHMARKS[benchmark]
    if benchmark in BENCHMARKS.values():
        return benchmark
    raise TaskSelectionError(f"unknown tau2 benchmark {benchmark!r}; choose one of {', '.join(BENCHMARKS)}")


def _domain(domain: str) -> str:
    domains: list[str] = registry.get_domains()
    if domain not in domains:
        raise TaskSelectionError(f"unknown tau2 domain {domain!r}; tau2 registers {', '.join(domains)}")
    return domain


def task_splits(domain: str) -> dict[str, list[str]]:
    """The domain's named splits (its `split_tasks.json`): split name -> task ids."""
    from tau2.utils import load_file  # type: ignore[import-untyped,import-not-found,unused-ignore]

    loader = registry.get_task_splits_loader(_domain(domain))
    if loader is not None:
        splits: dict[str, list[str]] = loader()
        return splits
    # mock ships a split file but registers no loader for it; read it as tau2's own loaders do.
    from tau2.utils.utils import DATA_DIR  # type: ignore[import-untyped,import-not-found,unused-ignore]

    path = DATA_DIR / "tau2" / "domains" / domain / "split_tasks.json"
    return dict(load_file(path)) if path.exists() else {}


def load_tasks(domain: str, selection: str | Sequence[str]) -> list[Any]:
    """The tasks of a split (`"train"`, `"test"`, `"base"`, ...) or of explicit ids, in the domain's order.

    Returns tau2 `Task` objects; an unknown split or id raises `TaskSelectionError` naming the valid ones.
    """
    loader = registry.get_tasks_loader(_domain(domain))
    every: list[Any] = loader(task_split_name=None)
    if isinstance(selection, str):
        splits = task_splits(domain)
        if selection not in splits:
            raise TaskSelectionError(
                f"domain {domain!r} has no split {selection!r}; its splits: {', '.join(splits) or 'none'} "
                "(or pass task ids)"
            )
        wanted = set(splits[selection])
        return [task for task in every if task.id in wanted]
    ids = list(selection)
    if not ids:
        raise TaskSelectionError(f"no task ids given for domain {domain!r}")
    by_id = {task.id: task for task in every}
    unknown = [task_id for task_id in ids if task_id not in by_id]
    if unknown:
        sample = ", ".join(list(by_id)[:5])
        raise TaskSelectionError(f"domain {domain!r} has no task {', '.join(unknown)} (its ids look like: {sample})")
    if len(set(ids)) != len(ids):
        raise TaskSelectionError(f"task ids repeat in the selection for domain {domain!r}: {ids}")
    return [by_id[task_id] for task_id in ids]
