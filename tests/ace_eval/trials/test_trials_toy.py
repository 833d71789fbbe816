"""`ace-eval trials` on the toy benchmark plugin (`examples/plugins/ace-toy-benchmark`), scripted end to end (no
network): three candidates whose skill managers learn a helpful, a harmful and a useless skill from the same
collected traces; the helpful one wins, passes the gate against an empty incumbent, is published, and only it is
scored on the test tasks; the other two are `lost` with their runs and dev scores on record."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from _e2e_support import ScriptedReflector, prompt_text, responses
from _plugins import install_toy_benchmark
from click.testing import CliRunner, Result
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from ace.embeddings.test import TestEmbedder
from ace_eval.cli import main
from ace_eval.e2e import runner
from ace_eval.e2e.config import E2ESettings
from ace_eval.e2e.runner import E2EResult, RunInjections
from ace_eval.store import SkillbookStore
from ace_eval.trials import read_scoreboard

INSIGHTS = {
    "helpful": "Before processing it, do the step the customer's complaint names.",
    "harmful": "Escalate every such request to a human colleague.",
    "useless": "Mention the weather.",
}
DEV = "refund-1,address-1,refund-2,refund-3,address-2,refund-4"  # every hard request: the empty skillbook fails all
TEST = "cancel-2,password-2,upgrade-2"


class KindSkillManager:
    """Adds one skill per trace on the trace's topic (helpful, harmful) or on a topic no request has (useless)."""

    def __init__(self, kind: str) -> None:
        self.kind = kind

    def __call__(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if responses(messages) > 0:
            return ModelResponse(parts=[TextPart("Updated the skillbook.")])
        from ace_toy_benchmark import TASKS

        prompt = prompt_text(messages)
        topic = next(task.topic for task in TASKS if task.request[:50] in prompt)
        keyword = "weather" if self.kind == "useless" else topic
        args = {"section": "context", "issue": f"{topic} requests fail when the agent skips a step.",
                "keywords": [keyword], "insight": INSIGHTS[self.kind]}  # fmt: skip
        return ModelResponse(parts=[ToolCallPart("add_skill", args)])


def injections(settings: E2ESettings) -> RunInjections:
    kind = settings.skill_manager_model.split(":", 1)[1]
    models: dict[Any, Any] = {
        "reflector": FunctionModel(ScriptedReflector(), model_name="scripted-reflector"),
        "skill_manager": FunctionModel(KindSkillManager(kind), model_name=f"scripted-sm-{kind}"),
    }
    return RunInjections(models=models, embedder=TestEmbedder(), show_progress=False)


@pytest.fixture
def learned(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The toy plugin installed; each candidate's run gets the skill manager its `skill_manager_model` names."""
    install_toy_benchmark(tmp_path / "site", monkeypatch)
    runs: list[str] = []

    def run(settings: E2ESettings, *, injections_: RunInjections | None = None) -> E2EResult:
        runs.append(settings.skill_manager_model)
        return runner.run_e2e(settings, injections=injections(settings))

    monkeypatch.setattr("ace_eval.trials._run.run_e2e", run)
    return runs


def invoke(args: list[str]) -> Result:
    return CliRunner().invoke(main, ["trials", *args])


VARY = ["--vary", "skill_manager_model=test:helpful,test:harmful,test:useless"]


def test_the_helpful_candidate_wins_passes_the_gate_is_published_and_alone_meets_the_test_tasks(
    learned: list[str], tmp_path: Path
) -> None:
    out, store = tmp_path / "trial", tmp_path / "store"
    result = invoke([*VARY, "--benchmark", "toy-support", "--dev-tasks", DEV, "--test-tasks", TEST,
                     "--out", str(out), "--publish", str(store)])  # fmt: skip
    assert result.exit_code == 0, result.output
    assert learned == ["test:helpful", "test:harmful", "test:useless"]  # each candidate learned once
    # the learn split was collected once, into the trial folder, and every candidate replayed it
    assert (out / "traces" / "traces.jsonl").is_file()
    board = read_scoreboard(out / "scoreboard.json")
    by_name = {c.name: c for c in board.candidates}
    helpful, harmful, useless = (by_name[f"skill_manager_model=test_{k}"] for k in ("helpful", "harmful", "useless"))
    assert board.winner == helpful.name and helpful.verdict == "won"
    assert harmful.verdict == useless.verdict == "lost"
    assert helpful.dev.mean == 1.0 and harmful.dev.mean == 0.0 and useless.dev.mean == 0.0
    assert set(helpful.dev.per_task) == set(DEV.split(",")) == set(harmful.dev.per_task)
    assert board.pareto == [helpful.name]
    # losers keep their runs, skillbooks and dev scores
    for loser in (harmful, useless):
        assert Path(loser.skillbook).is_file() and Path(loser.run_dir, "run.json").is_file()
        assert Path(loser.run_dir).parent.joinpath("dev", "scores.json").is_file()
    assert json.loads(Path(harmful.skillbook).read_text())["skills"]  # it did learn (escalate) skills
    # the gate: the winner against the empty incumbent on the same tasks and seeds
    assert board.incumbent == "none" and board.gate.decision == "promote"
    assert board.gate.baseline.skillbook is None and board.gate.tasks == 6
    assert board.gate.p_value < 0.05 and board.gate.delta.mean == 1.0
    assert board.published == f"{store} version 1"
    current = SkillbookStore(store).current()
    assert current is not None and current.record.produced_by.kind == "trials"
    # only the winner met the test tasks, once
    assert board.test is not None and board.test.candidate == helpful.name and board.test.mean == 1.0
    assert sorted(board.test.per_task) == sorted(TEST.split(","))
    assert [p.name for p in out.rglob("scores.json") if "test" in p.parts] == ["scores.json"]
    assert "won   skill_manager_model=test_helpful: dev mean 1.000" in result.output


def test_a_bad_vary_key_or_value_exits_2_naming_the_valid_keys_before_anything_is_written(
    learned: list[str], tmp_path: Path
) -> None:
    out = tmp_path / "trial"
    for vary in ("reflector_kind=simple,rr", "epochs=1,two", "reflector_type=simple,bogus"):
        result = invoke(["--vary", vary, "--benchmark", "toy-support", "--out", str(out)])
        assert result.exit_code == 2, (vary, result.output)
        assert not out.exists() and not learned
    result = invoke(["--vary", "reflector_kind=simple,rr", "--benchmark", "toy-support", "--out", str(out)])
    assert "valid keys:" in result.output and "reflector_type" in result.output and "epochs" in result.output
    result = invoke(["--vary", "epochs=1,two", "--benchmark", "toy-support", "--out", str(out)])
    assert "--vary epochs=two" in result.output
