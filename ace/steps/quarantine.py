"""`QuarantineStep`: the effectiveness gate, quarantining every skill the reflections' tags show keeps hurting.

After each sample's skill-manager session (phase `after_update`), every visible skill whose evidence meets the
`QuarantinePolicy` (harmful on at least two distinct traces, more harmful than helpful) is quarantined: out of
every prompt and search, still in the skillbook with its reason and evidence. Each quarantine is an audited
operation whose provenance is the sample that tipped the balance (or, at the end of an epoch, the gate itself).
"""

from __future__ import annotations

import dataclasses

from pydantic import BaseModel, ConfigDict, Field

from ace.core.effectiveness import DEFAULT_MIN_HARMFUL_TRACES, QuarantinePolicy, quarantine_reason
from ace.core.insight_source import InsightSource
from ace.observability import AttributeInput, ace_span
from ace.pipeline.context import StepContext, source_of
from ace.pipeline.registry import StepEnvironment, StepFactory

__all__ = ["QuarantineStep"]


class QuarantineStep:
    """Quarantines the skills the evidence retires; their ids are plugin data `quarantine.quarantined`."""

    name = "quarantine"
    requires: frozenset[str] = frozenset({"skillbook", "epoch"})
    provides: frozenset[str] = frozenset({"quarantine.quarantined"})

    def __init__(self, policy: QuarantinePolicy | None = None) -> None:
        self.policy = policy or QuarantinePolicy()

    async def __call__(self, ctx: StepContext) -> StepContext:
        """Quarantine what is due and return `ctx` with the ids (re-checked under the skillbook's lock)."""
        book = ctx.skillbook
        done: list[str] = []
        for skill, evidence in self.policy.due(book):
            reason = quarantine_reason(evidence, self.policy)
            attrs: dict[str, AttributeInput] = {"ace.skill_id": skill.id, "ace.harmful_traces": len(evidence.harmful)}
            with ace_span("quarantine", attrs), book.locked():
                current = book.get_skill(skill.id)
                if current is None or not current.visible:  # a concurrent sample's gate came first
                    continue
                book.quarantine_skill(
                    skill.id, reason, evidence=list(evidence.harmful), insight_source=_source(ctx, reason)
                )
            done.append(skill.id)
        return ctx.with_extra(self.name, "quarantined", tuple(done))


def _source(ctx: StepContext, reason: str) -> InsightSource:
    """The sample whose tags tipped the balance; at the end of an epoch (no trace), the gate itself."""
    if ctx.trace:
        base = source_of(ctx)
        return dataclasses.replace(base, learning_text=reason)
    return InsightSource(
        trace_uid=f"quarantine:epoch-{ctx.epoch}",
        source_system="ace.quarantine",
        trace_id=f"epoch-{ctx.epoch}",
        epoch=ctx.epoch,
        learning_text=reason,
    )


class QuarantineOptions(BaseModel):
    """`quarantine`: how much harmful evidence retires a skill."""

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)
    min_harmful_traces: int = Field(default=DEFAULT_MIN_HARMFUL_TRACES, ge=DEFAULT_MIN_HARMFUL_TRACES)
    """Distinct traces whose reflection tagged the skill harmful (at least 2: one may be a transient failure)."""
    min_margin: int = Field(default=1, ge=1)
    """Harmful traces minus helpful traces needed (1: strictly more harmful than helpful evidence)."""


def _build(o: QuarantineOptions, _: StepEnvironment) -> QuarantineStep:
    return QuarantineStep(QuarantinePolicy(min_harmful_traces=o.min_harmful_traces, min_margin=o.min_margin))


factory = StepFactory(
    step=QuarantineStep,
    phase="after_update",
    description="Quarantines a skill tagged harmful on 2+ distinct traces and more harmful than helpful.",
    options=QuarantineOptions,
    build=_build,
)
