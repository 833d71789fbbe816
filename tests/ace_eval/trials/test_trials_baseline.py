"""The zero-cost baseline against an LLM configuration, as docs/grounded.md runs it: the grounded reflector and the
`rules` skill manager (no model) meet a `simple` reflector and an LLM skill manager (scripted FunctionModels
standing in for the embedded model) on the demo collection, judged by the example scorer
`examples/trials/failed_tool_scorer.py`. The command is read from the docs page and run through the real CLI."""

from __future__ import annotations

import importlib
import shlex
from pathlib import Path
from typing import Any

import pytest
from _e2e_support import ScriptedReflector, responses
from click.testing import CliRunner
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from ace import Skillbook
from ace.embeddings.test import TestEmbedder
from ace_eval.cli import main
from ace_eval.e2e import runner
from ace_eval.e2e.config import E2ESettings
from ace_eval.e2e.runner import E2EResult, RunInjections
from ace_eval.trials import read_scoreboard

ROOT = Path(__file__).resolve().parents[3]
EXAMPLE = ROOT / "examples" / "trials"
FAILURES = {
    "cancel-basic-economy-trial-0": {"cancel_reservation"},
    "upgrade-one-passenger-trial-0": {"update_reservation_flights"},
    "add-one-bag-trial-0": {"update_reservation_baggages"},
    "change-flight-gift-card-trial-0": {"update_reservation_flights"},
    "delay-complaint-regular-trial-0": {"send_certificate"},
}


def docs_command() -> list[str]:
    """The `ace-eval trials` command of docs/grounded.md that uses the example scorer, as argv after `ace-eval`."""
    text = (ROOT / "docs" / "grounded.md").read_text(encoding="utf-8").replace("\\\n", " ")
    lines = [line for line in text.splitlines() if "ace-eval trials" in line and "failed_tool_scorer" in line]
    assert len(lines) == 1, "docs/grounded.md runs the baseline comparison once"
    words = shlex.split(lines[0])
    assert words[:2] == ["PYTHONPATH=examples/trials", "ace-eval"]
    return words[2:]


class OneToolSkillManager:
    """An LLM skill manager that learns a single lesson, about cancel_reservation, whatever it reads."""

    def __call__(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if responses(messages) > 0:
            return ModelResponse(parts=[TextPart("Updated the skillbook.")])
        args = {
            "section": "context",
            "issue": "The agent cancelled a reservation the policy did not allow to cancel.",
            "keywords": ["airline", "cancel_reservation"],
            "insight": "Check the fare class and the cancellation rules before calling cancel_reservation.",
        }
        return ModelResponse(parts=[ToolCallPart("add_skill", args)])


def test_the_grounded_baseline_meets_an_llm_candidate_on_the_toy_judge(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    clone = tmp_path / "clone"
    clone.mkdir()
    (clone / "examples").symlink_to(ROOT / "examples")
    monkeypatch.chdir(clone)
    monkeypatch.syspath_prepend(str(EXAMPLE))
    seen: dict[str, tuple[str, str]] = {}

    def run(settings: E2ESettings) -> E2EResult:
        seen[settings.reflector_type] = (settings.reflector_model, settings.skill_manager_model)
        models: dict[Any, Any] = {}
        if settings.reflector_type != "grounded":  # the LLM roles are scripted; grounded + rules need no model
            models = {
                "reflector": FunctionModel(ScriptedReflector(), model_name="scripted-reflector"),
                "skill_manager": FunctionModel(OneToolSkillManager(), model_name="scripted-sm"),
            }
        return runner.run_e2e(settings, injections=RunInjections(models=models, embedder=TestEmbedder()))

    monkeypatch.setattr("ace_eval.trials._run.run_e2e", run)
    argv = [*docs_command(), "--out", str(tmp_path / "trial")]
    result = CliRunner().invoke(main, argv)
    assert result.exit_code == 0, result.output
    assert seen == {"grounded": (seen["grounded"][0], "rules"), "simple": ("local", "local")}
    board = read_scoreboard(tmp_path / "trial" / "scoreboard.json")
    assert board.benchmark == "failed_tool_scorer:score"
    got = {c.name: (c.verdict, c.dev.per_task) for c in board.candidates}
    assert got == {
        "grounded+rules": ("won", {t: [1.0] for t in FAILURES}),
        "simple+local": ("lost", {t: [1.0 if t == "cancel-basic-economy-trial-0" else 0.0] for t in FAILURES}),
    }
    assert board.winner == "grounded+rules"


def test_the_example_scorer_reads_the_graded_failures_and_names_their_tools(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(EXAMPLE))
    scorer = importlib.import_module("failed_tool_scorer")
    assert scorer.failed_tools() == FAILURES
    book = Skillbook()
    book.add_skill("context", "Wrong payment_id in update_reservation_baggages.", ["airline"], "Ask first.")
    rewards = scorer.score(book, ["add-one-bag-trial-0", "delay-complaint-regular-trial-0"], 2)
    assert rewards == {"add-one-bag-trial-0": [1.0, 1.0], "delay-complaint-regular-trial-0": [0.0, 0.0]}
    with pytest.raises(
        ValueError, match="not a graded failure of the demo collection: \\['cancel-business-trial-0'\\]"
    ):
        scorer.score(book, ["cancel-business-trial-0"], 1)
