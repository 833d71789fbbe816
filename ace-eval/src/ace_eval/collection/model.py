"""The records of a trace collection: `Trace` (one line of `traces.jsonl`) and `CollectionManifest`."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator
from pydantic_core import PydanticCustomError

from ace.exceptions import UserError
from ace.json_safe import JsonInputError
from ace_eval.collection.chat import (
    AssistantMessage,
    ChatMessage,
    MessageShapeError,
    check_json_value,
    parse_messages,
)
from ace_eval.collection.grading import GraderReport

__all__ = [
    "FORMAT_NAME",
    "FORMAT_VERSION",
    "MANIFEST_FILE",
    "TRACES_FILE",
    "CollectionCounts",
    "CollectionError",
    "CollectionManifest",
    "Trace",
    "TraceCounter",
    "count_traces",
    "utc_now",
]

FORMAT_NAME = "ace-trace-collection"
FORMAT_VERSION = "1"
MANIFEST_FILE = "manifest.json"
TRACES_FILE = "traces.jsonl"


def utc_now() -> datetime:
    """The current time in UTC (manifest timestamps)."""
    return datetime.now(UTC)


class CollectionError(UserError, ValueError):
    """A trace collection that cannot be read or written; the message names the file, line, field and fix."""

    def __init__(
        self,
        message: str,
        *,
        file: str | None = None,
        line: int | None = None,
        field: str | None = None,
        column: int | None = None,
    ):
        self.file = file
        self.line = line
        self.field = field
        at = f"line {line}" + (f", column {column}" if column else "") if line is not None else None
        where = ", ".join(part for part in (file, at) if part)  # `<file>, line N, column M`, as `JsonInputError`
        what = f"field '{field}': " if field else ""
        super().__init__(f"{where}: {what}{message}" if where else f"{what}{message}")

    @classmethod
    def from_json(cls, e: JsonInputError) -> CollectionError:
        """The same refusal of the safe JSON reader, as a collection error."""
        return cls(e.reason, file=e.file, line=e.line, field=e.field, column=e.column)


class Trace(BaseModel):
    """One agent run: the task, the conversation (OpenAI-style chat messages), and how it was judged."""

    model_config = ConfigDict(frozen=True, extra="forbid", strict=True)

    trace_uid: str = ""
    """`f"{source_system}:{trace_id}"`, unique in a collection; derived when left empty."""
    source_system: str = Field(min_length=1, pattern=r"^[^:\s]+$")
    """Where the trace comes from, e.g. `tau-bench-airline` (no `:` or spaces)."""
    trace_id: str = Field(min_length=1)
    """The id within the source system, e.g. `task-7-trial-2`."""
    task_id: str | None = None
    """The benchmark task this run attempted, when there is one (several trials share it)."""
    question: str = Field(min_length=1)
    """The task or user instruction."""
    messages: list[dict[str, Any]]
    """OpenAI-style chat messages; see `ace_eval.collection.chat` for the accepted shapes."""
    reward: float | None = Field(default=None, allow_inf_nan=False)
    """The benchmark's score (tau-bench: 1.0 success, 0.0 failure); None when unjudged."""
    feedback: str | None = None
    """Free-text feedback on the run (a grader's verdict, a user's complaint)."""
    ground_truth: dict[str, Any] | None = None
    """The expected answer (tau-bench: the gold `actions` and required `outputs`)."""
    grader: GraderReport | None = None
    """How the run differs from the gold (missing, extra and different actions, outputs not said), as data
    and as the `text` the reflectors read; None when the source has no gold to compare with."""
    metadata: dict[str, Any] = Field(default_factory=dict)
    """Anything else from the source (reward breakdown, costs, trial number...), plain JSON."""
    skills_in_context: list[str] = Field(default_factory=list)
    """Ids of the skillbook skills the agent had in its context for this run."""

    @model_validator(mode="before")
    @classmethod
    def _derive_uid(cls, data: Any) -> Any:
        if isinstance(data, dict) and not data.get("trace_uid"):
            source, trace_id = data.get("source_system"), data.get("trace_id")
            if isinstance(source, str) and isinstance(trace_id, str):
                return {**data, "trace_uid": f"{source}:{trace_id}"}
        return data

    @model_validator(mode="after")
    def _uid_matches(self) -> Trace:
        expected = f"{self.source_system}:{self.trace_id}"
        if self.trace_uid != expected:
            raise PydanticCustomError(
                "trace_uid",
                "{uid} must be source_system:trace_id = {expected}",  # pydantic fills plain {name} placeholders only
                {"uid": repr(self.trace_uid), "expected": repr(expected)},
            )
        return self

    @field_validator("messages")
    @classmethod
    def _valid_conversation(cls, messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
        try:
            parse_messages(messages)
        except MessageShapeError as e:
            raise PydanticCustomError(
                "message_shape", "{field}: {reason}", {"field": e.field, "reason": e.reason}
            ) from None
        return messages

    @field_validator("ground_truth", "metadata")
    @classmethod
    def _plain_json(cls, value: dict[str, Any] | None) -> dict[str, Any] | None:
        try:
            check_json_value(value, "")
        except MessageShapeError as e:
            raise PydanticCustomError(
                "json_value", "{field}: {reason}", {"field": e.field, "reason": e.reason}
            ) from None
        return value

    def as_mapping(self) -> dict[str, Any]:
        """The trace in the collection format, as `ace` steps read it (`ace.TraceLike`): a fresh plain copy."""
        return self.model_dump()

    def chat_messages(self) -> list[ChatMessage]:
        """The messages as typed models (`SystemMessage`, `AssistantMessage`...)."""
        return parse_messages(self.messages)

    @property
    def num_tool_calls(self) -> int:
        """How many tool calls the assistant made."""
        return sum(len(m.tool_calls or ()) for m in self.chat_messages() if isinstance(m, AssistantMessage))

    def is_success(self, threshold: float = 1.0) -> bool:
        """True when the run has a reward of at least `threshold`."""
        return self.reward is not None and self.reward >= threshold


class CollectionCounts(BaseModel):
    """How many traces a collection holds; checked against `traces.jsonl` on every read."""

    model_config = ConfigDict(frozen=True, extra="forbid", strict=True)
    traces: int = Field(default=0, ge=0)
    with_reward: int = Field(default=0, ge=0)
    successes: int = Field(default=0, ge=0)
    """Traces with `reward >= success_threshold`."""
    tasks: int = Field(default=0, ge=0)
    """Distinct `task_id`s (traces without one are not counted)."""


@dataclass(kw_only=True)
class TraceCounter:
    """Running counts of traces, as a manifest holds them."""

    success_threshold: float = 1.0
    traces: int = 0
    with_reward: int = 0
    successes: int = 0
    task_ids: set[str] = field(default_factory=set[str])

    def add(self, trace: Trace) -> None:
        """Count one more trace."""
        self.traces += 1
        self.with_reward += trace.reward is not None
        self.successes += trace.is_success(self.success_threshold)
        if trace.task_id is not None:
            self.task_ids.add(trace.task_id)

    def counts(self) -> CollectionCounts:
        """The counts so far."""
        return CollectionCounts(
            traces=self.traces, with_reward=self.with_reward, successes=self.successes, tasks=len(self.task_ids)
        )


def count_traces(traces: Iterable[Trace], success_threshold: float = 1.0) -> CollectionCounts:
    """The counts a manifest must hold for `traces`."""
    counter = TraceCounter(success_threshold=success_threshold)
    for trace in traces:
        counter.add(trace)
    return counter.counts()


class CollectionManifest(BaseModel):
    """`manifest.json`: what the collection is, where it comes from, and how many traces it holds."""

    model_config = ConfigDict(frozen=True, extra="forbid", strict=True)

    format: Literal["ace-trace-collection"] = "ace-trace-collection"
    format_version: Literal["1"] = "1"
    source_system: str = Field(min_length=1, pattern=r"^[^:\s]+$")
    """Every trace's `source_system`."""
    benchmark: str | None = None
    """The benchmark the traces were collected on, e.g. `tau-bench-airline`."""
    models: dict[str, str] = Field(default_factory=dict)
    """Model per role, e.g. `{"agent": "gpt-4o", "user": "gpt-4o"}`."""
    counts: CollectionCounts = Field(default_factory=CollectionCounts)
    success_threshold: float = Field(default=1.0, allow_inf_nan=False)
    """A trace is a success when its reward is at least this."""
    created_at: datetime = Field(default_factory=utc_now)
    updated_at: datetime = Field(default_factory=utc_now)
    description: str | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)
    """Provenance: the importer and source file, the ace-eval version..."""
