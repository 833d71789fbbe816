"""`domain_filter`: label each trace with a domain from the tools it called, and skip the domains you don't want.

A `before_reflect` step: it runs before the reflector sees the trace, so a skipped trace costs no model call.
The label is plugin data (`domain_filter.domain`) that later steps may require, and goes into the trace's
`metadata.domain`. A trace's domain is the first rule whose tool-name fragment matches a tool it called;
a trace that called none of them is `lookup`.

    ace-eval e2e --traces DIR --no-benchmark --step domain_filter:only=cancellation,only=booking
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from ace.pipeline import StepContext, StepEnvironment, StepFactory

__all__ = ["DEFAULT_RULES", "DomainFilterOptions", "DomainFilterStep", "domain_filter", "domain_of", "tools_called"]

DEFAULT_RULES: tuple[str, ...] = (
    "cancel=cancellation",
    "book_reservation=booking",
    "update_reservation_flights=flight_change",
    "update_reservation_baggages=baggage",
    "update_reservation_passengers=passengers",
    "send_certificate=compensation",
)


class DomainFilterOptions(BaseModel):
    """`--step domain_filter:only=X,only=Y,skip=Z,rule=fragment=domain`."""

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)
    only: list[str] = Field(default_factory=list)
    """Keep only traces of these domains (default: every domain)."""
    skip: list[str] = Field(default_factory=list)
    """Skip traces of these domains."""
    rule: list[str] = Field(default_factory=lambda: list(DEFAULT_RULES))
    """`tool-name fragment=domain` rules, first match wins (default: the tau-bench airline tools)."""

    @field_validator("rule")
    @classmethod
    def _rules_are_pairs(cls, rules: list[str]) -> list[str]:
        for text in rules:
            _rule(text)
        return rules


def tools_called(trace: Mapping[str, Any]) -> list[str]:
    """The names of the tools the agent called, in order (OpenAI-style `tool_calls` of assistant messages)."""
    names: list[str] = []
    for message in trace.get("messages") or []:
        for call in message.get("tool_calls") or []:
            name = (call.get("function") or {}).get("name")
            if isinstance(name, str):
                names.append(name)
    return names


def domain_of(tools: list[str], rules: list[tuple[str, str]]) -> str:
    """The domain of the first rule whose fragment is in one of `tools`; `lookup` when none is."""
    for fragment, domain in rules:
        if any(fragment in tool for tool in tools):
            return domain
    return "lookup"


class DomainFilterStep:
    """Labels the trace (plugin data `domain_filter.domain`, `metadata.domain`) and skips unwanted domains."""

    name = "domain_filter"
    requires: frozenset[str] = frozenset({"trace"})
    provides: frozenset[str] = frozenset({"trace", "skipped", "domain_filter.domain"})

    def __init__(self, options: DomainFilterOptions) -> None:
        self.options = options
        self.rules = [_rule(r) for r in options.rule]

    async def __call__(self, ctx: StepContext) -> StepContext:
        """Label, then skip when the domain is filtered out; the trace is otherwise unchanged."""
        domain = domain_of(tools_called(ctx.trace), self.rules)
        metadata = {**(ctx.trace.get("metadata") or {}), "domain": domain}
        labelled = dataclasses.replace(ctx, trace={**ctx.trace, "metadata": metadata})
        out = labelled.with_extra(self.name, "domain", domain)
        if (self.options.only and domain not in self.options.only) or domain in self.options.skip:
            return dataclasses.replace(out, skipped=f"domain_filter: domain {domain!r} is filtered out")
        return out


def _rule(text: str) -> tuple[str, str]:
    fragment, eq, domain = text.partition("=")
    if not eq or not fragment or not domain:
        raise ValueError(f"domain_filter rule {text!r} is not 'tool-name fragment=domain', e.g. cancel=cancellation")
    return fragment, domain


def _build(options: DomainFilterOptions, env: StepEnvironment) -> DomainFilterStep:
    return DomainFilterStep(options)


domain_filter = StepFactory(
    step=DomainFilterStep,
    phase="before_reflect",
    description="Labels each trace with a domain from the tools it called; skips the domains filtered out.",
    options=DomainFilterOptions,
    build=_build,
)
