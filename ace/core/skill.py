"""`Skill`, the skillbook's one record, and the invariants every skill obeys."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Literal, TypeAlias

import numpy as np
import numpy.typing as npt
from typing_extensions import TypedDict  # pydantic builds tool-result schemas only from this one on 3.11

from ace.core.insight_source import InsightSource, utc_now
from ace.core.text_rules import check_text, validate_skill_id
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
    "embedding_input",
    "embedding_input_hash",
    "normalize_keywords",
    "skill_summary",
    "validate_insight",
    "validate_issue",
    "validate_section",
]

Section = Literal["context", "harness"]
VALID_SECTIONS: frozenset[str] = frozenset({"context", "harness"})
MAX_KEYWORD_LENGTH = 40
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
_NON_IDENT = re.compile(r"[^\w.]+")
_UNDERSCORES = re.compile(r"_{2,}")


@dataclass(frozen=True, kw_only=True)
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


@dataclass(kw_only=True)
class Skill:
    """One learned skill: a problem (`issue`, scope inline), the action (`insight`) and labels (`keywords`)."""

    id: str
    section: Section
    """`context` (the agent should act differently) or `harness` (a problem of the runtime around it)."""
    keywords: list[str]
    """Fine-grained, normalised category labels; never empty."""
    issue: str
    """The problem and where it applies, in prose."""
    insight: str | None
    """The imperative action; required for `context`, optional for `harness`."""
    occurrences: list[InsightSource] = field(default_factory=list[InsightSource])
    """Append-only audit chain: one entry per mutation."""
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

    def __post_init__(self) -> None:
        object.__setattr__(self, "_sealed", True)

    def __setattr__(self, name: str, value: object) -> None:
        """Fields are set once, by the constructor: every change goes through the skillbook, which validates it,
        records its provenance and keeps the sidecar and the search index in step."""
        if self.__dict__.get("_sealed") and name in SKILL_FIELD_METHODS:
            raise SkillFieldError(
                f"Skill.{name} cannot be assigned: the skillbook validates and records every change; "
                f"{SKILL_FIELD_METHODS[name].format(id=self.id)}"
            )
        object.__setattr__(self, name, value)

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

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict with a fixed key order; the embedding is left out (it lives in the sidecar), and
        `quarantine` is only present while the skill is quarantined."""
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
            "occurrences": [o.to_dict() for o in self.occurrences],
        }
        if self.quarantine is not None:
            out["quarantine"] = self.quarantine.to_dict()
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Skill:
        """Inverse of `to_dict`, checking every invariant; raises `ValueError` naming the field."""
        if not isinstance(data, dict):
            raise ValueError(f"skill must be an object, got {type(data).__name__}")
        unknown = set(data) - _SKILL_KEYS
        if unknown:
            raise ValueError(f"unknown skill field(s) {sorted(unknown)}")
        missing = [k for k in ("id", "section", "keywords", "issue", "occurrences") if k not in data]
        if missing:
            raise ValueError(f"missing skill field(s) {missing}")
        skill_id = data["id"]
        if not isinstance(skill_id, str) or not skill_id:
            raise ValueError(f"skill field 'id' must be a non-empty string, got {skill_id!r}")
        section = validate_section(data["section"])
        validate_skill_id(skill_id, section)
        keywords = data["keywords"]
        stored = normalize_keywords(keywords)
        if stored != keywords:
            raise ValueError(f"skill {skill_id}: keywords {keywords!r} are not normalised (expected {stored!r})")
        try:
            issue = validate_issue(data["issue"])
            insight = validate_insight(section, data.get("insight"))
        except SkillbookError as e:
            raise ValueError(f"skill {skill_id}: {e}") from None
        occurrences = data["occurrences"]
        if not isinstance(occurrences, list):
            raise ValueError(f"skill {skill_id}: field 'occurrences' must be a list")
        counters = [_counter(data, name, skill_id) for name in _COUNTERS]
        active = data.get("active", True)
        if not isinstance(active, bool):
            raise ValueError(f"skill {skill_id}: field 'active' must be true or false, got {active!r}")
        created_at, updated_at = (_timestamp(data, name, skill_id) for name in ("created_at", "updated_at"))
        try:
            quarantine = Quarantine.from_dict(data["quarantine"]) if "quarantine" in data else None
        except ValueError as e:
            raise ValueError(f"skill {skill_id}: {e}") from None
        try:
            chain = [InsightSource.from_dict(o) for o in occurrences]
        except ValueError as e:
            raise ValueError(f"skill {skill_id}: {e}") from None
        return cls(
            id=skill_id,
            section=section,
            keywords=list(stored),
            issue=issue,
            insight=insight,
            occurrences=chain,
            active=active,
            quarantine=quarantine,
            used_count=counters[0],
            helpful_count=counters[1],
            harmful_count=counters[2],
            neutral_count=counters[3],
            created_at=created_at,
            updated_at=updated_at,
        )


