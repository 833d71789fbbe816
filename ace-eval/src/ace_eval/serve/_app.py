"""`ServeApp`: the inbox, the assembler and the HTTP server of `ace-eval serve`, started and stopped together.

Files live under `STORE/serve/`: `inbox/` (the redacted OTLP requests, in segment files deleted once assembled)
and `state.json` (the acknowledged count), `traces.jsonl` (assembled traces), `feedback.jsonl`, `ready.jsonl`
(traces with their outcome, for learning), `assembly.json` (where assembly restarts). Learning and publishing run
in a process of their own (`ace_eval.serve._learning_process`), which writes `learning/`, `learned.jsonl`,
`publish.json` and its status, `learning.json`.
"""

from __future__ import annotations

import ipaddress
import sys
import threading
import time
from collections import Counter
from dataclasses import dataclass
from http.server import ThreadingHTTPServer
from pathlib import Path

from ace.embeddings.base import Embedder
from ace.exceptions import UserError
from ace.redaction import Redactor
from ace_eval.serve._assembly import Assembler
from ace_eval.serve._connections import Connections
from ace_eval.serve._http import make_handler
from ace_eval.serve._inbox import Inbox
from ace_eval.serve._learn import LearnConfig
from ace_eval.serve._learning_process import LearningProcess
from ace_eval.serve._publish import PublishConfig
from ace_eval.serve._skills import SkillsSelector
from ace_eval.store import SkillbookStore

__all__ = ["ServeApp", "ServeConfig", "is_loopback", "refuse_exposed"]


@dataclass(frozen=True, kw_only=True)
class ServeConfig:
    """What `ace-eval serve` was asked for."""

    store: Path
    host: str = "127.0.0.1"
    port: int = 4318
    token: str | None = None
    feedback_wait: float = 60.0
    idle_timeout: float = 300.0
    settle: float = 1.0
    max_body: int = 8 * 1024 * 1024
    max_backlog: int = 1_000_000
    segment_bytes: int = 64 * 1024 * 1024
    """Size at which the inbox starts a new segment file (an assembled segment is deleted whole)."""
    retry_after: int = 2
    redact: bool = True
    learn: LearnConfig | None = None
    """Learn from the ready traces, in a process of its own (`None`: only assemble them)."""
    publish: PublishConfig | None = None
    """Publish learned skillbooks to the store, from the learning process (`None`: learned skillbooks stay in
    STORE/serve/learning/). Pickled to that process: a gate whose benchmark can be pickled."""
    embedder: Embedder | None = None
    """The embedder of `GET /v1/skills` (`None`: keyword retrieval only)."""
    stop_grace: float = 30.0
    """Seconds `stop()` waits for the learning batch in flight to reach the end of a sample (it stops there and
    resumes at the next start); past them the learning process is killed with the sample unfinished (resumed all
    the same)."""


