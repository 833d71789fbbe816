"""The learning process of `ace-eval serve` (started with multiprocessing's `spawn`): it builds its models from the
resolved settings, learns the ready traces (`Learner`), publishes (`Publisher`, the gate's models too), and writes
what it does to `STORE/serve/learning.json` for the server's `/v1/status`.

It takes its work from files: `ready.jsonl` (appended by assembly in the server), the batches and checkpoints under
`STORE/serve/learning/`. The server talks to it through one pipe: `"stop"` ends the batch in flight after its next
committed sample; the pipe's end (the server is gone, even by kill -9) ends the process at once, as does
`PR_SET_PDEATHSIG` on Linux, so no learning process outlives its server. It ends with `os._exit`, never the
interpreter's shutdown, which could tear an embedded llama.cpp model down under a call still running.
"""

from __future__ import annotations

import contextlib
import ctypes
import dataclasses
import json
import os
import signal
import sys
import threading
from dataclasses import dataclass
from multiprocessing.connection import Connection
from pathlib import Path

from ace.exceptions import UserError
from ace.redaction import Redactor
from ace_eval.serve._assembly import READY_FILE
from ace_eval.serve._journal import Journal, write_json
from ace_eval.serve._learn import LearnConfig, Learner
from ace_eval.serve._publish import PublishConfig, Publisher
from ace_eval.serve._setup import learning_models, load_injections
from ace_eval.store import SkillbookStore

__all__ = ["STATUS_FILE", "ChildSpec", "learning_process"]

STATUS_FILE = "learning.json"
"""Under `STORE/serve/`: the learning process's `{"pid", "state", "counts", "publishing"}` (temp file and rename)."""
LEARNING_NICENESS = 10
"""Added to the learning process's niceness: under load the scheduler favours the server's requests (learning with a
hosted model mostly waits; a scripted or embedded one computes)."""
_PR_SET_PDEATHSIG = 1


@dataclass(frozen=True, kw_only=True)
class ChildSpec:
    """What the learning process is started with (pickled to it): settings and paths, no model object."""

    store: Path
    learn: LearnConfig
    publish: PublishConfig | None
    parent_pid: int


def _say(line: str) -> None:
    print(f"ace-eval serve: {line}", file=sys.stderr, flush=True)


def _exit(code: int) -> None:
    with contextlib.suppress(Exception):
        sys.stdout.flush()
        sys.stderr.flush()
    os._exit(code)


def _die_with_parent(parent_pid: int) -> None:
    """Linux: the kernel kills this process when the server's thread that started it ends (kill -9 included)."""
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent_pid:  # the server went before the line above took effect
        _exit(1)


def _lower_priority() -> None:
    """Learning is background work: the operating system gives the intake's process the CPU first (a niceness of
    `LEARNING_NICENESS`); where it cannot be lowered, learning runs as it is."""
    with contextlib.suppress(AttributeError, OSError):  # no os.nice (Windows), or refused
        os.nice(LEARNING_NICENESS)


def _watch(control: Connection, stopping: threading.Event) -> None:
    """`"stop"` from the server: stop after the next committed sample; the pipe's end: the server is gone."""
    while True:
        try:
            message = control.recv()
        except (EOFError, OSError):
            _exit(1)  # everything learned so far is checkpointed: the next server resumes it as after kill -9
        if message == "stop":
            stopping.set()


class _Status:
    """`learning.json`, rewritten (temp file and rename) only when it changed."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._last: str | None = None
        self._lock = threading.Lock()

    def write(self, value: dict[str, object]) -> None:
        text = json.dumps(value, sort_keys=True)
        with self._lock:
            if text != self._last:
                write_json(self.path, value)
                self._last = text


def learning_process(spec: ChildSpec, control: Connection) -> None:
    """The process's body: learn and publish until told to stop, then `os._exit(0)`."""
    _die_with_parent(spec.parent_pid)
    _lower_priority()
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C reaches the whole process group: the server decides
    folder = spec.store / "serve"
    status = _Status(folder / STATUS_FILE)
    pid = os.getpid()
    try:
        injections = load_injections(spec.learn.models_from) if spec.learn.models_from else None
        settings, injections = learning_models(spec.learn.settings, injections, say=_say)
        store = SkillbookStore.open_or_create(spec.store)
        ready = Journal(folder / READY_FILE, repair=False)  # appended by the server's assembly, never cut here
        config = dataclasses.replace(spec.learn, settings=settings)
        learner = Learner(folder, store, ready, config, injections=injections, say=_say)
        publisher = Publisher(folder, store, spec.publish, _say) if spec.publish is not None else None
    except Exception as e:  # told to the server, which exits 2 (a user's mistake) or restarts this process later
        error = Redactor().redact_text(f"{e}" if isinstance(e, UserError) else f"{type(e).__name__}: {e}")
        status.write({"pid": pid, "state": "error", "error": error[:4000], "user_error": isinstance(e, UserError)})
        _exit(2)

    def report(state: str) -> None:
        publishing = publisher.status() if publisher is not None else None
        status.write({"pid": pid, "state": state, "counts": learner.counts(), "publishing": publishing})

    threading.Thread(target=_watch, args=(control, learner.stopping), name="ace-learn-control", daemon=True).start()
    signal.signal(signal.SIGTERM, lambda *_: learner.stopping.set())  # as the server's "stop"

    def keep_reporting() -> None:  # the batch in flight and the queue move while a batch runs
        while not learner.stopping.wait(0.25):
            report("ready")

    report("ready")
    threading.Thread(target=keep_reporting, name="ace-learn-status", daemon=True).start()
    while not learner.stopping.wait(0.5):
        learner.step()
        report("ready")  # before publishing: no version is seen before the learned traces it was made from
        if publisher is not None and not learner.stopping.is_set():
            publisher.step(learner.learned, learner.traces_learned)
            report("ready")
    report("stopped")
    _exit(0)
