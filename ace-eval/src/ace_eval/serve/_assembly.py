"""Spans from the inbox to traces, with the OTel importer's rules (`traces_from_spans`), then to learning.

An OTel trace is assembled once its root span (no parent) has arrived, which OpenTelemetry exports when the span
ended, plus `settle` seconds for its last children from other exporters; a trace whose root never arrives is
assembled after `idle_timeout` seconds without a new span, marked `incomplete`. An assembled trace waits for its
outcome up to `feedback_wait` seconds (`POST /v1/feedback`), unless its spans carry `ace.reward` / `ace.feedback`;
it is then ready to learn from (`ready.jsonl`).

Assembly runs on a thread of the server's process, under the interpreter lock the requests need too: between two
traces it waits while a request is in flight (`give_way`), for at most `GIVE_WAY_S` in a pass, so that an
acknowledgement does not wait behind it and a steady stream of requests cannot stop assembly.

Restart: `assembly.json` holds the inbox offset before which every span belongs to an assembled trace; the records
after it are read again, and traces already in `traces.jsonl` are skipped, so each trace is assembled once. Once
`assembly.json` is written, the inbox deletes its segments before that offset (`Inbox.release`).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ace_eval.collection.importers.otel import FEEDBACK_ATTRIBUTE, REWARD_ATTRIBUTE, traces_from_spans
from ace_eval.collection.importers.otlp import Span
from ace_eval.collection.model import CollectionError, Trace
from ace_eval.serve._decode import record_spans
from ace_eval.serve._inbox import Inbox
from ace_eval.serve._journal import Journal, write_json

__all__ = ["READY_FILE", "Assembler", "Feedback"]

GIVE_WAY_S = 0.2
"""How long one pass of assembly may wait, in all, for the requests in flight (the pass interval)."""

READY_FILE = "ready.jsonl"
"""Traces with their outcome, one line per OTel trace, appended by assembly and read by the learning process."""


@dataclass(frozen=True)
class Feedback:
    """An outcome sent for an OTel trace (hex id) by `POST /v1/feedback`."""

    trace_id: str
    reward: float | None
    feedback: str | None


@dataclass
class _Group:
    spans: dict[str, Span] = field(default_factory=dict[str, Span])
    offset: int = 0
    consumed_before: int = 0
    last_seen: float = 0.0
    root_seen: float | None = None


class Assembler:
    """Reads the inbox, assembles traces, applies feedback, and marks traces ready; `step()` does one pass."""

    def __init__(
        self,
        inbox: Inbox,
        folder: Path,
        *,
        feedback_wait: float,
        idle_timeout: float = 300.0,
        settle: float = 1.0,
        source_system: str = "otel",
        give_way: Callable[[float], object] | None = None,
    ) -> None:
        self.inbox = inbox
        self.give_way = give_way
        """Called between traces with the seconds left of the pass's `GIVE_WAY_S`: waits while requests are in
        flight (`Connections.wait_quiet`)."""
        self.feedback_wait = feedback_wait
        self.idle_timeout = idle_timeout
        self.settle = settle
        self.source_system = source_system
        self.state_path = folder / "assembly.json"
        self.assembled_journal = Journal(folder / "traces.jsonl")
        self.feedback_journal = Journal(folder / "feedback.jsonl")
        self.ready_journal = Journal(folder / READY_FILE)
        self._lock = threading.Lock()
        self.pending: dict[str, _Group] = {}
        self.feedback: dict[str, Feedback] = {}
        self.waiting: dict[str, dict[str, Any]] = {}
        self.assembled: set[str] = set()
        self.ready: set[str] = set()
        self.traces_assembled = 0
        self.traces_rejected = 0
        self.late_spans = 0
        for record in self.feedback_journal.records():
            self.feedback[record["trace_id"]] = Feedback(record["trace_id"], record["reward"], record["feedback"])
        for record in self.ready_journal.records():
            self.ready.add(record["otel_trace_id"])
        for record in self.assembled_journal.records():
            self.assembled.add(record["otel_trace_id"])
            self.traces_assembled += len(record.get("traces", []))
            self.traces_rejected += "rejected" in record
            if "traces" in record and record["otel_trace_id"] not in self.ready:
                self.waiting[record["otel_trace_id"]] = record
        state = json.loads(self.state_path.read_text("utf-8")) if self.state_path.exists() else {}
        self.offset = int(state.get("offset", 0))
        inbox.consumed = int(state.get("consumed", 0))
        self._read_to, self._consumed_to = self.offset, inbox.consumed
        self._opened_at = inbox.committed_offset

    # -- feedback -------------------------------------------------------------------------------------------
    def add_feedback(self, feedback: Feedback) -> str:
        """Record an outcome durably; returns `applied`, `waiting` (no such trace yet) or `late` (already ready)."""
        self.feedback_journal.append(
            [{"trace_id": feedback.trace_id, "reward": feedback.reward, "feedback": feedback.feedback}]
        )
        with self._lock:
            self.feedback[feedback.trace_id] = feedback
            if feedback.trace_id in self.ready:
                return "late"
            return "applied" if feedback.trace_id in self.waiting else "waiting"

    # -- one pass -------------------------------------------------------------------------------------------
    def step(self, now: float | None = None) -> None:
        """Read what the inbox committed, assemble what is due, release what waited long enough."""
        clock = time.monotonic() if now is None else now
        self._read(clock)
        due = [
            (trace_id, group)
            for trace_id, group in self.pending.items()
            if (group.root_seen is not None and clock - group.root_seen >= self.settle)
            or clock - group.last_seen >= self.idle_timeout
        ]
        records: list[dict[str, Any]] = []
        deadline = time.monotonic() + GIVE_WAY_S
        for trace_id, group in due:
            if self.give_way is not None:
                self.give_way(deadline - time.monotonic())
            records.append(self._assemble(trace_id, group))
        self.assembled_journal.append(records)
        with self._lock:
            for (trace_id, _group), record in zip(due, records, strict=True):
                del self.pending[trace_id]
                self.assembled.add(trace_id)
                self.traces_assembled += len(record.get("traces", []))
                self.traces_rejected += "rejected" in record
                if "traces" in record:
                    self.waiting[trace_id] = record
        self._release()
        self._checkpoint()

    def _read(self, clock: float) -> None:
        """Take the records committed since the last pass: those of this process from `inbox.committed` (their
        spans parsed already), those written before it started (a restart) from the segment files."""
        committed = self.inbox.committed
        while committed and committed[0].offset < self._read_to:
            committed.popleft()  # read from the file already
        first = committed[0].offset if committed else self.inbox.committed_offset
        if self._read_to < first:
            for record in self.inbox.records(self._read_to, first):
                self._take(record_spans(record), record.spans, record.length, clock)
        while committed:
            entry = committed.popleft()
            if entry.offset < self._read_to:
                continue  # committed while the lines above were read: read from the file already
            spans = entry.payload if isinstance(entry.payload, list) else None
            if spans is None:  # appended without its spans: read the record back
                spans = record_spans(next(iter(self.inbox.records(entry.offset, entry.offset + entry.length))))
            self._take(spans, entry.spans, entry.length, clock)

    def _take(self, spans: list[Span], count: int, length: int, clock: float) -> None:
        """Add the spans of the inbox line at `_read_to` to their pending traces."""
        for span in spans:
            if span.trace_id in self.assembled:
                self.late_spans += self._read_to >= self._opened_at  # a span re-read after a restart is not late
                continue
            group = self.pending.get(span.trace_id)
            if group is None:
                group = self.pending[span.trace_id] = _Group(offset=self._read_to, consumed_before=self._consumed_to)
            group.spans.setdefault(span.span_id, span)
            group.last_seen = clock
            if span.parent_id is None and group.root_seen is None:
                group.root_seen = clock
        self._consumed_to += count
        self._read_to += length

    def _assemble(self, trace_id: str, group: _Group) -> dict[str, Any]:
        spans = sorted(group.spans.values(), key=lambda s: s.start_ns)
        incomplete = group.root_seen is None
        record: dict[str, Any] = {"otel_trace_id": trace_id, "assembled_at": time.time(), "incomplete": incomplete}
        try:
            traces = traces_from_spans(spans, file=f"otel trace {trace_id}", source_system=self.source_system)
        except CollectionError as e:
            return {**record, "rejected": str(e), "spans": len(spans)}
        judged = any(REWARD_ATTRIBUTE in s.attributes or FEEDBACK_ATTRIBUTE in s.attributes for s in spans)
        if incomplete:
            traces = [t.model_copy(update={"metadata": {**t.metadata, "incomplete": True}}) for t in traces]
        return {**record, "judged": judged, "traces": [t.model_dump(mode="json") for t in traces]}

    def _release(self) -> None:
        """Waiting traces with feedback, an outcome of their own, or that waited `feedback_wait`, become ready."""
        now = time.time()
        released: list[dict[str, Any]] = []
        with self._lock:
            for trace_id, record in list(self.waiting.items()):
                sent = self.feedback.get(trace_id)
                if sent is None and not record.get("judged") and now - record["assembled_at"] < self.feedback_wait:
                    continue
                dumped = record["traces"]  # as assembled (validated then), unless feedback changes them
                if sent is not None:
                    update = {"reward": sent.reward, "feedback": sent.feedback}
                    changed = {k: v for k, v in update.items() if v is not None}
                    traces = [Trace.model_validate(t).model_copy(update=changed) for t in dumped]
                    dumped = [t.model_dump(mode="json") for t in traces]
                released.append({"otel_trace_id": trace_id, "traces": dumped})
                del self.waiting[trace_id]
        self.ready_journal.append(released)
        with self._lock:
            self.ready.update(r["otel_trace_id"] for r in released)

    def _checkpoint(self) -> None:
        """Where a restart reads from: the first line holding a span of a pending trace, else where reading ended."""
        read_to, consumed = self._read_to, self._consumed_to
        if self.pending:
            first = min(self.pending.values(), key=lambda g: g.offset)
            offset, before = first.offset, first.consumed_before
        else:
            offset, before = read_to, consumed
        self.inbox.consumed = consumed
        if offset != self.offset:
            self.offset = offset
            write_json(self.state_path, {"offset": offset, "consumed": before})
            self.inbox.release(offset)

    def counts(self) -> dict[str, int]:
        with self._lock:
            return {
                "traces_assembled": self.traces_assembled,
                "traces_rejected": self.traces_rejected,
                "traces_waiting_feedback": sum(len(r["traces"]) for r in self.waiting.values()),
                "traces_ready": len(self.ready),
                "otel_traces_pending": len(self.pending),
                "late_spans": self.late_spans,
            }