def is_loopback(host: str) -> bool:
    """True for `localhost` and loopback addresses (127.0.0.0/8, ::1)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def refuse_exposed(host: str, token: str | None) -> None:
    """A `UserError` for a host other machines reach, without a token."""
    if not is_loopback(host) and not token:
        raise UserError(
            f"--host {host} is reachable from other machines: give --token T (clients send "
            "`Authorization: Bearer T`), or bind 127.0.0.1"
        )


class ServeApp:
    """The running service; `start()` listens, `stop()` finishes requests in flight, flushes and checkpoints."""

    def __init__(self, config: ServeConfig) -> None:
        refuse_exposed(config.host, config.token)
        self.config = config
        self.token = config.token
        self.max_body = config.max_body
        self.retry_after = config.retry_after
        self.redactor: Redactor | None = Redactor() if config.redact else None
        self.store = SkillbookStore.open_or_create(config.store)
        folder = Path(config.store) / "serve"
        self.inbox = Inbox(folder, max_backlog=config.max_backlog, segment_bytes=config.segment_bytes)
        self.connections = Connections()
        self.assembler = Assembler(
            self.inbox,
            folder,
            feedback_wait=config.feedback_wait,
            idle_timeout=config.idle_timeout,
            settle=config.settle,
            give_way=lambda seconds: self.connections.wait_quiet(seconds),
        )
        self.learning = (
            LearningProcess(self.store.root, config.learn, config.publish, say=self.say)
            if config.learn is not None
            else None
        )
        self.skills = SkillsSelector(self.store.root, embedder=config.embedder)
        self._counts: Counter[str] = Counter()
        self._counts_lock = threading.Lock()
        self._stopping = threading.Event()
        self._server: ThreadingHTTPServer | None = None
        self._threads: list[threading.Thread] = []

    def count(self, name: str) -> None:
        with self._counts_lock:
            self._counts[name] += 1

    @property
    def address(self) -> tuple[str, int]:
        assert self._server is not None
        host, port = self._server.server_address[:2]
        return str(host), int(port)

    def start(self) -> None:
        """Start the learning process and wait until its models are built (`LearningStartError` when they cannot
        be), then listen and start the background threads (the HTTP loop and the assembler)."""
        if self.learning is not None:
            self.learning.start()
        server = ThreadingHTTPServer((self.config.host, self.config.port), make_handler(self))
        server.daemon_threads = False
        server.block_on_close = True  # stop() waits for the requests in flight
        self._server = server
        loops = [(server.serve_forever, "ace-serve-http"), (self._assemble_loop, "ace-serve-assembly")]
        for target, name in loops:
            thread = threading.Thread(target=target, name=name, daemon=True)
            thread.start()
            self._threads.append(thread)

    def say(self, line: str) -> None:
        """A log line on stderr."""
        print(f"ace-eval serve: {line}", file=sys.stderr, flush=True)

    def _assemble_loop(self) -> None:
        while not self._stopping.wait(0.2):
            self.assembler.step()

    def stop(self) -> bool:
        """Stop listening, let requests in flight finish, commit the inbox, assemble what is due, checkpoint, and
        stop the learning process; True when it reached the end of a sample within `stop_grace` seconds, False when
        it was killed then (its batch resumes after its last finished sample at the next start)."""
        deadline = time.monotonic() + self.config.stop_grace
        if self.learning is not None:
            self.learning.request_stop()  # the batch in flight stops after its next sample
        if self._server is not None:
            self._server.shutdown()  # serve_forever returns; no new connection is taken
            self.connections.stop()  # idle keep-alive connections end; requests in flight finish
            self._server.server_close()  # joins the request threads (block_on_close)
        self._stopping.set()
        for thread in self._threads:
            thread.join(timeout=30)
        self.inbox.close()
        self.assembler.step()
        return self.learning.stop(deadline) if self.learning is not None else True

    def status(self) -> dict[str, object]:
        current = self.store.current_number()
        with self._counts_lock:
            counts = dict(self._counts)
        learning = self.learning.status() if self.learning is not None else {"traces_learned": 0, "traces_errored": 0}
        publishing = learning.pop("publishing", None)
        queues: dict[str, object] = {"inbox_spans": self.inbox.backlog, "inbox_limit": self.inbox.max_backlog}
        if "traces_to_learn" in learning:
            queues["traces_to_learn"] = learning.pop("traces_to_learn")
        return {
            "spans_acknowledged": self.inbox.acknowledged,
            **self.assembler.counts(),
            **learning,
            "version": current,
            "queues": queues,
            "publishing": publishing,
            "requests": counts,
        }

    def metrics(self) -> str:
        """The status as Prometheus text (exposition format 0.0.4)."""
        status = self.status()
        lines: list[str] = []

        def metric(name: str, kind: str, value: object, help_text: str) -> None:
            lines.extend([f"# HELP ace_serve_{name} {help_text}", f"# TYPE ace_serve_{name} {kind}"])
            lines.append(f"ace_serve_{name} {value}")

        metric("spans_acknowledged_total", "counter", status["spans_acknowledged"], "Spans fsynced into the inbox.")
        for key in ("traces_assembled", "traces_rejected", "traces_learned", "traces_errored", "late_spans"):
            metric(f"{key}_total", "counter", status[key], key.replace("_", " ").capitalize() + ".")
        for key in ("traces_waiting_feedback", "otel_traces_pending", "traces_ready"):
            metric(key, "gauge", status[key], key.replace("_", " ").capitalize() + ".")
        metric("inbox_backlog_spans", "gauge", self.inbox.backlog, "Spans acknowledged and not yet assembled.")
        queues = status["queues"]
        assert isinstance(queues, dict)
        metric("traces_to_learn", "gauge", queues.get("traces_to_learn", 0), "Ready traces not learned yet.")
        metric("version", "gauge", status["version"] if status["version"] is not None else "NaN", "Current version.")
        process = status.get("learning_process")
        if isinstance(process, dict):
            restarts = process["restarts"]
            metric("learning_restarts_total", "counter", restarts, "Learning processes restarted after a crash.")
        requests = status["requests"]
        assert isinstance(requests, dict)
        lines += [
            "# HELP ace_serve_requests_total OTLP requests by outcome.",
            "# TYPE ace_serve_requests_total counter",
        ]
        for outcome in ("accepted", "rejected", "throttled"):
            lines.append(f'ace_serve_requests_total{{outcome="{outcome}"}} {requests.get(f"requests_{outcome}", 0)}')
        return "\n".join(lines) + "\n"
