"""The learning process of `ace-eval serve`: learning runs in a spawned process of its own, whose status the server
serves; a crashed one is restarted with a backoff and continues its batch (nothing learned twice); stopping with a
batch or a gate in flight lets the sample finish or, past the grace, kills the process; killing the server (kill -9)
leaves no learning process behind; a learning process that cannot start stops `serve` with exit 2 before it
listens. Servers on 127.0.0.1 with the scripted models of `_serve_models`; bounded loops."""

from __future__ import annotations

import json
import os
import subprocess
import threading
import time
from pathlib import Path

import pytest
from _serve_helpers import agent_span, otlp_json, request, running, start_serve, url, wait_for

from ace_eval.benchmarks.scorer import scorer_benchmark
from ace_eval.e2e.config import E2ESettings
from ace_eval.run.samples import load_samples
from ace_eval.serve import LearnConfig, LearningStartError, PublishConfig, ServeApp, ServeConfig
from ace_eval.serve._learning_child import LEARNING_NICENESS

JSON = {"Content-Type": "application/json"}


def _learn(models: str = "scripted", every: int = 3) -> LearnConfig:
    return LearnConfig(
        settings=E2ESettings(reflector_type="simple"),
        models_from=f"_serve_models:{models}",
        learn_every=every,
        retry_seconds=0.2,
        restart_seconds=0.2,
    )


def _send(app: ServeApp, first: int, count: int) -> None:
    for n in range(first, first + count):
        assert request(url(app, "/v1/traces"), otlp_json(f"{n + 1:032x}", [agent_span("1" * 16)]), JSON)[0] == 200


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    state = Path(f"/proc/{pid}/stat")
    return not (state.exists() and state.read_text().rsplit(")", 1)[1].split()[0] == "Z")  # a zombie has ended


def _learned_once(store: Path) -> list[str]:
    """The trace uids learned, each checked to have one sample in its batch's run."""
    lines = [json.loads(line) for line in (store / "serve" / "learned.jsonl").read_text().splitlines()]
    uids = []
    for line in lines:
        samples = load_samples(Path(line["run_dir"]) / "samples.jsonl")
        assert sorted(s.trace_uid for s in samples) == sorted(line["trace_uids"])  # one sample each
        uids += line["trace_uids"]
    assert len(uids) == len(set(uids))
    return uids


