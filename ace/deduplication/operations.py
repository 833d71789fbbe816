"""Applying a near-duplicate decision to the skillbook: MERGE, DELETE, UPDATE or KEEP.

- MERGE: the kept skill is rewritten (the merged issue, keywords and insight) and the other is soft-removed
  with the reason `merged into <kept id>: ...`, both in one all-or-nothing batch.
- DELETE: one skill is soft-removed (`duplicate of <other id>: ...`); its history is kept.
- UPDATE: one skill is rewritten so that the two no longer overlap.
- KEEP: nothing changes; the pair is recorded on the skillbook (`Skillbook.record_keep_pair`) so it is never
  asked again, in this run or any later one that loads the skillbook.

Every mutation carries an `InsightSource` (the trace being learned from, when there is one) whose texts say
which pair and decision caused it. `check_decision` validates without touching the skillbook, so a judge can
be asked to retry before anything is applied.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import assert_never

from ace.core.insight_source import InsightSource
from ace.core.skill import Skill, normalize_keywords, validate_insight, validate_issue
from ace.core.skillbook import Skillbook
from ace.core.update_operation import UpdateOperation
from ace.deduplication.prompts import (
    DecisionKind,
    DedupDecision,
    DeleteDecision,
    KeepDecision,
    MergeDecision,
    UpdateDecision,
)
from ace.exceptions import SkillbookError

__all__ = ["AppliedDecision", "DedupDecisionError", "apply_decision", "check_decision"]


class DedupDecisionError(SkillbookError):
    """A decision that cannot be applied to this pair; the message says what to change."""


@dataclass(frozen=True, kw_only=True)
class AppliedDecision:
    """A decision that was applied: the pair, what was decided and which skills it changed."""

    kind: DecisionKind
    first_id: str
    second_id: str
    similarity: float | None
    reason: str
    updated_id: str | None = None
    """The skill rewritten (MERGE: the kept one; UPDATE: the target)."""
    removed_id: str | None = None
    """The skill deactivated (MERGE, DELETE)."""

    @property
    def changed_ids(self) -> tuple[str, ...]:
        """Ids of the skills whose content or state changed (empty for KEEP)."""
        return tuple(i for i in (self.updated_id, self.removed_id) if i is not None)


def check_decision(skillbook: Skillbook, pair: tuple[str, str], decision: DedupDecision) -> None:
    """Raise `DedupDecisionError` (or the skillbook's `SkillbookError`) unless `decision` applies to `pair` as is."""
    first, second = (_active(skillbook, skill_id) for skill_id in pair)
    match decision:
        case MergeDecision():
            kept = _member(decision.keep_id, first, second, "keep_id")
            validate_issue(decision.issue)
            normalize_keywords(decision.keywords)
            if decision.insight is not None:
                validate_insight(kept.section, decision.insight)
        case DeleteDecision():
            _member(decision.remove_id, first, second, "remove_id")
        case UpdateDecision():
            target = _member(decision.skill_id, first, second, "skill_id")
            issue = validate_issue(decision.issue)
            keywords = normalize_keywords(decision.keywords) if decision.keywords is not None else target.keywords
            insight = validate_insight(target.section, decision.insight) if decision.insight else target.insight
            if (issue, keywords, insight) == (target.issue, target.keywords, target.insight):
                raise DedupDecisionError(
                    f"UPDATE of {target.id} would change nothing: rewrite its issue so it no longer overlaps "
                    "the other skill, or decide KEEP"
                )
        case KeepDecision():
            pass
        case _ as unreachable:
            assert_never(unreachable)


def apply_decision(
    skillbook: Skillbook,
    pair: tuple[str, str],
    decision: DedupDecision,
    *,
    similarity: float | None = None,
    source: InsightSource | None = None,
) -> AppliedDecision:
    """Check and apply `decision` to the pair; the skillbook is unchanged when it raises.

    Args:
        skillbook: The skillbook holding both skills.
        pair: The two skill ids the decision is about.
        decision: The judge's decision.
        similarity: The pair's cosine, recorded on the result.
        source: Provenance of the mutations (default: a manual source naming the deduplication).
    """
    check_decision(skillbook, pair, decision)
    first_id, second_id = pair
    base = source or InsightSource.manual("deduplication")
    applied = AppliedDecision(
        kind=decision.kind, first_id=first_id, second_id=second_id, similarity=similarity, reason=decision.reason
    )
    note = f"near-duplicate pair {first_id} / {second_id}" + (f" (cosine {similarity:.3f})" if similarity else "")
    match decision:
        case MergeDecision():
            other = second_id if decision.keep_id == first_id else first_id
            text = f"merged {other} into {decision.keep_id}: {decision.reason}"
            skillbook.apply_operations(
                [
                    UpdateOperation(
                        type="UPDATE",
                        skill_id=decision.keep_id,
                        issue=decision.issue,
                        keywords=list(decision.keywords),
                        insight=decision.insight,
                    ),
                    UpdateOperation(
                        type="REMOVE", skill_id=other, reason=f"merged into {decision.keep_id}: {decision.reason}"
                    ),
                ],
                insight_source=dataclasses.replace(base, error_identification=note, learning_text=text),
            )
            return dataclasses.replace(applied, updated_id=decision.keep_id, removed_id=other)
        case DeleteDecision():
            other = second_id if decision.remove_id == first_id else first_id
            skillbook.remove_skill(
                decision.remove_id,
                f"duplicate of {other}: {decision.reason}",
                insight_source=base.derive("REMOVE", error_identification=note),
            )
            return dataclasses.replace(applied, removed_id=decision.remove_id)
        case UpdateDecision():
            skillbook.update_skill(
                decision.skill_id,
                decision.issue,
                decision.keywords,
                decision.insight,
                insight_source=base.derive(
                    "UPDATE", error_identification=note, learning_text=f"rewritten apart: {decision.reason}"
                ),
            )
            return dataclasses.replace(applied, updated_id=decision.skill_id)
        case KeepDecision():
            skillbook.record_keep_pair(first_id, second_id)
            return applied
        case _ as unreachable:
            assert_never(unreachable)


def _active(skillbook: Skillbook, skill_id: str) -> Skill:
    skill = skillbook.require_skill(skill_id)
    if not skill.active:
        raise DedupDecisionError(f"skill {skill_id} is no longer active, so the pair needs no decision")
    return skill


def _member(skill_id: str, first: Skill, second: Skill, field: str) -> Skill:
    if skill_id == first.id:
        return first
    if skill_id == second.id:
        return second
    raise DedupDecisionError(f"{field} must be {first.id!r} or {second.id!r} (one of the pair), got {skill_id!r}")
