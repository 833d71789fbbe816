"""`ServeApp`: the inbox, the assembler and the HTTP server of `ace-eval serve`, started and stopped together.

Files live under `STORE/serve/`: `inbox/` (the redacted OTLP requests, in segment files deleted once assembled)
and `state.json` (the acknowledged count), `traces.jsonl` (assembled traces), `feedback.jsonl`, `ready.jsonl`
(traces with their outcome, for learning), `assembly.json` (where assembly restarts).
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

from ace.exceptions import UserError
from ace.llm import LocalModel
from ace.redaction import Redactor
from ace_eval.serve._assembly import Assembler
from ace_eval.serve._connections import Connections
from ace_eval.serve._http import make_handler
from ace_eval.serve._inbox import Inbox
from ace_eval.serve._learn import LearnConfig, Learner
from ace_eval.serve._publish import PublishConfig, Publisher
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
    """Learn from the ready traces (`None`: only assemble them)."""
    publish: PublishConfig | None = None
    """Publish learned skillbooks to the store (`None`: learned skillbooks stay in STORE/serve/learning/)."""
    stop_grace: float = 30.0
    """Seconds `stop()` waits for the learning batch in flight to reach the end of a sample (it stops there and
    resumes at the next start); past them the process may exit with the sample unfinished (resumed all the same)."""


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
        self.assembler = Assembler(
            self.inbox,
            folder,
            feedback_wait=config.feedback_wait,
            idle_timeout=config.idle_timeout,
            settle=config.settle,
        )
        self.learner = (
            Learner(folder, self.store, self.assembler.ready_journal, config.learn, say=self.say)
            if config.learn is not None
            else None
        )
        self.publisher = Publisher(folder, self.store, config.publish, self.say) if config.publish is not None else None
        embedder = config.learn.injections.embedder if config.learn is not None else None
        self.skills = SkillsSelector(self.store.root, embedder=embedder)
        self._counts: Counter[str] = Counter()
        self._counts_lock = threading.Lock()
        self._stopping = threading.Event()
        self.connections = Connections()
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
        """Listen and start the background threads (the HTTP loop and the assembler)."""
        server = ThreadingHTTPServer((self.config.host, self.config.port), make_handler(self))
        server.daemon_threads = False
        server.block_on_close = True  # stop() waits for the requests in flight
        self._server = server
        loops = [(server.serve_forever, "ace-serve-http"), (self._assemble_loop, "ace-serve-assembly")]
        if self.learner is not None:
            loops.append((self._learn_loop, "ace-serve-learning"))
        for target, name in loops:
            thread = threading.Thread(target=target, name=name, daemon=True)
            thread.start()
            self._threads.append(thread)

    def say(self, line: str) -> None:
        """A log line on stderr."""
        print(f"ace-eval serve: {line}", file=sys.stderr, flush=True)

    def _learn_loop(self) -> None:
        assert self.learner is not None
        while not self._stopping.wait(0.5):
            self.learner.step()
            if self.publisher is not None:
                self.publisher.step(self.learner.learned, self.learner.traces_learned)

    def _assemble_loop(self) -> None:
        while not self._stopping.wait(0.2):
            self.assembler.step()

    def stop(self) -> bool:
        """Stop listening, let requests in flight finish, commit the inbox, assemble what is due, checkpoint; True
        when the learning thread ended and no embedded model call runs any more (the models closed), False when one
        still runs after `stop_grace` seconds: its work resumes at the next start, and the process must end without
        the interpreter's shutdown, which would tear llama.cpp down under the running call (see `ace-eval serve`)."""
        if self.learner is not None:
            self.learner.stopping.set()  # the batch in flight stops after its next sample
        if self._server is not None:
            self._server.shutdown()  # serve_forever returns; no new connection is taken
            self.connections.stop()  # idle keep-alive connections end; requests in flight finish
            self._server.server_close()  # joins the request threads (block_on_close)
        self._stopping.set()
        deadline = time.monotonic() + self.config.stop_grace
        for thread in self._threads:
            thread.join(timeout=self.config.stop_grace if thread.name == "ace-serve-learning" else 30)
        self.inbox.close()
        self.assembler.step()
        # A model call of the stopped batch may still run on a worker thread of its own: wait for it, then unload.
        closed = [model.close(max(0.0, deadline - time.monotonic())) for model in self._local_models()]
        return all(closed) and not any(thread.is_alive() for thread in self._threads)

    def _local_models(self) -> list[LocalModel]:
        """The embedded models learning uses (each once, however many roles share it)."""
        models = self.config.learn.injections.models.values() if self.config.learn is not None else ()
        found: list[LocalModel] = []
        for model in models:
            inner: object = model
            while inner is not None and not isinstance(inner, LocalModel):
                inner = getattr(inner, "wrapped", None)  # pydantic-ai's wrapper models
            if isinstance(inner, LocalModel) and inner not in found:
                found.append(inner)
        return found

    def status(self) -> dict[str, object]:
        current = self.store.current_number()
        with self._counts_lock:
            counts = dict(self._counts)
        learning = self.learner.counts() if self.learner is not None else {"traces_learned": 0, "traces_errored": 0}
        queues: dict[str, object] = {"inbox_spans": self.inbox.backlog, "inbox_limit": self.inbox.max_backlog}
        if "traces_to_learn" in learning:
            queues["traces_to_learn"] = learning.pop("traces_to_learn")
        return {
            "spans_acknowledged": self.inbox.acknowledged,
            **self.assembler.counts(),
            **learning,
            "version": current,
            "queues": queues,
            "publishing": self.publisher.status() if self.publisher is not None else None,
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
        requests = status["requests"]
        assert isinstance(requests, dict)
        lines += [
            "# HELP ace_serve_requests_total OTLP requests by outcome.",
            "# TYPE ace_serve_requests_total counter",
        ]
        for outcome in ("accepted", "rejected", "throttled"):
            lines.append(f'ace_serve_requests_total{{outcome="{outcome}"}} {requests.get(f"requests_{outcome}", 0)}')
        return "\n".join(lines) + "\n"
