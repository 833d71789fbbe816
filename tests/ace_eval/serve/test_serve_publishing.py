"""Publishing in `ace-eval serve`: every `every` learned traces a candidate version goes to the store through the
gate (a user's scorer; the store's current version is the incumbent; a hold keeps `current`) or ungated with
`no_gate`; the served skillbook follows `current`, also after a rollback. Servers on 127.0.0.1, scripted models."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest
from _serve_helpers import agent_span, otlp_json, request, running, url, wait_for

from ace_eval.benchmarks.scorer import scorer_benchmark
from ace_eval.e2e.config import E2ESettings
from ace_eval.serve import LearnConfig, PublishConfig, ServeApp
from ace_eval.store import SkillbookStore

JSON = {"Content-Type": "application/json"}
TASKS = [f"t{i}" for i in range(6)]
SCORER = """
def score(skillbook, task_ids, num_trials):
    # 1 on every task once the skillbook holds a skill: the first candidate beats the empty incumbent, the next ties
    reward = 1.0 if skillbook.skills() else 0.0
    return {task: [reward] * num_trials for task in task_ids}
"""


@pytest.fixture
def scorer(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    (tmp_path / "serve_gate_scorer.py").write_text(textwrap.dedent(SCORER), encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    return "serve_gate_scorer:score"


def _learn() -> LearnConfig:
    settings = E2ESettings(reflector_type="simple")
    return LearnConfig(settings=settings, models_from="_serve_models:scripted", learn_every=3)


def _send(app: ServeApp, first: int, count: int) -> None:
    for n in range(first, first + count):
        assert request(url(app, "/v1/traces"), otlp_json(f"{n:032x}", [agent_span("1" * 16)]), JSON)[0] == 200


def _etag(app: ServeApp) -> str | None:
    status, headers, _ = request(url(app, "/v1/skillbook"))
    return headers.get("ETag") if status == 200 else None


def test_ungated_versions_every_n_learned_traces_and_rollback_while_serving(tmp_path: Path) -> None:
    store = tmp_path / "store"
    publish = PublishConfig(every=3, no_gate=True, command="ace-eval serve --no-gate")
    with running(store, feedback_wait=0, learn=_learn(), publish=publish) as app:
        assert _etag(app) is None
        _send(app, 0, 6)
        wait_for(lambda: SkillbookStore(store).current_number() == 2, seconds=60)
        assert _etag(app) == '"2"'
        SkillbookStore(store).rollback(1)
        assert _etag(app) == '"1"'  # the served skillbook follows `current`
        _send(app, 6, 3)  # learning goes on from the version rolled back to, not from what was rolled back
        wait_for(lambda: SkillbookStore(store).current_number() == 3, seconds=60)
        # publish.json, which the status reads, is written by the learning process right after the version
        wait_for(lambda: app.status()["publishing"]["published"] == 3)  # type: ignore[index]
    third = json.loads((store / "serve" / "learning" / "0003" / "batch.json").read_text())
    assert third["start"] == str(SkillbookStore(store).version(1).skillbook_path) and third["store_version"] == 1
    second = json.loads((store / "serve" / "learning" / "0002" / "batch.json").read_text())
    assert second["start"] != str(SkillbookStore(store).version(1).skillbook_path)  # chained from batch 1's run
    versions = SkillbookStore(store).versions()
    assert [v.ungated_reason for v in versions] == [
        "published with --no-gate by ace-eval serve: not compared with anything"
    ] * 3
    learned = [json.loads(line) for line in (store / "serve" / "learned.jsonl").read_text().splitlines()]
    assert [v.produced_by.run_dir for v in versions] == [line["run_dir"] for line in learned]
    assert versions[1].produced_by.kind == "serve" and versions[1].produced_by.details["learned_traces"] == 6


def test_through_the_gate_promote_then_hold(tmp_path: Path, scorer: str) -> None:
    store = tmp_path / "store"
    gate = scorer_benchmark(scorer, {"tasks": TASKS})
    publish = PublishConfig(every=3, gate=gate, tasks=TASKS)
    with running(store, feedback_wait=0, learn=_learn(), publish=publish) as app:
        _send(app, 0, 3)
        wait_for(lambda: app.status()["publishing"]["last"] is not None, seconds=60)  # type: ignore[index]
        assert SkillbookStore(store).current_number() == 1  # promoted over the agent without a skillbook
        _send(app, 3, 3)
        wait_for(lambda: app.status()["publishing"]["last"]["attempt"] == 2, seconds=60)  # type: ignore[index]
        last = app.status()["publishing"]["last"]  # type: ignore[index]
    assert last["decision"] == "hold" and last["version"] is None and last["incumbent_version"] == 1
    assert SkillbookStore(store).current_number() == 1  # a hold keeps `current`
    (version,) = SkillbookStore(store).versions()
    assert version.gate is not None and version.gate["decision"] == "promote"
    attempts = json.loads((store / "serve" / "publish.json").read_text())["attempts"]
    assert [a["decision"] for a in attempts] == ["promote", "hold"]
    held = json.loads((Path(attempts[1]["gate_dir"]) / "gate.json").read_text())
    assert held["decision"] == "hold"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--scorer", "serve_gate_scorer:score"], "--scorer needs --tasks"),
        (["--no-gate", "--scorer", "serve_gate_scorer:score", "--tasks", "t0"], "--no-gate publishes without the gate"),
        (["--benchmark", "tau-bench", "--scorer", "serve_gate_scorer:score"], "not both"),
    ],
)
def test_gate_options_that_contradict_exit_2_before_anything_is_written(
    tmp_path: Path, scorer: str, args: list[str], message: str
) -> None:
    from click.testing import CliRunner

    from ace_eval.cli import main

    result = CliRunner().invoke(main, ["serve", "--store", str(tmp_path / "store"), "--port", "0", *args])
    assert result.exit_code == 2 and message in result.output
    assert not (tmp_path / "store").exists()