def test_learning_runs_in_another_process_whose_status_the_server_serves(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ACE_TEST_SM_DELAY", "0.3")
    store = tmp_path / "store"
    with running(store, feedback_wait=0, learn=_learn()) as app:
        process = app.status()["learning_process"]
        assert isinstance(process, dict) and process["pid"] not in (None, os.getpid()) and process["restarts"] == 0
        if hasattr(os, "getpriority"):  # background work: the scheduler favours the server's requests
            niceness = os.getpriority(os.PRIO_PROCESS, process["pid"]) - os.getpriority(os.PRIO_PROCESS, 0)
            assert niceness == min(LEARNING_NICENESS, 19 - os.getpriority(os.PRIO_PROCESS, 0))
        _send(app, 0, 3)
        wait_for(lambda: app.status()["learning_batch"] == 1, seconds=60)  # told by the learning process
        on_disk = json.loads((store / "serve" / "learning.json").read_text())
        assert on_disk["pid"] == process["pid"] and on_disk["state"] == "ready"
        wait_for(lambda: app.status()["traces_learned"] == 3, seconds=60)
        status = app.status()
        assert status["learning_batch"] is None and status["queues"]["traces_to_learn"] == 0  # type: ignore[index]
        assert "ace_serve_traces_learned_total 3" in request(url(app, "/metrics"))[2].decode()
    assert not _alive(process["pid"])  # stopped with the server


def test_a_crashed_learning_process_is_restarted_and_its_batch_continues(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ACE_TEST_CRASH_MARKER", str(tmp_path / "crashed"))
    store = tmp_path / "store"
    with running(store, feedback_wait=0, learn=_learn("crash_once")) as app:
        first = app.status()["learning_process"]["pid"]  # type: ignore[index]
        _send(app, 0, 3)
        wait_for(lambda: app.status()["traces_learned"] == 3, seconds=90)
        process = app.status()["learning_process"]
        assert isinstance(process, dict) and process["restarts"] == 1 and process["pid"] != first
        assert f"the learning process ({first}) ended: killed by SIGKILL" in process["last_crash"]
        assert "ace_serve_learning_restarts_total 1" in request(url(app, "/metrics"))[2].decode()
    crashed_on = (tmp_path / "crashed").read_text()
    assert crashed_on in _learned_once(store)  # the sample committed before the crash was not learned again
    (run_dir,) = (store / "serve" / "learning" / "0001").glob("run_*")
    assert len(json.loads((run_dir / "run.json").read_text())["segments"]) == 2  # resumed, not started again


@pytest.mark.parametrize("grace", [0.2, 30.0], ids=["killed-past-grace", "sample-finishes"])
def test_stop_with_a_batch_in_flight(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, grace: float) -> None:
    monkeypatch.setenv("ACE_TEST_SM_DELAY", "2")
    store = tmp_path / "store"
    runs = store / "serve" / "learning" / "0001"
    app = ServeApp(ServeConfig(store=store, port=0, settle=0.0, feedback_wait=0, learn=_learn(), stop_grace=grace))
    app.start()
    try:
        pid = app.status()["learning_process"]["pid"]  # type: ignore[index]
        _send(app, 0, 3)
        wait_for(lambda: app.status()["learning_batch"] == 1, seconds=60)
        time.sleep(0.5)  # inside the first sample's skill-manager call
    finally:
        started = time.monotonic()
        finished = app.stop()
    took = time.monotonic() - started
    assert finished is (grace > 10) and not _alive(pid)
    assert took < (5 if grace < 10 else 20)
    (run_dir,) = runs.glob("run_*")
    done = load_samples(run_dir / "samples.jsonl")
    assert len(done) < 3
    if grace > 10:  # stopped at the end of a sample: recorded as interrupted
        assert json.loads((run_dir / "run.json").read_text())["segments"][-1]["status"] == "interrupted"
    monkeypatch.setenv("ACE_TEST_SM_DELAY", "0")
    with running(store, feedback_wait=0, learn=_learn()) as again:
        wait_for(lambda: again.status()["traces_learned"] == 3, seconds=90)
    assert len(_learned_once(store)) == 3


def _serve(store: Path, *args: str) -> tuple[subprocess.Popen[bytes], str]:
    """`serve` on a free port: (the process, its base URL, or all it said when it ended before listening)."""
    process, base, seen = start_serve(["--store", str(store), "--port", "0", "--feedback-wait", "0", *args])
    if process.stderr is not None:
        threading.Thread(target=process.stderr.read, daemon=True).start()  # drain the rest
    return process, base if base is not None else seen


def test_kill_9_of_the_server_leaves_no_learning_process(tmp_path: Path) -> None:
    process, base = _serve(tmp_path / "store", "--models-from", "_serve_models:scripted", "--learn-every", "3")
    try:
        pid = json.loads(request(f"{base}/v1/status")[2])["learning_process"]["pid"]
        assert pid not in (None, process.pid) and _alive(pid)
        process.kill()
        process.wait(timeout=30)
        deadline = time.monotonic() + 10
        while _alive(pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not _alive(pid)
    finally:
        if process.poll() is None:
            process.kill()


def test_a_learning_process_that_cannot_start_exits_2_before_listening(tmp_path: Path) -> None:
    process, said = _serve(tmp_path / "store", "--models-from", "no_such_module:models", "--learn-every", "3")
    assert process.wait(timeout=30) == 2, said
    assert "--models-from 'no_such_module:models': module 'no_such_module' cannot be imported" in said
    assert "listening" not in said
    with pytest.raises(LearningStartError, match="must be a function that takes no argument"):
        ServeApp(ServeConfig(store=tmp_path / "s2", port=0, learn=_learn("FailedOnce"))).start()


SLOW_SCORER = """
import time

def score(skillbook, task_ids, num_trials):
    time.sleep(120)  # a gate's benchmark run that takes long
    return {task: [1.0] * num_trials for task in task_ids}
"""


def test_stop_grace_bounds_a_gate_in_flight(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "slow_gate_scorer.py").write_text(SLOW_SCORER, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))  # the learning process starts with this process's sys.path
    gate = scorer_benchmark("slow_gate_scorer:score", {"tasks": ["t1"]})
    store = tmp_path / "store"
    config = ServeConfig(
        store=store,
        port=0,
        settle=0.0,
        feedback_wait=0,
        learn=_learn(),
        publish=PublishConfig(every=3, gate=gate, tasks=["t1"]),
        stop_grace=0.5,
    )
    app = ServeApp(config)
    app.start()
    try:
        pid = app.status()["learning_process"]["pid"]  # type: ignore[index]
        _send(app, 0, 3)
        wait_for(lambda: app.status()["traces_learned"] == 3, seconds=60)
        wait_for(lambda: any((store / "serve" / "gates").glob("*")), seconds=30)  # the gate has started
    finally:
        started = time.monotonic()
        finished = app.stop()
    assert not finished and time.monotonic() - started < 10 and not _alive(pid)
    assert not (store / "serve" / "publish.json").exists()  # the attempt is made again at the next start


def test_a_learning_process_that_cannot_be_spawned_is_an_error_not_a_hang(tmp_path: Path) -> None:
    unpicklable = PublishConfig(every=3, no_gate=True)
    object.__setattr__(unpicklable, "command", lambda: None)  # as a benchmark holding a lambda: it cannot be pickled
    app = ServeApp(ServeConfig(store=tmp_path / "store", port=0, learn=_learn(), publish=unpicklable))
    with pytest.raises(RuntimeError, match=r"the learning process could not be started: .*pickle"):
        app.start()
