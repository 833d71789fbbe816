"""The durable inbox: every accepted request's redacted spans, appended to `inbox.jsonl` and fsynced before the
request is acknowledged (group commit: one fsync covers every request waiting at that moment).

A line is `{"spans": N, "document": {...OTLP JSON...}}`. `spans_acknowledged` is the sum of N over the whole lines
in the file: `state.json` checkpoints it with the offset it was counted to, and opening the inbox counts the lines
after that offset. A line cut short by a crash was never acknowledged (its fsync had not returned): it is cut off.
"""

from __future__ import annotations

import json
import os
import threading
from collections import deque
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ace.exceptions import RunError
from ace_eval.serve._journal import write_json

__all__ = ["Committed", "Inbox", "InboxClosed", "InboxFull"]


class InboxFull(RunError, RuntimeError):
    """The backlog of spans not yet assembled is at its limit (429 with Retry-After)."""


class InboxClosed(RunError, RuntimeError):
    """The server is shutting down (503)."""


@dataclass(frozen=True)
class Committed:
    """One line now on disk: where it starts, its length, its span count, and what the appender passed along
    (the parsed spans, so the assembler need not read the line back)."""

    offset: int
    length: int
    spans: int
    payload: object


class Inbox:
    """`inbox.jsonl` under `folder`, with its acknowledged count; `append` returns once the line is on disk."""

    def __init__(self, folder: Path, *, max_backlog: int) -> None:
        self.folder = folder
        folder.mkdir(parents=True, exist_ok=True)
        self.path = folder / "inbox.jsonl"
        self.state_path = folder / "state.json"
        self.max_backlog = max_backlog
        self._cond = threading.Condition()
        self._pending: list[tuple[bytes, int, threading.Event, object]] = []
        self.committed: deque[Committed] = deque()
        """Lines committed since the inbox opened, oldest first; the assembler takes them from the left."""
        self._closed = False
        self.consumed = 0
        """Spans the assembler has taken (set by it); the backlog is what is acknowledged and not taken."""
        self.acknowledged, self.committed_offset = self._recover()
        self._file = self.path.open("ab")
        self._writer = threading.Thread(target=self._write_loop, name="ace-serve-inbox", daemon=True)
        self._writer.start()

    def _recover(self) -> tuple[int, int]:
        """The acknowledged count and the end of the last whole line; a torn tail is truncated."""
        acknowledged, offset = 0, 0
        if self.state_path.exists():
            state = json.loads(self.state_path.read_text(encoding="utf-8"))
            acknowledged, offset = int(state["spans_acknowledged"]), int(state["offset"])
        if not self.path.exists():
            return 0, 0
        size = self.path.stat().st_size
        offset = min(offset, size)
        with self.path.open("rb") as f:
            f.seek(offset)
            for line in f:
                if not line.endswith(b"\n"):
                    break
                try:
                    acknowledged += int(json.loads(line)["spans"])
                except (ValueError, KeyError, TypeError):
                    break
                offset += len(line)
        if offset < size:
            with self.path.open("r+b") as f:
                f.truncate(offset)
        return acknowledged, offset

    @property
    def backlog(self) -> int:
        return self.acknowledged - self.consumed

    def append(self, document: dict[str, Any], spans: int, *, payload: object = None, timeout: float = 30.0) -> None:
        """Write one request's document; returns when it is fsynced. `InboxFull` when the backlog is full.
        `payload` goes with the line to `committed`."""
        line = json.dumps({"spans": spans, "document": document}, ensure_ascii=False, separators=(",", ":"))
        done = threading.Event()
        with self._cond:
            if self._closed:
                raise InboxClosed("the server is shutting down")
            queued = sum(p[1] for p in self._pending)
            if self.backlog + queued + spans > self.max_backlog and spans:
                raise InboxFull(f"{self.backlog} spans wait to be assembled (limit {self.max_backlog})")
            self._pending.append(((line + "\n").encode("utf-8"), spans, done, payload))
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
            data = b"".join(p[0] for p in batch)
            self._file.write(data)
            self._file.flush()
            os.fsync(self._file.fileno())
            with self._cond:
                for line, spans, _, payload in batch:
                    self.committed.append(Committed(self.committed_offset, len(line), spans, payload))
                    self.committed_offset += len(line)
                    self.acknowledged += spans
                self._cond.notify_all()
            for _, _, done, _ in batch:
                done.set()

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
        self._file.close()
        self.checkpoint()
