"""`UpdateOperation`: one entry of the skillbook's audit log, and the unit of a batch of mutations."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, get_args

from ace.core.insight_source import utc_now

__all__ = ["OperationKind", "UpdateOperation"]

OperationKind = Literal["ADD", "UPDATE", "TAG", "REMOVE", "PURGE", "QUARANTINE", "RELEASE"]
_KINDS: frozenset[str] = frozenset(get_args(OperationKind))


@dataclass(frozen=True, kw_only=True)
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
    def from_dict(cls, data: dict[str, Any]) -> UpdateOperation:
        """Inverse of `to_dict`; raises `ValueError` naming the bad field."""
        if not isinstance(data, dict):
            raise ValueError(f"operation must be an object, got {type(data).__name__}")
        unknown = set(data) - _KEYS
        if unknown:
            raise ValueError(f"operation has unknown field(s) {sorted(unknown)}")
        kind = data.get("type")
        if kind not in _KINDS:
            raise ValueError(f"operation field 'type' must be one of {sorted(_KINDS)}, got {kind!r}")
        keywords = data.get("keywords")
        if keywords is not None and (not isinstance(keywords, list) or not all(isinstance(k, str) for k in keywords)):
            raise ValueError(f"operation field 'keywords' must be a list of strings, got {keywords!r}")
        for name in ("skill_id", "section", "issue", "insight", "reason", "trace_uid"):
            value = data.get(name)
            if value is not None and not isinstance(value, str):
                raise ValueError(f"operation field {name!r} must be a string or null, got {value!r}")
        evidence = data.get("evidence")
        if evidence is not None and (not isinstance(evidence, list) or not all(isinstance(e, str) for e in evidence)):
            raise ValueError(f"operation field 'evidence' must be a list of trace ids, got {evidence!r}")
        delta = data.get("delta")
        if delta is not None and (not isinstance(delta, int) or isinstance(delta, bool)):
            raise ValueError(f"operation field 'delta' must be an integer or null, got {delta!r}")
        timestamp = data.get("timestamp")
        if not isinstance(timestamp, str):
            raise ValueError("operation field 'timestamp' must be an ISO timestamp string")
        return cls(
            type=kind,
            skill_id=data.get("skill_id"),
            section=data.get("section"),
            issue=data.get("issue"),
            insight=data.get("insight"),
            keywords=keywords,
            delta=delta,
            reason=data.get("reason"),
            evidence=evidence,
            trace_uid=data.get("trace_uid"),
            timestamp=timestamp,
        )


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
    }
)
