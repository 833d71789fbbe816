"""`InsightSource`: where a skill mutation came from (which trace, epoch, reflection and operation)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal, get_args

__all__ = ["InsightSource", "OperationType", "utc_now"]

OperationType = Literal["ADD", "UPDATE", "TAG", "REMOVE", "QUARANTINE", "RELEASE"]
_OPERATION_TYPES: frozenset[str] = frozenset(get_args(OperationType))


def utc_now() -> str:
    """The current time as an ISO 8601 string in UTC, the format of every ACE timestamp."""
    return datetime.now(UTC).isoformat(timespec="microseconds")


@dataclass(frozen=True, kw_only=True)
class InsightSource:
    """The provenance of one skill mutation; appended to `Skill.occurrences`, never edited."""

    trace_uid: str
    """Globally unique id of the trace (source system + trace id)."""
    source_system: str
    """The system that produced the trace, e.g. `tau-bench-airline`."""
    trace_id: str
    """The trace's id inside its source system."""
    sample_question: str | None = None
    """The task or question of the trace, for humans reading the audit chain."""
    epoch: int | None = None
    """Training epoch in which the mutation happened."""
    operation_type: OperationType | None = None
    """The mutation this entry records; set by the skillbook when it appends the entry."""
    error_identification: str | None = None
    """What the reflection found wrong in the trace."""
    learning_text: str | None = None
    """What was learned (the reflection's key insight, or the op-specific text)."""
    timestamp: str = field(default_factory=utc_now)
    """When the entry was made (ISO 8601, UTC)."""
    reviewer: str | None = None
    """Who accepted the edit from a review queue (`ace-eval review accept`); `None`: applied without review."""
    reviewed_at: str | None = None
    """When the reviewer accepted it (ISO 8601, UTC); `timestamp` stays the time the edit was proposed."""

    @classmethod
    def manual(cls, note: str | None = None) -> InsightSource:
        """A source for mutations made by a person or a script rather than from a trace."""
        return cls(trace_uid="manual", source_system="manual", trace_id="manual", learning_text=note)

    def derive(
        self,
        operation_type: OperationType,
        *,
        error_identification: str | None = None,
        learning_text: str | None = None,
    ) -> InsightSource:
        """A per-operation copy: same trace identity and epoch, new operation, texts and timestamp."""
        return dataclasses.replace(
            self,
            operation_type=operation_type,
            error_identification=error_identification
            if error_identification is not None
            else self.error_identification,
            learning_text=learning_text if learning_text is not None else self.learning_text,
            timestamp=utc_now(),
        )

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready dict with every field, in declaration order (the review fields only when set)."""
        out: dict[str, Any] = {
            "trace_uid": self.trace_uid,
            "source_system": self.source_system,
            "trace_id": self.trace_id,
            "sample_question": self.sample_question,
            "epoch": self.epoch,
            "operation_type": self.operation_type,
            "error_identification": self.error_identification,
            "learning_text": self.learning_text,
            "timestamp": self.timestamp,
        }
        if self.reviewer is not None or self.reviewed_at is not None:
            out["reviewer"] = self.reviewer
            out["reviewed_at"] = self.reviewed_at
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> InsightSource:
        """Inverse of `to_dict`; raises `ValueError` naming the field that is missing, unknown or mistyped."""
        if not isinstance(data, dict):
            raise ValueError(f"insight source must be an object, got {type(data).__name__}")
        unknown = set(data) - _FIELD_NAMES
        if unknown:
            raise ValueError(f"insight source has unknown field(s) {sorted(unknown)}; expected {_FIELD_ORDER}")
        for name in ("trace_uid", "source_system", "trace_id", "timestamp"):
            if not isinstance(data.get(name), str):
                raise ValueError(f"insight source field {name!r} must be a string, got {data.get(name)!r}")
        for name in ("sample_question", "error_identification", "learning_text", "reviewer", "reviewed_at"):
            value = data.get(name)
            if value is not None and not isinstance(value, str):
                raise ValueError(f"insight source field {name!r} must be a string or null, got {value!r}")
        epoch = data.get("epoch")
        if epoch is not None and (not isinstance(epoch, int) or isinstance(epoch, bool)):
            raise ValueError(f"insight source field 'epoch' must be an integer or null, got {epoch!r}")
        op = data.get("operation_type")
        if op is not None and op not in _OPERATION_TYPES:
            raise ValueError(
                f"insight source field 'operation_type' must be one of {sorted(_OPERATION_TYPES)}, got {op!r}"
            )
        return cls(
            trace_uid=data["trace_uid"],
            source_system=data["source_system"],
            trace_id=data["trace_id"],
            sample_question=data.get("sample_question"),
            epoch=epoch,
            operation_type=op,
            error_identification=data.get("error_identification"),
            learning_text=data.get("learning_text"),
            timestamp=data["timestamp"],
            reviewer=data.get("reviewer"),
            reviewed_at=data.get("reviewed_at"),
        )


_FIELD_ORDER = [f.name for f in dataclasses.fields(InsightSource)]
_FIELD_NAMES = frozenset(_FIELD_ORDER)
