"""Model usage of a run per role (requests, tokens, cost): from the samples and the benchmark episodes."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ace_eval.benchmarks.tau_bench.episodes import sum_usage
from ace_eval.e2e.training import SampleResult

__all__ = ["role_usage", "total_cost"]


def role_usage(
    samples: Sequence[SampleResult], episode_usage: Mapping[str, Sequence[Mapping[str, Any]]]
) -> dict[str, Any]:
    """Requests, tokens and cost per role: the reflector and skill manager from the samples, the agent and the
    simulated user from the episodes."""
    per_role: dict[str, list[Mapping[str, Any]]] = {}
    for sample in samples:
        for role, usage in sample.usage.items():
            per_role.setdefault(role, []).append(
                {
                    "requests": usage.requests,
                    "input_tokens": usage.input_tokens,
                    "output_tokens": usage.output_tokens,
                    "cost_usd": usage.cost_usd,
                }
            )
    for role, items in episode_usage.items():
        per_role.setdefault(role, []).extend(items)
    return {role: sum_usage(items) for role, items in sorted(per_role.items())}


def total_cost(usage: Mapping[str, Mapping[str, Any]]) -> float | None:
    """The summed cost of every role, or `None` when no role was priced."""
    costs = [float(u["cost_usd"]) for u in usage.values() if u.get("cost_usd") is not None]
    return sum(costs) if costs else None
