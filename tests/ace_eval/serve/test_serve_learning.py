"""Learning in `ace-eval serve`: every `learn_every` ready traces one batch goes through the e2e runner (scripted
reflector and skill manager: each sample searches, then adds or updates a skill); a restart continues; a batch that
failed halfway is resumed, never learned twice; one that fails every time is set aside after a few attempts; a trace
whose sample failed is not counted as learned. Servers on 127.0.0.1; the learning process learns with the scripted
models of `_serve_models`."""

from __future__ import annotations

import dataclasses
import json
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from _serve_helpers import MESSAGES, agent_span, otlp_json, request, running, string_attr, url, wait_for

from ace.core.skillbook import Skillbook
from ace_eval.e2e.config import E2ESettings
from ace_eval.run.samples import load_samples
from ace_eval.serve import LearnConfig, ServeApp

JSON = {"Content-Type": "application/json"}


def _send(app: ServeApp, n: int) -> None:
    assert request(url(app, "/v1/traces"), otlp_json(f"{n:032x}", [agent_span("1" * 16)]), JSON)[0] == 200


def _learn(every: int = 3, models: str = "scripted") -> LearnConfig:
    return LearnConfig(
        settings=E2ESettings(reflector_type="simple"),
        models_from=f"_serve_models:{models}",
        learn_every=every,
        retry_seconds=0.2,
    )


def _learned(store: Path) -> list[dict[str, Any]]:
    path = store / "serve" / "learned.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def _provenance(book: Path) -> Counter[str]:
    """How many skill-manager edits each trace produced, from the skills' occurrences."""
    skillbook = Skillbook.load_from_file(book)
    return Counter(o.trace_id for skill in skillbook.skills(include_inactive=True) for o in skill.occurrences)


def test_learns_every_n_traces_and_a_restart_continues(tmp_path: Path) -> None:
    store = tmp_path / "store"
    with running(store, feedback_wait=0, learn=_learn()) as app:
        for n in range(7):
            _send(app, n)
        wait_for(lambda: app.status()["traces_learned"] == 6, seconds=60)
        wait_for(lambda: app.status()["queues"]["traces_to_learn"] == 1)  # type: ignore[index]
        assert app.status()["batches_learned"] == 2
        metrics = request(url(app, "/metrics"))[2].decode()
        assert "ace_serve_traces_learned_total 6" in metrics and "ace_serve_traces_to_learn 1" in metrics
    first, second = _learned(store)
    assert len(first["trace_uids"]) == len(second["trace_uids"]) == 3
    assert not set(first["trace_uids"]) & set(second["trace_uids"])
    batch2 = json.loads((store / "serve" / "learning" / "0002" / "batch.json").read_text())
    assert batch2["start"] == first["skillbook"]  # the second batch starts from what the first learned
    with running(store, feedback_wait=0, learn=_learn()) as app:
        assert app.status()["traces_learned"] == 6
        for n in range(7, 9):
            _send(app, n)
        wait_for(lambda: app.status()["traces_learned"] == 9, seconds=60)
    learned = _learned(store)
    uids = [u for line in learned for u in line["trace_uids"]]
    assert len(uids) == len(set(uids)) == 9
    edits = _provenance(Path(learned[-1]["skillbook"]))
    assert len(edits) == 9  # every trace left its mark in the last skillbook, learned once each
    spans = (Path(learned[-1]["run_dir"]) / "spans.jsonl").read_text()
    assert '"sm.session"' in spans and '"ace.run"' in spans


def test_a_batch_that_failed_halfway_is_resumed_not_relearned(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = tmp_path / "store"
    monkeypatch.setenv("ACE_TEST_FAILED_LOG", str(tmp_path / "failed.txt"))
    with running(store, feedback_wait=0, learn=_learn(models="fail_once")) as app:
        for n in range(3):
            _send(app, n)
        wait_for(lambda: app.status()["traces_learned"] == 3, seconds=60)
        assert app.status()["last_learning_error"] is None
    (line,) = _learned(store)
    run_dir = Path(line["run_dir"])
    record = json.loads((run_dir / "run.json").read_text())
    assert [s["status"] for s in record["segments"]] == ["failed", "completed"]
    samples = load_samples(run_dir / "samples.jsonl")
    assert sorted(s.trace_uid for s in samples) == sorted(line["trace_uids"])  # one line each: none ran twice
    failed = (tmp_path / "failed.txt").read_text().split()
    assert len(failed) == 1 and failed[0] in line["trace_uids"]
    assert sum(_provenance(Path(line["skillbook"])).values()) == sum(len(s.operations) for s in samples)


def _send_text(app: ServeApp, n: int, text: str) -> None:
    span = agent_span("1" * 16)
    conversation = [{"role": "user", "parts": [{"type": "text", "content": text}]}, *MESSAGES[1:]]
    span["attributes"][1] = string_attr("pydantic_ai.all_messages", json.dumps(conversation))
    assert request(url(app, "/v1/traces"), otlp_json(f"{n:032x}", [span]), JSON)[0] == 200


def test_a_trace_whose_sample_failed_is_counted_apart_from_the_learned_ones(tmp_path: Path) -> None:
    store = tmp_path / "store"
    with running(store, feedback_wait=0, learn=_learn(models="broken_on")) as app:
        for n, text in enumerate(["Cancel order A1", "Cancel order BROKEN", "Cancel order A3"]):
            _send_text(app, n, text)
        wait_for(lambda: app.status()["batches_learned"] == 1, seconds=60)
        status = app.status()
        assert (status["traces_learned"], status["traces_errored"]) == (2, 1)
        assert "ace_serve_traces_errored_total 1" in request(url(app, "/metrics"))[2].decode()
    (line,) = _learned(store)
    assert len(line["errored_trace_uids"]) == 1 and line["errored_trace_uids"][0] in line["trace_uids"]
    with running(store, feedback_wait=0, learn=_learn(models="broken_on")) as app:
        assert (app.status()["traces_learned"], app.status()["traces_errored"]) == (2, 1)  # from learned.jsonl


def test_a_batch_that_fails_every_time_is_set_aside_and_later_batches_go_on(tmp_path: Path) -> None:
    store = tmp_path / "store"
    learn = dataclasses.replace(_learn(every=2, models="broken_on"), retry_seconds=0.1, max_attempts=2)
    batch = store / "serve" / "learning" / "0001"
    with running(store, feedback_wait=0, learn=learn) as app:
        for n, text in enumerate(["BROKEN one", "BROKEN two", "Cancel order A3", "Cancel order A4"]):
            _send_text(app, n, text)
        wait_for(lambda: app.status()["batches_learned"] == 1, seconds=60)
        status = app.status()
        assert status["traces_learned"] == 2 and status["queues"]["traces_to_learn"] == 0  # type: ignore[index]
        (failed,) = status["batches_failed"]  # type: ignore[misc]
        assert failed["batch"] == 1 and failed["attempts"] == 2 and "every sample failed" in failed["reason"]
    assert [line["batch"] for line in _learned(store)] == [2]
    (on_disk,) = [json.loads(line) for line in (store / "serve" / "failed.jsonl").read_text().splitlines()]
    assert on_disk["batch"] == 1 and len(on_disk["trace_uids"]) == 2
    assert len((batch / "attempts.jsonl").read_text().splitlines()) == 2
    with running(store, feedback_wait=0, learn=learn) as app:  # a restart does not try it again
        time.sleep(1.0)
        assert app.status()["batches_failed"] == [failed] and app.status()["learning_batch"] is None
    assert len((batch / "attempts.jsonl").read_text().splitlines()) == 2
