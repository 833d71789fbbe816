"""The trace type ACE steps accept: a plain mapping (the collection format) or any `TraceLike` object.

A trace's identity (`trace_uid`, `source_system`, `trace_id`) is read once, into a `TraceIdentity`, when the
trace enters a pipeline; steps read it from `StepContext.identity` instead of re-checking the mapping.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol, TypeAlias, runtime_checkable

__all__ = ["IDENTITY_FIELDS", "TraceIdentity", "TraceInput", "TraceLike", "trace_mapping"]

IDENTITY_FIELDS: tuple[str, str, str] = ("trace_uid", "source_system", "trace_id")
"""The fields that name a trace, in `TraceIdentity` order."""


@runtime_checkable
class TraceLike(Protocol):
    """A typed trace (e.g. ace-eval's pydantic `Trace`): its identity as attributes, its content as a mapping."""

    @property
    def trace_uid(self) -> str:
        """`f"{source_system}:{trace_id}"`, unique in a collection."""
        ...

    @property
    def source_system(self) -> str:
        """Where the trace comes from, e.g. `tau-bench-airline`."""
        ...

    @property
    def trace_id(self) -> str:
        """The id within the source system."""
        ...

    def as_mapping(self) -> Mapping[str, Any]:
        """The trace in the collection format (`question`, `messages`, `reward`, ...), as the steps read it."""
        ...


TraceInput: TypeAlias = Mapping[str, Any] | TraceLike
"""What `Trainer.run_async`, `StepContext.for_trace` and `trace_identity` accept."""


@dataclass(frozen=True, slots=True)
class TraceIdentity:
    """The three ids of a trace, checked once (non-empty strings)."""

    trace_uid: str
    source_system: str
    trace_id: str

    @classmethod
    def of(cls, trace: TraceInput) -> TraceIdentity:
        """The identity of `trace`; raises `ValueError` naming a missing or empty id."""
        values: list[str] = []
        for key in IDENTITY_FIELDS:
            value = trace.get(key) if isinstance(trace, Mapping) else getattr(trace, key, None)
            if not isinstance(value, str) or not value:
                raise ValueError(
                    f"the trace has no {key!r} (got {value!r}): pass a collection trace (an `ace_eval` `Trace`, or "
                    "a mapping) with trace_uid, source_system and trace_id"
                )
            values.append(value)
        return cls(values[0], values[1], values[2])

    @classmethod
    def find(cls, trace: Mapping[str, Any]) -> TraceIdentity | None:
        """The identity of `trace`, or None when it has none (an end-of-epoch context's empty trace)."""
        values = [trace.get(key) for key in IDENTITY_FIELDS]
        if all(isinstance(v, str) and v for v in values):
            return cls(*(str(v) for v in values))
        return None

    def as_tuple(self) -> tuple[str, str, str]:
        """`(trace_uid, source_system, trace_id)`."""
        return self.trace_uid, self.source_system, self.trace_id


def trace_mapping(trace: TraceInput) -> Mapping[str, Any]:
    """The mapping view of `trace`: a mapping as it is, a `TraceLike` through its `as_mapping()`."""
    if isinstance(trace, Mapping):
        return trace
    if isinstance(trace, TraceLike):
        return trace.as_mapping()
    raise TypeError(
        f"a trace must be a mapping or have trace_uid, source_system, trace_id and as_mapping(), got "
        f"{type(trace).__name__}"
    )
