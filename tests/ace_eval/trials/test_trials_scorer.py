"""`ace-eval trials --traces examples/demo-collection --scorer MODULE:FUNCTION`: the candidates replay the demo
collection (scripted reflector and skill managers standing in for the embedded models) and a user's scoring
function is the only judge (no benchmark installed or run). The helpful candidate wins and is published."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import pytest
from _e2e_support import ScriptedReflector, responses
from click.testing import CliRunner
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from ace.embeddings.test import TestEmbedder
from ace_eval.cli import main
from ace_eval.e2e import runner
from ace_eval.e2e.config import E2ESettings
from ace_eval.e2e.runner import E2EResult, RunInjections
from ace_eval.trials import read_scoreboard

DEMO = Path(__file__).resolve().parents[3] / "examples" / "demo-collection"
INSIGHTS = {
    "helpful": "Confirm the change with the customer before calling a tool that changes a reservation.",
    "harmful": "Escalate every reservation change to a human agent.",
    "useless": "Greet the customer warmly.",
}
SCORER = """
def score(skillbook, task_ids, num_trials):
    insights = [(s.insight or "").lower() for s in skillbook.skills() if s.visible]
    if any("escalate" in i for i in insights):
        reward = 0.0
    elif any("confirm" in i for i in insights):
        reward = 1.0
    else:
        reward = 0.0
    # a dev task's reward differs from a test task's only by its id: the function sees which were asked
    return {t: [reward if not t.startswith("easy") else 1.0] * num_trials for t in task_ids}
"""


class InsightSkillManager:
    def __init__(self, kind: str) -> None:
        self.kind = kind

    def __call__(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if responses(messages) > 0:
            return ModelResponse(parts=[TextPart("Updated the skillbook.")])
        args = {
            "section": "context",
            "issue": "Reservation changes go wrong.",
            "keywords": ["airline"],
            "insight": INSIGHTS[self.kind],
        }
        return ModelResponse(parts=[ToolCallPart("add_skill", args)])


@pytest.fixture
def scorer(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    (tmp_path / "my_trial_scorer.py").write_text(textwrap.dedent(SCORER), encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))

    def run(settings: E2ESettings) -> E2EResult:
        kind = settings.skill_manager_model.split(":", 1)[1]
        models: dict[Any, Any] = {
            "reflector": FunctionModel(ScriptedReflector(), model_name="scripted-reflector"),
            "skill_manager": FunctionModel(InsightSkillManager(kind), model_name=f"scripted-sm-{kind}"),
        }
        return runner.run_e2e(settings, injections=RunInjections(models=models, embedder=TestEmbedder()))

    monkeypatch.setattr("ace_eval.trials._run.run_e2e", run)
    return "my_trial_scorer:score"


def test_a_scoring_function_judges_candidates_learned_from_the_demo_collection(scorer: str, tmp_path: Path) -> None:
    out, store = tmp_path / "trial", tmp_path / "store"
    args = [
        "trials",
        "--vary",
        "skill_manager_model=test:useless,test:harmful,test:helpful",
        "--traces",
        str(DEMO),
        "--limit",
        "3",
        "--scorer",
        scorer,
        "--dev-tasks",
        "d1,d2,d3,d4,d5,d6,easy1",
        "--test-tasks",
        "t1,t2",
        "--num-trials",
        "2",
        "--out",
        str(out),
        "--publish",
        str(store),
    ]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    board = read_scoreboard(out / "scoreboard.json")
    assert board.benchmark == scorer
    verdicts = {c.name.removeprefix("skill_manager_model=test_"): c.verdict for c in board.candidates}
    assert verdicts == {"useless": "lost", "harmful": "lost", "helpful": "won"}
    assert board.winner == "skill_manager_model=test_helpful"
    # the easy task is solved by every candidate: all three are on the Pareto set, the helpful one alone best overall
    assert board.pareto == [c.name for c in board.candidates]
    assert board.gate.decision == "promote" and board.published == f"{store} version 1"
    assert board.test is not None and board.test.per_task == {"t1": [1.0, 1.0], "t2": [1.0, 1.0]}
    assert not (out / "traces").exists()  # --traces: nothing collected, every candidate replayed the demo
    for entry in board.candidates:
        assert Path(entry.run_dir, "collection", "traces.jsonl").is_file()


COUNTING = """
def score(skillbook, task_ids, num_trials):
    # task `kN-x` passes when the skillbook holds at least N visible skills
    n = len([s for s in skillbook.skills() if s.visible])
    return {t: [1.0 if n >= int(t.split("-")[0][1:]) else 0.0] * num_trials for t in task_ids}
"""


def test_grounded_reflections_and_the_rules_skill_manager_need_no_model_at_all(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No scripted model either: the grounded reflector and the `rules` skill manager learn from the demo's
    verdicts; the candidate that reads all ten traces learns more skills and wins."""
    (tmp_path / "counting_scorer.py").write_text(textwrap.dedent(COUNTING), encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    out = tmp_path / "trial"
    args = [
        "trials",
        "--traces",
        str(DEMO),
        "--reflector-type",
        "grounded",
        "--skill-manager-model",
        "rules",
        "--vary",
        "limit=1,10",
        "--scorer",
        "counting_scorer:score",
        "--dev-tasks",
        "k1-a,k1-b,k2-a,k2-b,k3-a,k3-b",
        "--test-tasks",
        "k9-a",
        "--out",
        str(out),
    ]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    board = read_scoreboard(out / "scoreboard.json")
    assert [(c.name, c.verdict, c.dev.mean) for c in board.candidates] == [
        ("limit=1", "lost", 0.0),
        ("limit=10", "won", 1.0),
    ]
    assert board.gate.decision == "promote" and board.incumbent == "none"
    assert board.test is not None and board.test.per_task == {"k9-a": [0.0]}
