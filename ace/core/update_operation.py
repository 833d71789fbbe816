"""`UpdateOperation`: one entry of the skillbook's audit log, and the unit of a batch of mutations."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, get_args

from ace.core.insight_source import utc_now
from ace.core.shared_values import SharedValues

__all__ = ["AS_SKILL", "OperationKind", "UpdateOperation", "compact_entry", "expand_entry", "logged"]

OperationKind = Literal["ADD", "UPDATE", "TAG", "REMOVE", "PURGE", "QUARANTINE", "RELEASE"]
_KINDS: frozenset[str] = frozenset(get_args(OperationKind))
_KIND_NAMES: dict[str, OperationKind] = {kind: kind for kind in get_args(OperationKind)}
_SECTION_NAMES: dict[str | None, str] = {"context": "context", "harness": "harness"}
_TEXTS = ("skill_id", "section", "issue", "insight", "reason", "trace_uid")
AS_SKILL: tuple[str, ...] = ("issue", "insight", "keywords")
"""Fields an audit-log entry in a file leaves to its skill: `"as_skill": [...]` names those whose values are the
skill's current ones (stored once, in the skill); the rest of the entry is written out. Lossless: a reader fills
them from the skill read from the same file (`from_dict`), before anything (a journal) changes the skill."""


@dataclass(frozen=True, kw_only=True, slots=True)
class UpdateOperation:
    """A skill mutation: what was asked (`type`, target, new values) and, once applied, when and from where.

    The same shape serves as a request to `Skillbook.apply_operations` and as the logged record.
    """

    type: OperationKind
    skill_id: str | None = None
    """Target skill; `None` for ADD requests (the skillbook assigns the id and logs it)."""
    section: str | None = None
    issue: str | None = None
    insight: str | None = None
    keywords: list[str] | None = None
    delta: int | None = None
    """TAG only: -1 harmful, 0 neutral, 1 helpful."""
    reason: str | None = None
    """REMOVE / PURGE / QUARANTINE / RELEASE only: why the skill was taken out (or brought back)."""
    evidence: list[str] | None = None
    """QUARANTINE only: the traces (`trace_uid`s) with harmful evidence the decision rests on."""
    trace_uid: str | None = None
    """The trace the mutation came from (`InsightSource.trace_uid`)."""
    timestamp: str = field(default_factory=utc_now)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict with a fixed key order; `evidence` only when set (a QUARANTINE)."""
        out: dict[str, Any] = {
            "type": self.type,
            "skill_id": self.skill_id,
            "section": self.section,
            "issue": self.issue,
            "insight": self.insight,
            "keywords": list(self.keywords) if self.keywords is not None else None,
            "delta": self.delta,
            "reason": self.reason,
            "trace_uid": self.trace_uid,
            "timestamp": self.timestamp,
        }
        if self.evidence is not None:
            out["evidence"] = list(self.evidence)
        return out

    @classmethod
    def from_dict(
        cls, data: dict[str, Any], *, shared: SharedValues | None = None, skills: Mapping[str, SkillTexts] | None = None
    ) -> UpdateOperation:
        """Inverse of `to_dict`; raises `ValueError` naming the bad field.

        `skills` (those already read from the same file) and `shared` (`SharedValues`): the entry's texts, keyword
        list and time are its skill's own objects where equal, and its other strings the file's first copy."""
        if not isinstance(data, dict):
            raise ValueError(f"operation must be an object, got {type(data).__name__}")
        if not data.keys() <= _KEYS:
            raise ValueError(f"operation has unknown field(s) {sorted(set(data) - _KEYS)}")
        as_skill = data.get("as_skill")
        if as_skill is not None:
            data = _from_skill(data, as_skill, skills)
        get = data.get
        kind = get("type")
        if not isinstance(kind, str) or kind not in _KINDS:
            raise ValueError(f"operation field 'type' must be one of {sorted(_KINDS)}, got {kind!r}")
        keywords = get("keywords")
        if keywords is not None and (not isinstance(keywords, list) or not all(isinstance(k, str) for k in keywords)):
            raise ValueError(f"operation field 'keywords' must be a list of strings, got {keywords!r}")
        texts = skill_id, section, issue, insight, reason, trace_uid = tuple(map(get, _TEXTS))
        for name, value in zip(_TEXTS, texts, strict=True):
            if value is not None and not isinstance(value, str):
                raise ValueError(f"operation field {name!r} must be a string or null, got {value!r}")
        evidence = get("evidence")
        if evidence is not None and (not isinstance(evidence, list) or not all(isinstance(e, str) for e in evidence)):
            raise ValueError(f"operation field 'evidence' must be a list of trace ids, got {evidence!r}")
        delta = get("delta")
        if delta is not None and (not isinstance(delta, int) or isinstance(delta, bool)):
            raise ValueError(f"operation field 'delta' must be an integer or null, got {delta!r}")
        timestamp = get("timestamp")
        if not isinstance(timestamp, str):
            raise ValueError("operation field 'timestamp' must be an ISO timestamp string")
        kind, section = _KIND_NAMES[kind], _SECTION_NAMES.get(section, section)  # one string for every entry
        skill = skills.get(skill_id) if skills is not None and skill_id is not None else None
        if skill is not None:  # the entry that made the skill as it is holds the same texts: one copy of each
            skill_id = skill.id
            issue = skill.issue if issue == skill.issue else issue
            insight = skill.insight if insight == skill.insight else insight
            keywords = skill.keywords if keywords == skill.keywords else keywords
            timestamp = skill.updated_at if timestamp == skill.updated_at else timestamp
            timestamp = skill.created_at if timestamp == skill.created_at else timestamp
        if shared is not None:
            text = shared.text
            trace_uid = text(trace_uid) if trace_uid is not None else None
            if keywords is not None and (skill is None or keywords is not skill.keywords):
                keywords = [text(k) for k in keywords]
        return logged(kind, skill_id, section, issue, insight, keywords, delta, reason, evidence, trace_uid, timestamp)


