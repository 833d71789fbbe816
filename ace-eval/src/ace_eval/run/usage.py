"""Model usage per role (requests, tokens, cost): `RoleUsage`, the one type of it in a run folder (a sample's journal
line, a segment's steps, `run.json`), and its sums."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict
from pydantic_ai.usage import RunUsage

__all__ = ["RoleUsage", "role_usage", "sum_usage", "total_cost"]


class RoleUsage(BaseModel):
    """Requests, tokens and cost of one role (agent, user, reflector, skill_manager, a step's judge)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    requests: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float | None = None
    """What the requests cost, as priced by litellm (`RunUsage.cost`); `None` when no request was priced."""

    @classmethod
    def from_run_usage(cls, usage: RunUsage) -> RoleUsage:
        """Totals of a pydantic-ai usage; the cost is the `Decimal` litellm put on each response, summed."""
        cost = usage.cost
        return cls(
            requests=usage.requests,
            input_tokens=usage.input_tokens,
            output_tokens=usage.output_tokens,
            cost_usd=float(cost) if cost is not None else None,
        )

    def __add__(self, other: RoleUsage) -> RoleUsage:
        both = (self.cost_usd, other.cost_usd)
        return RoleUsage(
            requests=self.requests + other.requests,
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            cost_usd=None if both == (None, None) else (self.cost_usd or 0.0) + (other.cost_usd or 0.0),
        )


def sum_usage(items: Iterable[RoleUsage | Mapping[str, Any]]) -> RoleUsage:
    """The sum of several usages (a mapping: an episode's `metadata["usage"]` entry); the cost stays `None` when
    none was priced."""
    total = RoleUsage()
    for item in items:
        total = total + (item if isinstance(item, RoleUsage) else _of(item))
    return total


def _of(item: Mapping[str, Any]) -> RoleUsage:
    cost = item.get("cost_usd")
    return RoleUsage(
        requests=int(item.get("requests") or 0),
        input_tokens=int(item.get("input_tokens") or 0),
        output_tokens=int(item.get("output_tokens") or 0),
        cost_usd=None if cost is None else float(cost),
    )


def role_usage(
    samples: Iterable[Mapping[str, RoleUsage]], more: Mapping[str, Sequence[RoleUsage | Mapping[str, Any]]]
) -> dict[str, RoleUsage]:
    """Usage per role, sorted by role: each sample's (the reflector, the skill manager...) and `more` (the agent
    and the simulated user of the benchmark episodes, the end-of-run steps)."""
    per_role: dict[str, list[RoleUsage | Mapping[str, Any]]] = {}
    for usage in samples:
        for role, item in usage.items():
            per_role.setdefault(role, []).append(item)
    for role, items in more.items():
        per_role.setdefault(role, []).extend(items)
    return {role: sum_usage(items) for role, items in sorted(per_role.items())}


def total_cost(usage: Mapping[str, RoleUsage]) -> float | None:
    """The summed cost of every role, or `None` when no role was priced."""
    costs = [u.cost_usd for u in usage.values() if u.cost_usd is not None]
    return sum(costs) if costs else None
