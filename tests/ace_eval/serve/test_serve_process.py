"""`ace-eval serve` as a process: kill -9 under load loses no span the client saw acknowledged and assembles no
trace twice after a restart, also while inbox segments rotate and are deleted; SIGTERM finishes, checkpoints and
exits 0. Servers on 127.0.0.1, bounded loops."""

from __future__ import annotations

import http.client
import json
import os
import re
import select
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from _serve_helpers import agent_span, inbox_end, inbox_files, inbox_spans, otlp_json, request, running, wait_for

_SMALL_SEGMENTS = """
import sys, threading
from ace_eval.serve import ServeApp, ServeConfig
app = ServeApp(ServeConfig(store=sys.argv[1], port=0, feedback_wait=0, settle=0.0, segment_bytes=8192))
app.start()
print("listening on http://%s:%d " % app.address, file=sys.stderr, flush=True)
threading.Event().wait()
"""
"""`serve` with 8 KB inbox segments (a request of 5 spans is ~1 KB): segments rotate and are deleted all along."""


def _start(store: Path, *, small_segments: bool = False) -> tuple[subprocess.Popen[bytes], str]:
    if small_segments:
        command = [sys.executable, "-c", _SMALL_SEGMENTS, str(store)]
    else:
        command = [sys.executable, "-c", "from ace_eval.cli import main; main()", "serve", "--store", str(store)]
        command += ["--port", "0", "--feedback-wait", "0", "--learn-every", "0"]
    process = subprocess.Popen(command, stderr=subprocess.PIPE)
    assert process.stderr is not None
    deadline, seen = time.monotonic() + 60, b""
    while time.monotonic() < deadline:
        ready, _, _ = select.select([process.stderr], [], [], 1.0)
        if ready:
            seen += os.read(process.stderr.fileno(), 4096)
            found = re.search(rb"listening on (http://\S+) ", seen)
            if found:
                return process, found.group(1).decode()
        assert process.poll() is None, seen
    process.kill()
    raise AssertionError(f"serve did not start: {seen!r}")


def _load(base: str, acked: list[int], stop: threading.Event, worker: int) -> None:
    """Send requests of 5 spans (one trace each, its id unique to `worker`) until stopped or the server is gone;
    count the acknowledged."""
    for n in range(2000):
        if stop.is_set():
            return
        trace = f"{worker:08x}{n:024x}"
        spans = [agent_span("1" * 16)] + [
            {"spanId": f"{i + 2:016x}", "name": "child", "parentSpanId": "1" * 16} for i in range(4)
        ]
        try:
            status, _, _ = request(f"{base}/v1/traces", otlp_json(trace, spans), {"Content-Type": "application/json"})
        except (OSError, http.client.HTTPException):  # the server was killed, perhaps mid-answer
            return
        if status == 200:
            acked.append(5)


def test_kill_9_under_load_loses_no_acknowledged_span(tmp_path: Path) -> None:
    store = tmp_path / "store"
    process, base = _start(store)
    acked: list[int] = []
    stop = threading.Event()
    workers = [threading.Thread(target=_load, args=(base, acked, stop, w)) for w in range(3)]
    for w in workers:
        w.start()
    wait_for(lambda: len(acked) >= 60, seconds=60)
    process.kill()  # SIGKILL, mid-load
    process.wait(timeout=30)
    stop.set()
    for w in workers:
        w.join(timeout=30)
    seen_by_client = sum(acked)
    with running(store, feedback_wait=0) as app:
        status = app.status()
        assert status["spans_acknowledged"] >= seen_by_client  # a 200 lost in the kill may be uncounted by the client
        wait_for(lambda: app.status()["otel_traces_pending"] == 0 and app.status()["traces_ready"] > 0)
    assert inbox_spans(store) == status["spans_acknowledged"]
    ids = [json.loads(line)["otel_trace_id"] for line in (store / "serve" / "traces.jsonl").read_text().splitlines()]
    assert len(ids) == len(set(ids)) == status["spans_acknowledged"] // 5


def test_sigterm_finishes_checkpoints_and_exits_0(tmp_path: Path) -> None:
    store = tmp_path / "store"
    process, base = _start(store)
    acked: list[int] = []
    stop = threading.Event()
    worker = threading.Thread(target=_load, args=(base, acked, stop, 0))
    worker.start()
    wait_for(lambda: len(acked) >= 10, seconds=60)
    process.send_signal(signal.SIGTERM)
    assert process.wait(timeout=30) == 0
    stop.set()
    worker.join(timeout=30)
    state = json.loads((store / "serve" / "state.json").read_text())
    assert state["spans_acknowledged"] == sum(acked)
    assert state["offset"] == inbox_end(store)


def test_kill_9_while_segments_rotate_and_are_deleted_loses_nothing_and_assembles_nothing_twice(
    tmp_path: Path,
) -> None:
    store = tmp_path / "store"
    acked: list[int] = []
    for cycle in range(3):  # killed at three moments of the rotate / assemble / checkpoint / delete cycle
        process, base = _start(store, small_segments=True)
        stop = threading.Event()
        workers = [threading.Thread(target=_load, args=(base, acked, stop, cycle * 10 + w)) for w in range(3)]
        for w in workers:
            w.start()
        target, until = len(acked) + 40, time.monotonic() + 0.8 + 0.45 * cycle  # assembly runs every 0.2 s
        wait_for(lambda: len(acked) >= target and time.monotonic() >= until, seconds=60)  # noqa: B023
        process.kill()
        process.wait(timeout=30)
        stop.set()
        for w in workers:
            w.join(timeout=30)
    assert int(inbox_files(store)[0].stem) > 0  # the killed servers assembled and deleted segments
    with running(store, feedback_wait=0, segment_bytes=8192) as app:
        status = app.status()
        assert status["spans_acknowledged"] >= sum(acked)
        wait_for(lambda: app.status()["otel_traces_pending"] == 0)
        status = app.status()
    ids = [json.loads(line)["otel_trace_id"] for line in (store / "serve" / "traces.jsonl").read_text().splitlines()]
    assert len(ids) == len(set(ids)) == status["spans_acknowledged"] // 5
    state = json.loads((store / "serve" / "state.json").read_text())
    assert state == {"spans_acknowledged": status["spans_acknowledged"], "offset": inbox_end(store)}


def test_serving_freezes_what_is_loaded_and_collects_the_young_generation_less_often() -> None:
    """The collector's pauses were the slowest acknowledgements (docs/production.md): before listening, `serve`
    takes what it has loaded out of the collector's traversals and raises the young generation's threshold."""
    import gc

    from ace_eval.commands.serve import COLLECTOR_THRESHOLDS, steady_collector

    before = gc.get_threshold()
    try:
        steady_collector()
        assert gc.get_freeze_count() > 10_000  # pytest, pydantic, the CLI: everything imported so far
        assert gc.get_threshold() == COLLECTOR_THRESHOLDS
        assert COLLECTOR_THRESHOLDS[0] > 10 * before[0]
    finally:
        gc.unfreeze()
        gc.set_threshold(*before)
