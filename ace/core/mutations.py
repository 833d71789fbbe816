"""A skill as one operation makes it: a new one (add), or an existing one updated, tagged, removed, quarantined or
released, with the operation's provenance entry appended to its `occurrences`.

Pure functions of the active skill, the operation, its entry and the time: the skillbook looks the skill up, holds
its lock, and records the result and the audit-log entry. Each builds the new version from a `draft` of the old
one (a skill handed out never changes).
"""

from __future__ import annotations

import numpy as np

from ace.core.insight_source import InsightSource
from ace.core.skill import (
    Embedding,
    Quarantine,
    Skill,
    draft,
    normalize_keywords,
    sealed,
    validate_insight,
    validate_issue,
    validate_section,
)
from ace.core.update_operation import UpdateOperation
from ace.exceptions import SkillbookError

__all__ = [
    "checked_delta",
    "checked_reason",
    "checked_vector",
    "created",
    "quarantined",
    "removed",
    "tagged",
    "updated",
]


def created(op: UpdateOperation, skill_id: str, entry: InsightSource, now: str, *, max_chars: int | None) -> Skill:
    """The new skill an ADD describes, under the id the skillbook assigned."""
    section = validate_section(op.section)
    issue = validate_issue(op.issue, max_chars=max_chars)
    if op.keywords is None:
        raise SkillbookError("keywords are required when adding a skill: pass 1-5 short labels")
    keywords = normalize_keywords(op.keywords)
    insight = validate_insight(section, op.insight, max_chars=max_chars)
    new = draft()
    new.id, new.section, new.keywords, new.issue, new.insight = skill_id, section, keywords, issue, insight
    new.occurrences = (entry,)
    new.created_at = new.updated_at = now
    return sealed(new)


def updated(old: Skill, op: UpdateOperation, entry: InsightSource, now: str, *, max_chars: int | None) -> Skill:
    """`old` with the operation's issue, and its keywords / insight when given; a text change drops the vector."""
    issue = validate_issue(op.issue, max_chars=max_chars)
    keywords = old.keywords
    if op.keywords is not None:
        keywords = normalize_keywords(op.keywords)
        keywords = old.keywords if keywords == old.keywords else keywords  # unchanged: share the old list
    insight = old.insight if op.insight is None else validate_insight(old.section, op.insight, max_chars=max_chars)
    new = draft(old)
    if issue != old.issue or insight != old.insight or keywords is not old.keywords:
        new.issue, new.insight, new.keywords, new.embedding = issue, insight, keywords, None
    new.occurrences = (*old.occurrences, entry)
    new.updated_at = now
    return sealed(new)


def tagged(old: Skill, delta: int, entry: InsightSource, now: str) -> Skill:
    """`old` with one more use counted: delta 1 helpful, -1 harmful, 0 neutral (checked by `checked_delta`)."""
    new = draft(old)
    new.used_count = old.used_count + 1
    if delta == 1:
        new.helpful_count = old.helpful_count + 1
    elif delta == -1:
        new.harmful_count = old.harmful_count + 1
    else:
        new.neutral_count = old.neutral_count + 1
    new.occurrences = (*old.occurrences, entry)
    new.updated_at = now
    return sealed(new)


def checked_delta(delta: object) -> int:
    """A tag's delta: the integer -1, 0 or 1 (not `True` or 1.0); raise naming the fix otherwise."""
    if type(delta) is not int or delta not in (-1, 0, 1):
        raise SkillbookError(
            f"delta must be -1 (harmful), 0 (neutral) or 1 (helpful), as an integer; got {delta!r} "
            f"({type(delta).__name__})"
        )
    return delta


def checked_reason(op: UpdateOperation) -> str:
    """The reason a REMOVE, QUARANTINE or RELEASE must give (for the audit log)."""
    if not isinstance(op.reason, str) or not op.reason.strip():
        if op.type == "REMOVE":
            raise SkillbookError("reason is required to remove a skill: say why it is harmful or outdated")
        verb = "quarantine" if op.type == "QUARANTINE" else "release"
        raise SkillbookError(f"reason is required to {verb} a skill: say why, for the audit log")
    return op.reason


def removed(old: Skill, entry: InsightSource, now: str) -> Skill:
    """`old`, deactivated (its reason checked by `checked_reason`)."""
    new = draft(old)
    new.active = False
    new.occurrences = (*old.occurrences, entry)
    new.updated_at = now
    return sealed(new)


def quarantined(old: Skill, op: UpdateOperation, entry: InsightSource, now: str) -> Skill:
    """`old` quarantined (`QUARANTINE`) or released (`RELEASE`); the reason is checked by `checked_reason`."""
    quarantining = op.type == "QUARANTINE"
    if quarantining and old.quarantine is not None:
        raise SkillbookError(
            f"skill {old.id} is already quarantined ({old.quarantine.reason}): release it first to quarantine it again"
        )
    if not quarantining and old.quarantine is None:
        raise SkillbookError(f"skill {old.id} is not quarantined, so there is nothing to release")
    new = draft(old)
    reason = checked_reason(op).strip()
    new.quarantine = (
        Quarantine(reason=reason, evidence=tuple(op.evidence or ()), timestamp=now) if quarantining else None
    )
    new.occurrences = (*old.occurrences, entry)
    new.updated_at = now
    return sealed(new)


def checked_vector(skill_id: str, embedding: Embedding, dim: int | None) -> Embedding:
    """`embedding` as a finite float32 vector of the skillbook's dimension `dim` (`None`: any)."""
    vector = np.asarray(embedding, dtype=np.float32).reshape(-1)
    if not np.isfinite(vector).all():
        raise SkillbookError(
            f"embedding of {skill_id} contains NaN or infinite values: the embedder returned a broken vector; "
            "re-embed the skill (or check the embedding model)"
        )
    if dim is not None and vector.shape[0] != dim:
        raise SkillbookError(
            f"embedding of {skill_id} has dimension {vector.shape[0]} but the skillbook's vectors have {dim}: "
            "clear all embeddings (set_embedding(id, None)) before switching embedding models"
        )
    return vector