_COUNTERS = ("used_count", "helpful_count", "harmful_count", "neutral_count")


def _counter(data: dict[str, Any], name: str, skill_id: str) -> int:
    value = data.get(name, 0)
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise ValueError(f"skill {skill_id}: field {name!r} must be a non-negative integer, got {value!r}")
    return value


def _timestamp(data: dict[str, Any], name: str, skill_id: str) -> str:
    value = data.get(name)
    if not isinstance(value, str):
        raise ValueError(f"skill {skill_id}: field {name!r} must be an ISO timestamp string, got {value!r}")
    return value


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


def validate_section(section: object) -> Section:
    """Return `section` if it is `context` or `harness`; raise naming the fix otherwise."""
    if section == "context":
        return "context"
    if section == "harness":
        return "harness"
    raise SkillbookError(
        f"section must be one of {sorted(VALID_SECTIONS)}, got {section!r}: use 'context' for guidance the "
        "agent should follow and 'harness' for problems of the runtime around it; put finer categories in "
        "keywords"
    )


def validate_issue(issue: object, *, max_chars: int | None = None) -> str:
    """The issue text, stripped; every mutation needs a non-empty one, of plain text, at most `max_chars` long."""
    if not isinstance(issue, str) or not issue.strip():
        raise SkillbookError(
            f"issue is required and must be non-empty text, got {issue!r}: describe the problem and where it applies"
        )
    return check_text("issue", issue.strip(), max_chars=max_chars)


def validate_insight(section: Section, insight: object, *, max_chars: int | None = None) -> str | None:
    """The insight text, stripped: required for `context`, optional (`None` when blank) for `harness`; plain text
    of at most `max_chars`."""
    if insight is not None and not isinstance(insight, str):
        raise SkillbookError(f"insight must be text or null, got {type(insight).__name__}")
    text = insight.strip() if isinstance(insight, str) else ""
    if section == "context" and not text:
        raise SkillbookError(
            "insight is required for a context skill: pass insight= with the imperative action the agent "
            "should take (or use section='harness' for a problem with no agent-side action)"
        )
    return check_text("insight", text, max_chars=max_chars) or None


def normalize_keywords(keywords: object) -> list[str]:
    """Keywords as short lowercase identifiers (`Booking API` -> `booking_api`), de-duplicated, order kept.

    Raises `SkillbookError` when `keywords` is not a list of strings, when a label is longer than
    `MAX_KEYWORD_LENGTH` after normalisation, or when nothing is left.
    """
    if isinstance(keywords, str) or not isinstance(keywords, Iterable):
        raise SkillbookError(
            f"keywords must be a list of short labels, got {type(keywords).__name__}: pass e.g. "
            "['airline', 'booking_api']"
        )
    out: list[str] = []
    seen: set[str] = set()
    for raw in keywords:
        if not isinstance(raw, str):
            raise SkillbookError(f"keywords must be strings, got {raw!r}")
        if not raw.isprintable():
            check_text(f"keyword {raw!r}", raw, prose=False)
        label = _UNDERSCORES.sub("_", _NON_IDENT.sub("_", raw.strip().lower())).strip("_.")
        if not label:
            continue
        if len(label) > MAX_KEYWORD_LENGTH:
            raise SkillbookError(
                f"keyword {raw!r} is too long ({len(label)} > {MAX_KEYWORD_LENGTH} characters): keywords are "
                "short stable labels (domain, subsystem, API family); put prose in issue"
            )
        if label not in seen:
            seen.add(label)
            out.append(label)
    if not out:
        raise SkillbookError(
            "keywords must contain at least one label: pass 1-5 short labels such as the domain, subsystem, "
            "API family or behaviour category"
        )
    return out


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


def keyword_list(keywords: object) -> list[str]:
    """A copy of `keywords` as a list, refusing a bare string (which would split into letters)."""
    if isinstance(keywords, str) or not isinstance(keywords, Iterable):
        return normalize_keywords(keywords)  # always raises, with the error that names the fix
    return list(keywords)
