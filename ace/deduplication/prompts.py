"""The near-duplicate judge's prompt and its structured output: one of MERGE / DELETE / UPDATE / KEEP.

Each decision is its own pydantic model, so the model answers through one output tool per decision
(`final_result_MergeDecision`, ...) and every decision carries exactly the fields it needs.
"""

from __future__ import annotations

from typing import Literal, TypeAlias

from pydantic import BaseModel, ConfigDict, Field

from ace.core.rendering import render_skills_xml
from ace.core.skill import Skill

__all__ = [
    "DEDUP_DECISION_TYPES",
    "DEDUP_PROMPT",
    "DecisionKind",
    "DedupDecision",
    "DeleteDecision",
    "KeepDecision",
    "MergeDecision",
    "UpdateDecision",
    "dedup_task_prompt",
]

DecisionKind = Literal["MERGE", "DELETE", "UPDATE", "KEEP"]


class _Decision(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    reason: str = Field(min_length=1)
    """One sentence: why this decision."""


class MergeDecision(_Decision):
    """The two skills describe the same issue: keep one, widened to cover both, and retire the other."""

    kind: Literal["MERGE"] = "MERGE"
    keep_id: str
    """The skill that stays (usually the one with more occurrences or helpful tags)."""
    issue: str = Field(min_length=1)
    """The merged issue: the problem and every context where either skill applied."""
    keywords: list[str] = Field(min_length=1)
    """The merged keywords (keep the useful labels of both, at most 5)."""
    insight: str | None = None
    """The merged imperative action (required when the kept skill is a context skill)."""


class DeleteDecision(_Decision):
    """One skill adds nothing the other does not already say: retire it."""

    kind: Literal["DELETE"] = "DELETE"
    remove_id: str
    """The redundant (or worse) skill to deactivate."""


class UpdateDecision(_Decision):
    """The skills are distinct but one is worded so that it overlaps the other: rewrite it to sharpen the line."""

    kind: Literal["UPDATE"] = "UPDATE"
    skill_id: str
    """The skill to rewrite."""
    issue: str = Field(min_length=1)
    """Its complete new issue text."""
    keywords: list[str] | None = None
    """Its complete new keywords; omit to keep them."""
    insight: str | None = None
    """Its complete new insight; omit to keep it."""


class KeepDecision(_Decision):
    """The skills are about different problems: keep both unchanged (the pair is not asked again)."""

    kind: Literal["KEEP"] = "KEEP"


DedupDecision: TypeAlias = MergeDecision | DeleteDecision | UpdateDecision | KeepDecision
DEDUP_DECISION_TYPES: tuple[type[_Decision], ...] = (MergeDecision, DeleteDecision, UpdateDecision, KeepDecision)
"""The output types of the judge, one output tool each."""

DEDUP_PROMPT = """\
You maintain the skillbook of ACE (Agentic Context Engineering): a flat set of skills, each an issue (a problem \
and where it applies, in prose), an insight (the imperative action; required for section "context", optional for \
"harness"), and 1-5 keywords (short lowercase labels). An embedding search found two skills of the same section \
that look alike. Decide what to do with the pair, with exactly one decision:

- MergeDecision: both describe the same problem (possibly in different domains or APIs). Keep one (keep_id: \
usually the one with more occurrences or helpful tags) and give its complete merged issue (covering every context \
of both), insight and keywords; the other is deactivated as "merged into" the kept one.
- DeleteDecision: one skill says nothing the other does not, or it is wrong or harmful (more harmful than helpful \
tags). Give remove_id; it is deactivated, its history kept.
- UpdateDecision: they are different problems but one is worded so broadly or vaguely that it overlaps the other. \
Rewrite that one (skill_id, its complete new issue; keywords / insight only if they change) so the two are \
clearly distinct.
- KeepDecision: they are different problems and both are well scoped. Nothing changes and the pair is not \
asked again.

Only use the two skill ids of the pair. Prefer KEEP when in doubt: a wrong merge loses knowledge. Give the reason \
in one sentence."""


def dedup_task_prompt(first: Skill, second: Skill, similarity: float) -> str:
    """The user prompt for one pair: both skills in full (counters included) and their cosine similarity."""
    return (
        f'<pair similarity="{similarity:.3f}" section="{first.section}">\n'
        f"{render_skills_xml([first, second])}\n"
        f"<occurrences>{first.id}: {len(first.occurrences)}, {second.id}: {len(second.occurrences)}</occurrences>\n"
        "</pair>\n\n"
        f"Decide: MERGE, DELETE, UPDATE or KEEP for {first.id} and {second.id}."
    )
