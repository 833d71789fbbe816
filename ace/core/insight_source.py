"""`InsightSource`: where a skill mutation came from (which trace, epoch, reflection and operation)."""

from __future__ import annotations

import dataclasses
import functools
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal, get_args

from ace.core.shared_values import SharedValues

__all__ = ["InsightSource", "OperationType", "provenance_entry", "utc_now"]

OperationType = Literal["ADD", "UPDATE", "TAG", "REMOVE", "QUARANTINE", "RELEASE"]
_OPERATION_TYPES: frozenset[str] = frozenset(get_args(OperationType))


def utc_now() -> str:
    """The current time as an ISO 8601 string in UTC (`2026-12-02T12:45:04.123456+00:00`), the format of every ACE
    timestamp: `datetime.now(UTC).isoformat(timespec="microseconds")`, in a quarter of its time."""
    micros = time.time_ns() // 1000
    return f"{_second(micros // 1_000_000)}{micros % 1_000_000:06d}+00:00"


@functools.lru_cache(maxsize=2)
def _second(seconds: int) -> str:
    """`2026-12-02T12:45:04.` for a Unix second: formatted once per second, not once per timestamp (a pure memo)."""
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%S.")


@dataclass(frozen=True, kw_only=True, slots=True)
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
        copy = _copy(self)
        copy.operation_type = operation_type
        if error_identification is not None:
            copy.error_identification = error_identification
        if learning_text is not None:
            copy.learning_text = learning_text
        copy.timestamp = utc_now()
        return _sealed(copy)

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
    def from_dict(cls, data: dict[str, Any], *, shared: SharedValues | None = None) -> InsightSource:
        """Inverse of `to_dict`; raises `ValueError` naming the field that is missing, unknown or mistyped.

        `shared`: the values already read from the same file (`SharedValues`), for the strings a file repeats (a
        trace's ids, question and findings) to be stored once."""
        if not isinstance(data, dict):
            raise ValueError(f"insight source must be an object, got {type(data).__name__}")
        if not data.keys() <= _FIELD_NAMES:
            unknown = set(data) - _FIELD_NAMES
            raise ValueError(f"insight source has unknown field(s) {sorted(unknown)}; expected {_FIELD_ORDER}")
        get = data.get
        for name in ("trace_uid", "source_system", "trace_id", "timestamp"):
            if not isinstance(get(name), str):
                raise ValueError(f"insight source field {name!r} must be a string, got {get(name)!r}")
        for name in _OPTIONAL_TEXTS:
            value = get(name)
            if value is not None and not isinstance(value, str):
                raise ValueError(f"insight source field {name!r} must be a string or null, got {value!r}")
        epoch = get("epoch")
        if epoch is not None and (not isinstance(epoch, int) or isinstance(epoch, bool)):
            raise ValueError(f"insight source field 'epoch' must be an integer or null, got {epoch!r}")
        op = get("operation_type")
        if op is not None and (not isinstance(op, str) or op not in _OPERATION_TYPES):
            raise ValueError(
                f"insight source field 'operation_type' must be one of {sorted(_OPERATION_TYPES)}, got {op!r}"
            )
        new: Any = object.__new__(_Draft)
        new.trace_uid, new.source_system, new.trace_id = data["trace_uid"], data["source_system"], data["trace_id"]
        new.sample_question, new.error_identification = get("sample_question"), get("error_identification")
        new.learning_text, new.timestamp, new.epoch, new.operation_type = (
            get("learning_text"),
            data["timestamp"],
            epoch,
            op,
        )
        new.reviewer, new.reviewed_at = get("reviewer"), get("reviewed_at")
        if shared is not None:  # a file repeats each trace's ids, question and findings: one copy of each
            new.timestamp = shared.time(new.timestamp)
            for name in _SHARED_TEXTS:
                value = getattr(new, name)
                if value is not None:
                    setattr(new, name, shared.text(value))
        return _sealed(new)


_FIELD_ORDER = [f.name for f in dataclasses.fields(InsightSource)]
_FIELD_NAMES = frozenset(_FIELD_ORDER)
_OPTIONAL_TEXTS = ("sample_question", "error_identification", "learning_text", "reviewer", "reviewed_at")
_SHARED_TEXTS = ("trace_uid", "source_system", "trace_id", "sample_question", "operation_type", "error_identification")


class _Draft(InsightSource):
    """Same layout as `InsightSource`, but assignable: a copy is filled field by field (a plain slot store, not
    the frozen constructor's `object.__setattr__` per field) and then sealed as an `InsightSource`."""

    __slots__ = ()
    __setattr__ = object.__setattr__
    __delattr__ = object.__delattr__


def _copy(source: InsightSource) -> Any:
    """An assignable copy of `source` (seal it with `_sealed`)."""
    copy: Any = object.__new__(_Draft)
    copy.trace_uid = source.trace_uid
    copy.source_system = source.source_system
    copy.trace_id = source.trace_id
    copy.sample_question = source.sample_question
    copy.epoch = source.epoch
    copy.operation_type = source.operation_type
    copy.error_identification = source.error_identification
    copy.learning_text = source.learning_text
    copy.timestamp = source.timestamp
    copy.reviewer = source.reviewer
    copy.reviewed_at = source.reviewed_at
    return copy


def _sealed(draft: Any) -> InsightSource:
    draft.__class__ = InsightSource
    return draft  # type: ignore[no-any-return]


def provenance_entry(
    source: InsightSource | None, operation_type: OperationType, now: str, note: str | None = None
) -> InsightSource:
    """The entry a mutation appends to `Skill.occurrences`: `source` marked with the operation (and `note` as its
    learning text when given), or a `manual` entry made `now` when there is no source. `source` itself when it
    already says so: a harness derives one source per operation (`InsightSource.derive`)."""
    if source is None:
        entry: Any = object.__new__(_Draft)
        entry.trace_uid = entry.source_system = entry.trace_id = "manual"
        entry.sample_question = entry.epoch = entry.error_identification = entry.reviewer = entry.reviewed_at = None
        entry.operation_type = operation_type
        entry.learning_text = note
        entry.timestamp = now
        return _sealed(entry)
    if source.operation_type == operation_type and (note is None or note == source.learning_text):
        return source
    entry = _copy(source)
    entry.operation_type = operation_type
    if note is not None:
        entry.learning_text = note
    return _sealed(entry)