class SkillTexts(Protocol):
    """What an audit-log entry read from a file may share with its skill (a `Skill` is one)."""

    @property
    def id(self) -> str: ...
    @property
    def issue(self) -> str: ...
    @property
    def insight(self) -> str | None: ...
    @property
    def keywords(self) -> list[str]: ...
    @property
    def created_at(self) -> str: ...
    @property
    def updated_at(self) -> str: ...


class _Draft(UpdateOperation):
    """Same layout as `UpdateOperation`, but assignable: an entry is filled with plain slot stores (the frozen
    constructor's `object.__setattr__` per field costs 4x more), then becomes an `UpdateOperation`."""

    __slots__ = ()
    __setattr__ = object.__setattr__
    __delattr__ = object.__delattr__


def logged(
    kind: OperationKind,
    skill_id: str | None,
    section: str | None,
    issue: str | None,
    insight: str | None,
    keywords: list[str] | None,
    delta: int | None,
    reason: str | None,
    evidence: list[str] | None,
    trace_uid: str | None,
    timestamp: str,
) -> UpdateOperation:
    """An `UpdateOperation` of values already checked (an audit-log entry the skillbook writes or reads)."""
    entry: Any = object.__new__(_Draft)
    entry.type = kind
    entry.skill_id = skill_id
    entry.section = section
    entry.issue = issue
    entry.insight = insight
    entry.keywords = keywords
    entry.delta = delta
    entry.reason = reason
    entry.evidence = evidence
    entry.trace_uid = trace_uid
    entry.timestamp = timestamp
    entry.__class__ = UpdateOperation
    return entry  # type: ignore[no-any-return]


def compact_entry(entry: dict[str, Any], skill: SkillTexts | None) -> dict[str, Any]:
    """`entry` (`UpdateOperation.to_dict`) as a file stores it beside `skill`: the `AS_SKILL` fields equal to the
    skill's current values left out and named in `as_skill`."""
    if skill is None:
        return entry
    same = [name for name in AS_SKILL if entry.get(name) is not None and entry[name] == getattr(skill, name)]
    if not same:
        return entry
    return {**{k: v for k, v in entry.items() if k not in same}, "as_skill": same}


def expand_entry(entry: Any, skill: Mapping[str, Any] | None) -> Any:
    """A stored entry with the fields it leaves to its skill filled from `skill` (as stored: `Skill.to_dict`),
    for code that changes the skills of a raw document (`ace.core.journal`); anything else unchanged."""
    if not isinstance(entry, dict) or skill is None or not isinstance(entry.get("as_skill"), list):
        return entry
    named = entry["as_skill"]
    if not set(named) <= set(AS_SKILL) or any(name in entry for name in named):
        return entry  # malformed: left for `from_dict` to name
    return {**{k: v for k, v in entry.items() if k != "as_skill"}, **{name: skill.get(name) for name in named}}


def _from_skill(data: dict[str, Any], as_skill: Any, skills: Mapping[str, SkillTexts] | None) -> dict[str, Any]:
    """`data` with the fields it names in `as_skill` taken from its skill; raises `ValueError` when it cannot be."""
    if not isinstance(as_skill, list) or not all(isinstance(n, str) and n in AS_SKILL for n in as_skill):
        raise ValueError(f"operation field 'as_skill' must list some of {list(AS_SKILL)}, got {as_skill!r}")
    if any(name in data for name in as_skill):
        raise ValueError(f"operation names {as_skill} in 'as_skill' and also holds some of them")
    skill_id = data.get("skill_id")
    skill = skills.get(skill_id) if skills is not None and isinstance(skill_id, str) else None
    if skill is None:
        raise ValueError(f"operation takes {as_skill} from skill {skill_id!r}, which the file does not hold")
    return {**{k: v for k, v in data.items() if k != "as_skill"}, **{n: getattr(skill, n) for n in as_skill}}


_KEYS = frozenset(
    {
        "type",
        "skill_id",
        "section",
        "issue",
        "insight",
        "keywords",
        "delta",
        "reason",
        "evidence",
        "trace_uid",
        "timestamp",
        "as_skill",
    }
)
