"""A skill as one operation makes it: a new one (add), or an existing one updated, tagged, removed, quarantined or
released.

Pure functions of the active skill, the operation and the time: the skillbook looks the skill up, holds its lock,
and records the result, its provenance and the audit-log entry.
"""

from __future__ import annotations

from typing import TypeVar

import numpy as np

from ace.core.skill import (
    Embedding,
    Quarantine,
    Skill,
    normalize_keywords,
    validate_insight,
    validate_issue,
    validate_section,
)
from ace.core.update_operation import UpdateOperation
from ace.exceptions import SkillbookError

__all__ = ["checked_vector", "created", "evolve", "quarantined", "removed", "tagged", "updated"]

_T = TypeVar("_T")


def created(op: UpdateOperation, skill_id: str, now: str, *, max_chars: int | None) -> Skill:
    """The new skill an ADD describes, under the id the skillbook assigned."""
    section = validate_section(op.section)
    issue = validate_issue(op.issue, max_chars=max_chars)
    if op.keywords is None:
        raise SkillbookError("keywords are required when adding a skill: pass 1-5 short labels")
    keywords = normalize_keywords(op.keywords)
    insight = validate_insight(section, op.insight, max_chars=max_chars)
    return Skill(
        id=skill_id, section=section, keywords=keywords, issue=issue, insight=insight, created_at=now, updated_at=now
    )


def updated(old: Skill, op: UpdateOperation, now: str, *, max_chars: int | None) -> Skill:
    """`old` with the operation's issue, and its keywords / insight when given; a text change drops the vector."""
    issue = validate_issue(op.issue, max_chars=max_chars)
    keywords = normalize_keywords(op.keywords) if op.keywords is not None else list(old.keywords)
    insight = old.insight if op.insight is None else validate_insight(old.section, op.insight, max_chars=max_chars)
    changed = (issue, insight, keywords) != (old.issue, old.insight, old.keywords)
    return evolve(
        old,
        issue=issue,
        insight=insight,
        keywords=keywords,
        embedding=None if changed else old.embedding,
        updated_at=now,
    )


def tagged(old: Skill, op: UpdateOperation, now: str) -> Skill:
    """`old` with one more use counted: delta 1 helpful, -1 harmful, 0 neutral (an integer, not `True` or 1.0)."""
    delta = op.delta
    if type(delta) is not int or delta not in (-1, 0, 1):
        raise SkillbookError(
            f"delta must be -1 (harmful), 0 (neutral) or 1 (helpful), as an integer; got {delta!r} "
            f"({type(delta).__name__})"
        )
    return evolve(
        old,
        used_count=old.used_count + 1,
        helpful_count=old.helpful_count + (delta == 1),
        harmful_count=old.harmful_count + (delta == -1),
        neutral_count=old.neutral_count + (delta == 0),
        updated_at=now,
    )


def removed(old: Skill, op: UpdateOperation, now: str) -> Skill:
    """`old`, deactivated; the reason is required."""
    if not isinstance(op.reason, str) or not op.reason.strip():
        raise SkillbookError("reason is required to remove a skill: say why it is harmful or outdated")
    return evolve(old, active=False, updated_at=now)


def quarantined(old: Skill, op: UpdateOperation, now: str) -> Skill:
    """`old` quarantined (`QUARANTINE`) or released (`RELEASE`); the reason is required."""
    quarantining = op.type == "QUARANTINE"
    if not isinstance(op.reason, str) or not op.reason.strip():
        verb = "quarantine" if quarantining else "release"
        raise SkillbookError(f"reason is required to {verb} a skill: say why, for the audit log")
    if quarantining and old.quarantine is not None:
        raise SkillbookError(
            f"skill {old.id} is already quarantined ({old.quarantine.reason}): release it first to quarantine it again"
        )
    if not quarantining and old.quarantine is None:
        raise SkillbookError(f"skill {old.id} is not quarantined, so there is nothing to release")
    record = Quarantine(reason=op.reason.strip(), evidence=tuple(op.evidence or ()), timestamp=now)
    return evolve(old, quarantine=record if quarantining else None, updated_at=now)


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


def evolve(obj: _T, **changes: object) -> _T:
    """A copy of the dataclass `obj` with `changes` (already valid): `dataclasses.replace` without running
    `__init__` again, several times faster; for the skillbook's records, whose constructors only set defaults."""
    unknown = changes.keys() - obj.__dict__.keys()
    if unknown:
        raise TypeError(f"{type(obj).__name__} has no field(s) {sorted(unknown)}")
    new = object.__new__(type(obj))
    new.__dict__.update(obj.__dict__)
    new.__dict__.update(changes)
    return new
