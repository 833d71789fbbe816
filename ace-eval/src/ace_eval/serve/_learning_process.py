"""The server's side of the learning process: started with multiprocessing's `spawn` (so learning never holds the
intake's interpreter lock), watched, restarted after a crash with a backoff, stopped within `--stop-grace`.

Everything the process learns goes to files (`ace_eval.serve._learning_child`); the server reads its status from
`STORE/serve/learning.json` and tells it to stop through a pipe, whose end also tells it the server is gone.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import multiprocessing
import os
import signal
import threading
import time
from collections.abc import Callable
from multiprocessing.connection import Connection, wait
from multiprocessing.process import BaseProcess
from pathlib import Path
from typing import Any

from ace.exceptions import UserError
from ace_eval.serve._learn import LearnConfig
from ace_eval.serve._learning_child import STATUS_FILE, ChildSpec, learning_process
from ace_eval.serve._publish import PublishConfig, publishing_status, read_attempts

__all__ = ["LearningProcess", "LearningStartError"]

_STEADY_SECONDS = 60.0
"""A learning process that ran this long before it crashed starts the backoff again from `restart_seconds`."""
_MAX_RESTART_WAIT = 300.0


class LearningStartError(UserError):
    """The learning process could not start (its models failed the preflight, `--models-from` is wrong...)."""


def _exit_reason(code: int | None) -> str:
    if code is not None and code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exit code {code}"


class LearningProcess:
    """The learning process of one server: `start()` returns once it is ready to learn (or raises), `status()` is
    what it last reported, `stop(deadline)` lets its batch in flight reach the end of a sample, else kills it."""

    def __init__(
        self, store: Path, learn: LearnConfig, publish: PublishConfig | None, *, say: Callable[[str], None]
    ) -> None:
        self.store = store
        self.learn = learn
        self.publish = publish
        self.say = say
        self.path = store / "serve" / STATUS_FILE
        self._context = multiprocessing.get_context("spawn")
        self._lock = threading.Lock()
        self._process: BaseProcess | None = None
        self._control: Connection | None = None
        self._stopping = threading.Event()
        self._started = threading.Event()
        self._start_error: tuple[str, bool] | None = None
        self._last: dict[str, Any] = {}
        self.crashes = 0
        self.last_crash: str | None = None
        self._thread = threading.Thread(target=self._watch, name="ace-serve-learning", daemon=True)

    # -- running ----------------------------------------------------------------------------------------------
    def start(self) -> None:
        """Start the process (from the watching thread, which outlives it: Linux kills a process whose starting
        thread ends) and wait until it has built its models; `LearningStartError` when it could not."""
        self._thread.start()
        self._started.wait()
        if self._start_error is not None:
            self._thread.join(timeout=30)
            message, user_error = self._start_error
            raise LearningStartError(message) if user_error else RuntimeError(message)

    def _spawn(self, learn: LearnConfig) -> tuple[BaseProcess, Connection]:
        theirs, ours = self._context.Pipe(duplex=False)
        spec = ChildSpec(store=self.store, learn=learn, publish=self.publish, parent_pid=os.getpid())
        process = self._context.Process(
            target=learning_process, args=(spec, theirs), name="ace-serve-learning", daemon=True
        )
        process.start()
        theirs.close()  # the child holds the only read end: our end closing (we are gone) is its EOF
        return process, ours

    def _watch(self) -> None:
        learn, in_a_row = self.learn, 0
        while not self._stopping.is_set():
            try:
                process, control = self._spawn(learn)
            except Exception as e:  # e.g. a gate whose benchmark cannot be pickled to the learning process
                self._start_error = (f"the learning process could not be started: {type(e).__name__}: {e}", False)
                self.last_crash = self._start_error[0]
                self._started.set()
                return
            with self._lock:
                self._process, self._control = process, control
                if self._stopping.is_set():  # stop() came while it was starting
                    self._send_stop()
            began = time.monotonic()
            ready = self._await_ready(process)
            if not self._started.is_set():
                if not ready:
                    self._start_error = self._failure(process)
                self._started.set()
                if not ready:
                    return
            learn = _no_preflight(learn)  # the first start checked the models; a restart does not ask again
            process.join()
            control.close()
            if self._stopping.is_set():
                return
            in_a_row = 1 if time.monotonic() - began > _STEADY_SECONDS else in_a_row + 1
            wait_s = min(self.learn.restart_seconds * 2 ** (in_a_row - 1), _MAX_RESTART_WAIT)
            error = self._failure(process)[0] if not ready else _exit_reason(process.exitcode)
            self.crashes += 1
            self.last_crash = f"the learning process ({process.pid}) ended: {error}; restarted in {wait_s:g} s"
            self.say(f"{self.last_crash} (its batch resumes after its last finished sample)")
            self._stopping.wait(wait_s)

    def _await_ready(self, process: BaseProcess) -> bool:
        """Wait until the process reports it is ready (True) or has ended (False)."""
        while True:
            report = self._read()
            if report.get("pid") == process.pid and report.get("state") in ("ready", "stopped"):
                return True
            if report.get("pid") == process.pid and report.get("state") == "error":
                process.join(timeout=30)
                return False
            if wait([process.sentinel], timeout=0.1):
                report = self._read()
                return report.get("pid") == process.pid and report.get("state") in ("ready", "stopped")

    def _failure(self, process: BaseProcess) -> tuple[str, bool]:
        report = self._read()
        if report.get("pid") == process.pid and report.get("state") == "error":
            return str(report["error"]), bool(report.get("user_error"))
        reason = _exit_reason(process.exitcode)
        return f"the learning process ended ({reason}) before it was ready: see the lines above", False

    def _read(self) -> dict[str, Any]:
        try:
            report: dict[str, Any] = json.loads(self.path.read_text("utf-8"))
        except (OSError, ValueError):
            return {}
        return report

    # -- status and stop --------------------------------------------------------------------------------------
    def status(self) -> dict[str, Any]:
        """The counts and publishing status the process last reported, with the process's own state."""
        report = self._read()
        if "counts" in report:
            self._last = report
        else:
            report = self._last
        counts = dict(report.get("counts") or {"traces_learned": 0, "traces_errored": 0})
        with self._lock:
            process = self._process
        alive = process is not None and process.is_alive()
        counts["learning_process"] = {
            "pid": process.pid if alive and process is not None else None,
            "restarts": self.crashes,
            "last_crash": self.last_crash,
        }
        if self.publish is not None:  # from the file the learning process's publisher writes after each attempt
            try:
                counts["publishing"] = publishing_status(self.publish, read_attempts(self.store / "serve"))
            except (OSError, ValueError):
                counts["publishing"] = report.get("publishing")
        return counts

    def _send_stop(self) -> None:
        if self._control is not None:
            with contextlib.suppress(OSError):  # it has ended already
                self._control.send("stop")

    def request_stop(self) -> None:
        """Tell the process to stop after its next committed sample (no new batch starts)."""
        with self._lock:
            self._stopping.set()
            self._send_stop()

    def stop(self, deadline: float) -> bool:
        """Stop it, waiting until `deadline` (time.monotonic) for its sample in flight; True when it ended by itself,
        False when it was killed at the deadline (its batch resumes after its last finished sample)."""
        self.request_stop()
        if self._thread.ident is None:  # never started
            return True
        self._thread.join(timeout=max(0.0, deadline - time.monotonic()))
        with self._lock:
            process = self._process
        if process is None or not process.is_alive():
            self._thread.join(timeout=30)
            return True
        process.kill()
        process.join(timeout=30)
        self._thread.join(timeout=30)
        return False


def _no_preflight(learn: LearnConfig) -> LearnConfig:
    return dataclasses.replace(learn, settings=dataclasses.replace(learn.settings, no_preflight=True))
