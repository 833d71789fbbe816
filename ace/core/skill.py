"""`Skill`, the skillbook's one record, and the invariants every skill obeys.

A `Skill` never changes once made: every mutation makes a new one (`draft` of the old, changed, `sealed`), so a
skill handed out stays as it was, and its fields are slots (a skill is ~150 bytes before its texts, not ~400).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any, TypeAlias

import numpy as np
import numpy.typing as npt
from typing_extensions import TypedDict  # pydantic builds tool-result schemas only from this one on 3.11

from ace.core.insight_source import InsightSource, utc_now
from ace.core.shared_values import SharedValues
from ace.core.source_table import SourceRecords, SourceTable
from ace.core.text_rules import (
    MAX_KEYWORD_LENGTH,
    VALID_SECTIONS,
    Section,
    keyword_list,
    normalize_keywords,
    validate_insight,
    validate_issue,
    validate_section,
    validate_skill_id,
)
from ace.exceptions import SkillbookError, SkillFieldError

__all__ = [
    "MAX_KEYWORD_LENGTH",
    "SKILL_FIELD_METHODS",
    "VALID_SECTIONS",
    "Embedding",
    "Quarantine",
    "Section",
    "Skill",
    "SkillSummary",
    "draft",
    "embedding_input",
    "embedding_input_hash",
    "keyword_list",
    "normalize_keywords",
    "sealed",
    "skill_summary",
    "validate_insight",
    "validate_issue",
    "validate_section",
]

Embedding: TypeAlias = npt.NDArray[np.float32]

_TEXT_FIX = "use skillbook.update_skill({id!r}, issue, keywords, insight) (omit keywords or insight to keep them)"
_TAG_FIX = "use skillbook.tag_skill({id!r}, delta) with delta 1 (helpful), -1 (harmful) or 0 (neutral)"
_RECORDED = "the skillbook records it with each add_skill / update_skill / tag_skill / remove_skill"
SKILL_FIELD_METHODS: dict[str, str] = {
    "embedding": "use skillbook.set_embedding({id!r}, vector) (a 1-D float vector, or None to clear it)",
    "issue": _TEXT_FIX,
    "insight": _TEXT_FIX,
    "keywords": _TEXT_FIX,
    "active": "use skillbook.remove_skill({id!r}, reason) (or purge({id!r}) to delete it for good)",
    "quarantine": "use skillbook.quarantine_skill({id!r}, reason) or release_skill({id!r}, reason)",
    "used_count": _TAG_FIX,
    "helpful_count": _TAG_FIX,
    "harmful_count": _TAG_FIX,
    "neutral_count": _TAG_FIX,
    "occurrences": _RECORDED,
    "updated_at": _RECORDED,
    "created_at": "it is set once, by add_skill",
    "id": "ids are assigned by add_skill and never change",
    "section": "a skill keeps its section: add a new skill in the other section and remove this one",
}
"""The skillbook method that changes each field (every field of `Skill`), named by the error an assignment raises."""


@dataclass(frozen=True, kw_only=True, slots=True)
class Quarantine:
    """Why a skill is out of service though still active: the reason, the harmful traces, since when."""

    reason: str
    evidence: tuple[str, ...] = ()
    """`trace_uid`s of the traces whose reflections tagged the skill harmful (empty for a person's decision)."""
    timestamp: str = field(default_factory=utc_now)
    """When the skill was quarantined (ISO 8601, UTC)."""

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict with a fixed key order."""
        return {"reason": self.reason, "evidence": list(self.evidence), "timestamp": self.timestamp}

    @classmethod
    def from_dict(cls, data: object) -> Quarantine:
        """Inverse of `to_dict`; raises `ValueError` naming the bad field."""
        if not isinstance(data, dict) or set(data) != {"reason", "evidence", "timestamp"}:
            raise ValueError(f"field 'quarantine' must be an object with reason, evidence and timestamp, got {data!r}")
        reason, evidence, timestamp = data["reason"], data["evidence"], data["timestamp"]
        if not isinstance(reason, str) or not reason.strip():
            raise ValueError("quarantine field 'reason' must be non-empty text")
        if not isinstance(evidence, list) or not all(isinstance(e, str) for e in evidence):
            raise ValueError(f"quarantine field 'evidence' must be a list of trace ids, got {evidence!r}")
        if not isinstance(timestamp, str):
            raise ValueError("quarantine field 'timestamp' must be an ISO timestamp string")
        return cls(reason=reason, evidence=tuple(evidence), timestamp=timestamp)


@dataclass(kw_only=True, frozen=True, slots=True)
class Skill:
    """One learned skill: a problem (`issue`, scope inline), the action (`insight`) and labels (`keywords`)."""

    id: str
    section: Section
    """`context` (the agent should act differently) or `harness` (a problem of the runtime around it)."""
    keywords: list[str]
    """Fine-grained, normalised category labels; never empty. Shared with the skill's other versions and its
    audit-log entries: read it, never change it."""
    issue: str
    """The problem and where it applies, in prose."""
    insight: str | None
    """The imperative action; required for `context`, optional for `harness`."""
    occurrences: tuple[InsightSource, ...] = ()
    """Append-only audit chain: one entry per mutation (a list given to the constructor is stored as a tuple)."""
    active: bool = True
    quarantine: Quarantine | None = None
    """Set while the skill is quarantined: kept and active, but out of every prompt and search (`visible`)."""
    used_count: int = 0
    helpful_count: int = 0
    harmful_count: int = 0
    neutral_count: int = 0
    embedding: Embedding | None = None
    """Cached vector of `embedding_input(...)`; stored in the `.npz` sidecar, never in JSON."""
    created_at: str = field(default_factory=utc_now)
    updated_at: str = field(default_factory=utc_now)

    __hash__ = None  # type: ignore[assignment]  # compared by value, like the list it holds: not hashable

    def __post_init__(self) -> None:
        if type(self.occurrences) is not tuple:
            object.__setattr__(self, "occurrences", tuple(self.occurrences))

    @property
    def visible(self) -> bool:
        """Active and not quarantined: the one filter by which prompts, search and the agent's top-k hide skills."""
        return self.active and self.quarantine is None

    @property
    def removal_reason(self) -> str | None:
        """Why the skill was soft-removed (from its audit chain), or `None` while it is active."""
        if self.active:
            return None
        for source in reversed(self.occurrences):
            if source.operation_type == "REMOVE":
                return source.learning_text
        return None

    def same_text(self, other: Skill) -> bool:
        """Equal in what an edit rewrites (issue, insight, keywords, whether it is visible); counters may differ,
        tags commute."""
        return (self.issue, self.insight, self.keywords, self.active, self.quarantine is None) == (
            other.issue,
            other.insight,
            other.keywords,
            other.active,
            other.quarantine is None,
        )

    def embedding_text(self) -> str:
        """The text this skill is embedded and searched by (the spec's formula)."""
        return embedding_input(self.issue, self.insight, self.keywords)

    def to_dict(self, sources: SourceTable | None = None) -> dict[str, Any]:
        """JSON-ready dict with a fixed key order; the embedding is left out (it lives in the sidecar), and
        `quarantine` is only present while the skill is quarantined. `sources`: the file's provenance table, for the
        occurrences to point at its records (`ace.core.source_table`) instead of being written whole."""
        out: dict[str, Any] = {
            "id": self.id,
            "section": self.section,
            "keywords": list(self.keywords),
            "issue": self.issue,
            "insight": self.insight,
            "active": self.active,
            "used_count": self.used_count,
            "helpful_count": self.helpful_count,
            "harmful_count": self.harmful_count,
            "neutral_count": self.neutral_count,
            "created_at": self.created_at,
            "updated_at": self.updated_at,
            "occurrences": [o.to_dict() for o in self.occurrences]
            if sources is None
            else [sources.use(o) for o in self.occurrences],
        }
        if self.quarantine is not None:
            out["quarantine"] = self.quarantine.to_dict()
        return out

    @classmethod
    def from_dict(
        cls, data: dict[str, Any], *, shared: SharedValues | None = None, sources: SourceRecords | None = None
    ) -> Skill:
        """Inverse of `to_dict`, checking every invariant; raises `ValueError` naming the field.

        `shared`: the values already read from the same file (`SharedValues`), for equal strings, keyword labels
        and provenance entries to be stored once. `sources`: the file's provenance records, which its occurrences
        may point at (else each is written whole)."""
        if not isinstance(data, dict):
            raise ValueError(f"skill must be an object, got {type(data).__name__}")
        unknown = data.keys() - _SKILL_KEYS
        if unknown:
            raise ValueError(f"unknown skill field(s) {sorted(unknown)}")
        if not data.keys() >= _REQUIRED_KEYS:
            raise ValueError(f"missing skill field(s) {[k for k in _REQUIRED if k not in data]}")
        skill_id = data["id"]
        if not isinstance(skill_id, str) or not skill_id:
            raise ValueError(f"skill field 'id' must be a non-empty string, got {skill_id!r}")
        section = validate_section(data["section"])
        validate_skill_id(skill_id, section)
        keywords = data["keywords"]
        stored = shared.labels(keywords) if shared is not None else None  # every label seen and checked before
        if stored is None:
            stored = normalize_keywords(keywords)
            if stored != keywords:
                raise ValueError(f"skill {skill_id}: keywords {keywords!r} are not normalised (expected {stored!r})")
            if shared is not None:
                stored = shared.learn_labels(stored)
        try:
            issue = validate_issue(data["issue"])
            insight = validate_insight(section, data.get("insight"))
        except SkillbookError as e:
            raise ValueError(f"skill {skill_id}: {e}") from None
        occurrences = data["occurrences"]
        if not isinstance(occurrences, list):
            raise ValueError(f"skill {skill_id}: field 'occurrences' must be a list")
        get = data.get
        counters = [get(name, 0) for name in _COUNTERS]
        if not all(type(n) is int and n >= 0 for n in counters):  # else the check that accepts int subclasses
            counters = [_counter(n, name, skill_id) for n, name in zip(counters, _COUNTERS, strict=True)]
        active = get("active", True)
        if not isinstance(active, bool):
            raise ValueError(f"skill {skill_id}: field 'active' must be true or false, got {active!r}")
        created_at = _timestamp(get("created_at"), "created_at", skill_id)
        updated_at = _timestamp(get("updated_at"), "updated_at", skill_id)
        if shared is not None:
            created_at, updated_at = shared.time(created_at), shared.time(updated_at)
        try:
            quarantine = Quarantine.from_dict(data["quarantine"]) if "quarantine" in data else None
        except ValueError as e:
            raise ValueError(f"skill {skill_id}: {e}") from None
        try:
            if sources is None:
                chain = tuple([InsightSource.from_dict(o, shared=shared) for o in occurrences])
            else:
                chain = tuple([sources.read(o) for o in occurrences])
        except ValueError as e:
            raise ValueError(f"skill {skill_id}: {e}") from None
        new = draft()
        new.id, new.section, new.keywords, new.issue, new.insight = skill_id, section, stored, issue, insight
        new.occurrences, new.active, new.quarantine = chain, active, quarantine
        new.used_count, new.helpful_count, new.harmful_count, new.neutral_count = counters
        new.created_at, new.updated_at = created_at, updated_at
        return sealed(new)


def _refuse_change(skill: Skill, name: str, value: object = None) -> None:
    """`Skill.__setattr__` / `__delattr__`: every field is the skillbook's to change, through the method named."""
    if name in SKILL_FIELD_METHODS:
        raise SkillFieldError(
            f"Skill.{name} cannot be assigned: the skillbook validates and records every change; "
            f"{SKILL_FIELD_METHODS[name].format(id=skill.id)}"
        )
    raise AttributeError(f"'Skill' object has no attribute {name!r}")


Skill.__setattr__ = _refuse_change  # type: ignore[method-assign,assignment]  # the frozen one names no method
Skill.__delattr__ = _refuse_change  # type: ignore[method-assign,assignment]


class _Draft(Skill):
    """Same layout as `Skill`, but assignable: a new version is filled field by field with plain slot stores (the
    frozen constructor's `object.__setattr__` per field costs 4x more) and then `sealed` into a `Skill`."""

    __slots__ = ()
    __setattr__ = object.__setattr__
    __delattr__ = object.__delattr__


def draft(old: Skill | None = None) -> Any:
    """An assignable copy of `old` (or, without it, a skill with the defaults and no id or texts yet): set what
    changes, then `sealed(...)` makes it a `Skill`. Only the skillbook's own mutations and loads use it."""
    new: Any = object.__new__(_Draft)
    if old is None:
        new.occurrences, new.active, new.quarantine, new.embedding = (), True, None, None
        new.used_count = new.helpful_count = new.harmful_count = new.neutral_count = 0
        return new
    new.id = old.id
    new.section = old.section
    new.keywords = old.keywords
    new.issue = old.issue
    new.insight = old.insight
    new.occurrences = old.occurrences
    new.active = old.active
    new.quarantine = old.quarantine
    new.used_count = old.used_count
    new.helpful_count = old.helpful_count
    new.harmful_count = old.harmful_count
    new.neutral_count = old.neutral_count
    new.embedding = old.embedding
    new.created_at = old.created_at
    new.updated_at = old.updated_at
    return new


def sealed(new: Any) -> Skill:
    """The `draft` as a `Skill`: from here on no field can be assigned."""
    new.__class__ = Skill
    return new  # type: ignore[no-any-return]


_COUNTERS = ("used_count", "helpful_count", "harmful_count", "neutral_count")


def _counter(value: object, name: str, skill_id: str) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise ValueError(f"skill {skill_id}: field {name!r} must be a non-negative integer, got {value!r}")
    return value


def _timestamp(value: object, name: str, skill_id: str) -> str:
    if not isinstance(value, str):
        raise ValueError(f"skill {skill_id}: field {name!r} must be an ISO timestamp string, got {value!r}")
    return value


_REQUIRED = ("id", "section", "keywords", "issue", "occurrences")
_REQUIRED_KEYS = frozenset(_REQUIRED)
_SKILL_KEYS = frozenset(
    {
        "id",
        "section",
        "keywords",
        "issue",
        "insight",
        "active",
        "quarantine",
        "used_count",
        "helpful_count",
        "harmful_count",
        "neutral_count",
        "created_at",
        "updated_at",
        "occurrences",
    }
)


def embedding_input(issue: str, insight: str | None, keywords: list[str]) -> str:
    """The spec's embedding text: issue, then insight, then `Keywords: a, b`, joined by blank lines."""
    parts = [issue]
    if insight is not None:
        parts.append(insight)
    if keywords:
        parts.append(f"Keywords: {', '.join(keywords)}")
    return "\n\n".join(parts)


def embedding_input_hash(text: str) -> str:
    """Short stable fingerprint of an embedding input, so a cached vector is only reused for the same text."""
    return hashlib.blake2b(text.encode("utf-8"), digest_size=12).hexdigest()


class SkillSummary(TypedDict):
    """The fields an LLM needs to reason about a skill: no timestamps, no audit chain."""

    id: str
    section: Section
    keywords: list[str]
    issue: str
    insight: str | None
    helpful: int
    harmful: int
    neutral: int


def skill_summary(skill: Skill) -> SkillSummary:
    """`skill` as the plain data a prompt or a tool result shows (`Skillbook.to_llm_dict`, `search_skills`)."""
    return {
        "id": skill.id,
        "section": skill.section,
        "keywords": list(skill.keywords),
        "issue": skill.issue,
        "insight": skill.insight,
        "helpful": skill.helpful_count,
        "harmful": skill.harmful_count,
        "neutral": skill.neutral_count,
    }
