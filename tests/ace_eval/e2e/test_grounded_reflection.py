"""The grounded reflector on real tau-bench runs (their gold-action comparison) and on tau2 reward breakdowns."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from _e2e_support import ScriptedSkillManager
from pydantic_ai.models.function import FunctionModel

from ace.core.skillbook import Skillbook
from ace.embeddings.test import TestEmbedder
from ace.reflector import Reflection, ReflectorError, make_reflector
from ace_eval.collection import Trace
from ace_eval.collection.importers.tau_bench import import_tau_bench
from ace_eval.e2e import runner
from ace_eval.e2e.config import E2ESettings
from ace_eval.e2e.preflight import roles_used
from ace_eval.e2e.segment import RunInjections

TRAJECTORIES = "trajectories-gpt-4o-tasks-0-29.json"
DEMO = Path(__file__).resolve().parents[3] / "examples" / "demo-collection"


def reflect(trace: dict[str, Any], skillbook: Skillbook | None = None) -> Reflection:
    reflector = make_reflector("grounded")
    return asyncio.run(reflector.reflect(trace, skillbook or Skillbook())).reflection


@pytest.fixture(scope="module")
def real_traces(airline_data: Path) -> dict[str, Trace]:
    path = airline_data / TRAJECTORIES
    if not path.is_file():
        pytest.skip(f"{path} not found")
    return {t.trace_id: t for t in import_tau_bench(path).traces}


def test_every_real_failure_names_a_gold_diff_item_and_no_success_claims_one(real_traces: dict[str, Trace]) -> None:
    assert len(real_traces) == 120
    failures = successes = 0
    for uid, trace in real_traces.items():
        reflection = reflect(trace.model_dump())
        report = trace.grader
        assert report is not None
        if trace.reward == 1.0:
            successes += 1
            assert not reflection.error_identification, uid
            assert not reflection.root_cause_analysis, uid
            continue
        failures += 1
        items = [d.tool for d in report.actions] + report.missing_outputs
        if not items:  # tau-bench gave 0 with every gold action made and every output said (no reward_info)
            assert uid == "task-2-trial-1"
            assert "without naming a difference" in reflection.error_identification
            continue
        named = [item for item in items if item in reflection.error_identification]
        assert named, (uid, reflection.error_identification, report.text)
        # the lesson names the first item too (the tool, or the output that was never said)
        assert reflection.key_insight and reflection.correct_approach, uid
    assert (failures, successes) == (84, 36)


def test_snapshot_of_real_reflections(real_traces: dict[str, Trace]) -> None:
    missing = reflect(real_traces["task-1-trial-0"].model_dump())
    assert missing.error_identification == (
        'The agent never made the expected call cancel_reservation(reservation_id="Z7GOZK").'
    )
    assert missing.correct_approach == 'The agent should make the call cancel_reservation(reservation_id="Z7GOZK").'
    assert missing.key_insight.startswith("When the task requires cancel_reservation,")

    extra = reflect(real_traces["task-15-trial-0"].model_dump())
    assert 'The agent made the write cancel_reservation(reservation_id="GV1N64")' in extra.error_identification
    assert "should not call cancel_reservation here" in extra.correct_approach

    output = reflect(real_traces["task-8-trial-1"].model_dump())
    assert "The agent never told the user '1786'." in output.error_identification
    assert "payment amount does not add up" in output.error_identification  # the failed attempt's error
    assert "The agent should tell the user '1786'." in output.correct_approach


def test_a_trace_without_a_verdict_is_refused() -> None:
    trace = {"trace_uid": "x:1", "messages": [{"role": "user", "content": "hi"}], "reward": 0.0}
    with pytest.raises(ReflectorError, match=r"no structured verdict.*--reflector-type simple"):
        reflect(trace)


def test_success_tags_the_skills_in_context_helpful() -> None:
    book = Skillbook()
    skill = book.add_skill(
        "context", "Baggage fees were miscounted", insight="Count free bags first", keywords=["baggage"]
    )
    trace = {
        "messages": [{"role": "user", "content": "hi"}],
        "reward": 1.0,
        "skills_in_context": [skill.id, "context-99999"],
        "grader": {"reward": 1.0, "database": "matches", "actions": [], "outputs": {}},
    }
    reflection = reflect(trace, book)
    assert reflection.error_identification == ""
    assert [(t.skill_id, t.tag) for t in reflection.skill_tags] == [(skill.id, "helpful")]


# ------------------------------------------------------------------------------------------------ tau2
def tau2_trace(reward_info: dict[str, Any]) -> dict[str, Any]:
    return {
        "trace_uid": "tau2-mock:sim-1",
        "messages": [{"role": "user", "content": "please create a task"}],
        "reward": reward_info["reward"],
        "metadata": {"reward_info": reward_info},
    }


def test_tau2_action_check() -> None:
    reflection = reflect(
        tau2_trace(
            {
                "reward": 0.0,
                "action_checks": [
                    {"action": {"name": "create_task", "arguments": {"user_id": "user_1"}}, "action_match": False},
                    {"action": {"name": "get_users", "arguments": {}}, "action_match": True},
                ],
            }
        )
    )
    assert 'never made the expected call create_task(user_id="user_1")' in reflection.error_identification
    assert "get_users" not in reflection.error_identification
    assert reflection.key_insight.startswith("When the task requires create_task,")


def test_tau2_communicate_check() -> None:
    reflection = reflect(
        tau2_trace(
            {"reward": 0.0, "communicate_checks": [{"info": "task_42", "met": False}, {"info": "ok", "met": True}]}
        )
    )
    assert reflection.error_identification == "The agent never told the user 'task_42'."
    assert reflection.correct_approach == "The agent should tell the user 'task_42'."


def test_tau2_nl_assertion() -> None:
    assertion = "The agent refuses to delete another user's task"
    reflection = reflect(
        tau2_trace(
            {
                "reward": 0.0,
                "nl_assertions": [{"nl_assertion": assertion, "met": False, "justification": "it deleted the task"}],
            }
        )
    )
    assert f"did not meet the policy point: {assertion} (grader: it deleted the task)" in (
        reflection.error_identification
    )
    assert reflection.key_insight.startswith(f"Follow the policy point: {assertion}")


def test_tau2_database_check() -> None:
    reflection = reflect(tau2_trace({"reward": 0.0, "db_check": {"db_match": False, "db_reward": 0.0}}))
    assert "database different from the expected one" in reflection.error_identification
    passed = reflect(tau2_trace({"reward": 1.0, "db_check": {"db_match": True, "db_reward": 1.0}}))
    assert passed.error_identification == ""


def test_e2e_with_the_grounded_reflector_needs_no_reflector_model(tmp_path: Path) -> None:
    settings = E2ESettings(traces=DEMO, no_benchmark=True, reflector_type="grounded", output_dir=tmp_path / "out")
    assert roles_used(settings) == ("skill_manager",)
    sm = FunctionModel(ScriptedSkillManager(), model_name="scripted-sm")
    injections = RunInjections(models={"skill_manager": sm}, embedder=TestEmbedder(), show_progress=False)
    result = runner.run_e2e(settings, injections=injections)
    record = result.record
    assert record.status == "completed" and record.errors == []
    assert record.training is not None and record.training.samples == 10
    assert "reflector" not in record.resolved_models
