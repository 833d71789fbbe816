"""Assembly in `ace-eval serve`: a trace is assembled when its root span arrives (or after the idle timeout,
marked incomplete), waits for `POST /v1/feedback` up to `--feedback-wait`, and its outcome is the feedback sent or
the `ace.reward` / `ace.feedback` attributes of its spans. Servers on 127.0.0.1."""

from __future__ import annotations

import json
import socket
import time
from pathlib import Path
from typing import Any

from _serve_helpers import agent_span, otlp_json, request, running, string_attr, url, wait_for

from ace_eval.serve import ServeApp
from ace_eval.serve._assembly import GIVE_WAY_S

JSON = {"Content-Type": "application/json"}


def _ready(store: Path) -> list[dict[str, Any]]:
    path = store / "serve" / "ready.jsonl"
    return [t for line in path.read_text().splitlines() for t in json.loads(line)["traces"]] if path.exists() else []


def _send(app: ServeApp, trace_id: str, spans: list[dict[str, Any]]) -> None:
    assert request(url(app, "/v1/traces"), otlp_json(trace_id, spans), JSON)[0] == 200


def test_a_trace_waits_for_its_feedback_then_carries_it(tmp_path: Path) -> None:
    store, trace = tmp_path / "store", "a" * 32
    with running(store, feedback_wait=3600) as app:
        _send(app, trace, [agent_span("1" * 16)])
        wait_for(lambda: app.status()["traces_assembled"] == 1)
        assert app.status()["traces_waiting_feedback"] == 1 and _ready(store) == []
        sent = json.dumps({"trace_id": trace.upper(), "reward": 0, "feedback": "Wrong order cancelled"}).encode()
        status, _, answer = request(url(app, "/v1/feedback"), sent, JSON)
        assert status == 200 and json.loads(answer) == {"trace_id": trace, "state": "applied"}
        wait_for(lambda: len(_ready(store)) == 1)
    (ready,) = _ready(store)
    assert (ready["reward"], ready["feedback"]) == (0.0, "Wrong order cancelled")
    assert ready["question"] == "Cancel order A1" and ready["metadata"]["otel_trace_id"] == trace


def test_feedback_sent_before_the_spans_is_kept(tmp_path: Path) -> None:
    store, trace = tmp_path / "store", "b" * 32
    with running(store, feedback_wait=3600) as app:
        sent = json.dumps({"trace_id": trace, "reward": 1}).encode()
        assert json.loads(request(url(app, "/v1/feedback"), sent, JSON)[2])["state"] == "waiting"
    with running(store, feedback_wait=3600) as app:  # survives a restart (feedback.jsonl)
        _send(app, trace, [agent_span("1" * 16)])
        wait_for(lambda: len(_ready(store)) == 1)
    assert _ready(store)[0]["reward"] == 1.0


def test_span_attributes_are_the_outcome_without_waiting(tmp_path: Path) -> None:
    store, trace = tmp_path / "store", "c" * 32
    judged = [{"key": "ace.reward", "value": {"doubleValue": 0.25}}, string_attr("ace.feedback", "too slow")]
    with running(store, feedback_wait=3600) as app:
        _send(app, trace, [agent_span("1" * 16, extra=judged)])
        wait_for(lambda: len(_ready(store)) == 1)
    assert (_ready(store)[0]["reward"], _ready(store)[0]["feedback"]) == (0.25, "too slow")


def test_children_before_the_root_and_a_trace_whose_root_never_comes(tmp_path: Path) -> None:
    store = tmp_path / "store"
    with running(store, feedback_wait=0, idle_timeout=0.5) as app:
        # the model-call child first, then the root agent span in a later request: one trace
        _send(app, "d" * 32, [agent_span("2" * 16, parent="1" * 16)])
        assert app.status()["otel_traces_pending"] in (0, 1)
        # a trace whose root (1111...) never arrives: assembled after the idle timeout, marked incomplete
        _send(app, "e" * 32, [agent_span("2" * 16, parent="1" * 16)])
        _send(app, "d" * 32, [agent_span("1" * 16)])
        wait_for(lambda: len(_ready(store)) == 2)
    by_trace = {t["metadata"]["otel_trace_id"]: t for t in _ready(store)}
    assert by_trace["e" * 32]["metadata"]["incomplete"] is True
    assert "incomplete" not in by_trace["d" * 32]["metadata"]
    assert by_trace["d" * 32]["metadata"]["otel_span_id"] == "1" * 16  # the root run, its nested run inside it


