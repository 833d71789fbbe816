"""The durable inbox: every accepted request's redacted spans, appended to a segment file under
`STORE/serve/inbox/` and fsynced before the request is acknowledged (group commit: a writer thread writes every
request waiting at that moment and fsyncs once for all of them).

`spans_acknowledged` is the span count of every record ever written: `state.json` checkpoints it with the offset it
was counted to, and opening the inbox counts the records after that offset. Segments are rotated at
`segment_bytes`; `release(offset)` (called once assembly has checkpointed past `offset`) checkpoints the count,
then deletes the segments before it, so the count survives the records it was taken from.
"""

from __future__ import annotations

import json
import threading
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from ace.exceptions import RunError
from ace_eval.serve._journal import write_json
from ace_eval.serve._segments import Record, Segments, encode_record

__all__ = ["Committed", "Inbox", "InboxClosed", "InboxFull", "Record"]


class InboxFull(RunError, RuntimeError):
    """The backlog of spans not yet assembled is at its limit (429 with Retry-After)."""


class InboxClosed(RunError, RuntimeError):
    """The server is shutting down (503)."""


@dataclass(frozen=True)
class Committed:
    """One record now on disk: where it starts, its length, its span count, and what the appender passed along
    (the parsed spans, so the assembler need not read the record back)."""

    offset: int
    length: int
    spans: int
    payload: object


class Inbox:
    """The segments under `folder / "inbox"` with their acknowledged count; `append` returns once the record is
    on disk."""

    def __init__(self, folder: Path, *, max_backlog: int, segment_bytes: int = 64 * 1024 * 1024) -> None:
        self.folder = folder
        self.segments = Segments(folder / "inbox", segment_bytes=segment_bytes)
        self.state_path = folder / "state.json"
        self.max_backlog = max_backlog
        self._cond = threading.Condition()
        self._pending: list[tuple[bytes, int, threading.Event, object]] = []
        self.committed: deque[Committed] = deque()
        """Records committed since the inbox opened, oldest first; the assembler takes them from the left."""
        self._closed = False
        self.consumed = 0
        """Spans the assembler has taken (set by it); the backlog is what is acknowledged and not taken."""
        self.acknowledged, self.committed_offset = self._recover()
        self._writer = threading.Thread(target=self._write_loop, name="ace-serve-inbox", daemon=True)
        self._writer.start()

    def _recover(self) -> tuple[int, int]:
        """The acknowledged count and the end of the last whole record; a torn tail is cut off."""
        acknowledged, offset = 0, 0
        if self.state_path.exists():
            state = json.loads(self.state_path.read_text(encoding="utf-8"))
            acknowledged, offset = int(state["spans_acknowledged"]), int(state["offset"])
        acknowledged += self.segments.recover(offset)
        return acknowledged, self.segments.end

    @property
    def backlog(self) -> int:
        return self.acknowledged - self.consumed

    def append(
        self, payload: bytes, spans: int, *, encoding: str, parsed: object = None, timeout: float = 30.0
    ) -> None:
        """Write one request's redacted OTLP body (`encoding` "protobuf" or "json"); returns when it is fsynced.
        `InboxFull` when the backlog is full. `parsed` goes with the record to `committed`."""
        record = encode_record(spans, encoding, payload)
        done = threading.Event()
        with self._cond:
            if self._closed:
                raise InboxClosed("the server is shutting down")
            queued = sum(p[1] for p in self._pending)
            if self.backlog + queued + spans > self.max_backlog and spans:
                raise InboxFull(f"{self.backlog} spans wait to be assembled (limit {self.max_backlog})")
            self._pending.append((record, spans, done, parsed))
            self._cond.notify_all()
        if not done.wait(timeout):
            raise InboxClosed("the inbox did not commit in time")

    def _write_loop(self) -> None:
        while True:
            with self._cond:
                while not self._pending and not self._closed:
                    self._cond.wait()
                batch, self._pending = self._pending, []
                if not batch and self._closed:
                    return
            self.segments.append(b"".join(p[0] for p in batch))
            with self._cond:
                for record, spans, _, parsed in batch:
                    self.committed.append(Committed(self.committed_offset, len(record), spans, parsed))
                    self.committed_offset += len(record)
                    self.acknowledged += spans
                self._cond.notify_all()
            for _, _, done, _ in batch:
                done.set()

    def records(self, start: int = 0, end: int | None = None) -> Iterator[Record]:
        """The records on disk from offset `start` (a record's start, at or after the oldest kept segment)."""
        with self._cond:
            stop = self.committed_offset if end is None else end
        return self.segments.records(start, stop)

    def release(self, offset: int) -> list[Path]:
        """Every span before `offset` is assembled and checkpointed: checkpoint the count, then delete the segments
        that end at or before it. Returns the deleted files."""
        if len(self.segments.starts) < 2 or self.segments.starts[1] > offset:
            return []
        self.checkpoint()
        return self.segments.delete_before(offset)

    def checkpoint(self) -> None:
        """Record the acknowledged count and where it was counted to (temp file and rename)."""
        with self._cond:
            state = {"spans_acknowledged": self.acknowledged, "offset": self.committed_offset}
        write_json(self.state_path, state)

    def close(self) -> None:
        """Refuse new appends, commit those queued, checkpoint."""
        with self._cond:
            self._closed = True
            self._cond.notify_all()
        self._writer.join(timeout=30)
        self.segments.close()
        self.checkpoint()
