"""Learning in `ace-eval serve`: every `learn_every` ready traces one batch goes through the e2e runner (scripted
reflector and skill manager: each sample searches, then adds or updates a skill); a restart continues; a batch that
failed halfway is resumed, never learned twice. Servers on 127.0.0.1."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

from _e2e_support import scripted_injections
from _serve_helpers import agent_span, otlp_json, request, running, url, wait_for

from ace.core.skillbook import Skillbook
from ace_eval.e2e.config import E2ESettings
from ace_eval.e2e.training_results import SampleResult
from ace_eval.run.samples import load_samples
from ace_eval.serve import LearnConfig, ServeApp

JSON = {"Content-Type": "application/json"}


def _send(app: ServeApp, n: int) -> None:
    assert request(url(app, "/v1/traces"), otlp_json(f"{n:032x}", [agent_span("1" * 16)]), JSON)[0] == 200


def _learn(every: int = 3, **injected: Any) -> LearnConfig:
    return LearnConfig(
        settings=E2ESettings(reflector_type="simple"),
        injections=scripted_injections(**injected),
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


class _FailOnce(Exception):
    pass


def test_a_batch_that_failed_halfway_is_resumed_not_relearned(tmp_path: Path) -> None:
    store = tmp_path / "store"
    failed: list[str] = []

    def fail_once(sample: SampleResult) -> None:
        if not failed:
            failed.append(sample.trace_uid)
            raise _FailOnce("the model went away")

    with running(store, feedback_wait=0, learn=_learn(on_sample=fail_once)) as app:
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
    assert failed[0] in line["trace_uids"]
    assert sum(_provenance(Path(line["skillbook"])).values()) == sum(len(s.operations) for s in samples)