def test_bad_feedback_is_a_400_naming_the_fix(tmp_path: Path) -> None:
    with running(tmp_path / "store") as app:
        for body, words in [
            (b"[1]", "send an object"),
            (b'{"trace_id": "xyz", "reward": 1}', "32 hex digits"),
            (json.dumps({"trace_id": "a" * 32, "reward": "high"}).encode(), "finite number"),
            (json.dumps({"trace_id": "a" * 32}).encode(), "reward, a feedback"),
            (json.dumps({"trace_id": "a" * 32, "reward": 1, "score": 2}).encode(), "unknown fields"),
        ]:
            status, _, answer = request(url(app, "/v1/feedback"), body, JSON)
            assert status == 400 and words in json.loads(answer)["error"], answer


def test_a_trace_pending_at_a_restart_is_completed_after_it_and_late_spans_are_counted(tmp_path: Path) -> None:
    store, trace = tmp_path / "store", "f" * 32
    with running(store, feedback_wait=0) as app:
        _send(app, "9" * 32, [agent_span("1" * 16)])  # assembled before the restart
        _send(app, trace, [agent_span("2" * 16, parent="1" * 16)])  # its root comes after the restart
        wait_for(lambda: len(_ready(store)) == 1)
    with running(store, feedback_wait=0) as app:
        wait_for(lambda: app.status()["otel_traces_pending"] == 1)
        assert app.status()["late_spans"] == 0  # the spans read again are not late
        _send(app, trace, [agent_span("1" * 16)])
        wait_for(lambda: len(_ready(store)) == 2)
        _send(app, trace, [agent_span("3" * 16, parent="1" * 16)])  # after its trace was assembled
        wait_for(lambda: app.status()["late_spans"] == 1)
    ids = [json.loads(line)["otel_trace_id"] for line in (store / "serve" / "traces.jsonl").read_text().splitlines()]
    assert sorted(ids) == sorted(["9" * 32, trace])


class _Client:
    """A connection in the middle of a request, as `Connections` sees a handler."""

    def __init__(self) -> None:
        self.connection = socket.socket()


def test_assembly_gives_way_to_requests_in_flight_for_at_most_a_pass(tmp_path: Path) -> None:
    """Between two traces assembly waits while a request is in flight, at most `GIVE_WAY_S` in a pass, so an
    acknowledgement does not wait behind it and requests that never stop cannot stop assembly either."""
    client = _Client()
    with running(tmp_path / "store", feedback_wait=0) as app:
        waits: list[tuple[float, bool, float]] = []

        def give_way(seconds: float) -> bool:
            started = time.monotonic()
            quiet = app.connections.wait_quiet(seconds)
            waits.append((seconds, quiet, time.monotonic() - started))
            return quiet

        app.assembler.give_way = give_way
        app.connections.opened(client)
        app.connections.busy(client)  # a request in flight all along
        for n in range(3):
            _send(app, f"{n + 1:032x}", [agent_span("1" * 16)])  # its own request ends: the client is still busy
        wait_for(lambda: app.status()["traces_assembled"] == 3)
        busy = list(waits)
        app.connections.idle(client)
        _send(app, "e" * 32, [agent_span("1" * 16)])
        wait_for(lambda: app.status()["traces_assembled"] == 4)
        app.connections.closed(client)
    client.connection.close()
    assert busy and not any(quiet for _, quiet, _ in busy)
    assert all(budget <= GIVE_WAY_S and waited <= max(budget, 0) + 0.15 for budget, _, waited in busy)
    assert waits[len(busy) :] and all(quiet for _, quiet, _ in waits[len(busy) :])
