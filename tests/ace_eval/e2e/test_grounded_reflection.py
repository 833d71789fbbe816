"""The grounded reflector on real tau-bench runs (their gold-action comparison) and on tau2 reward breakdowns."""

from __future__ import annotations

import asyncio
import importlib.util
import json
from pathlib import Path
from typing import Any

import pytest
from _e2e_support import ScriptedSkillManager
from pydantic_ai.models.function import FunctionModel

from ace.core.skillbook import Skillbook
from ace.embeddings.test import TestEmbedder
from ace.reflector import Reflection, ReflectorError, make_reflector
from ace_eval.collection import Trace
from ace_eval.collection.importers import import_tau2
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
def _tau2_results() -> Any:
    """The tau2 importer tests' scripted Results payload (one task, a success and a failure)."""
    path = Path(__file__).resolve().parents[1] / "collection" / "test_importers_tau2.py"
    spec = importlib.util.spec_from_file_location("_tau2_results", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.results


def tau2_trace(tmp_path: Path, reward_info: dict[str, Any]) -> dict[str, Any]:
    """A failed simulation of the scripted Results, with `reward_info` as tau2 grades it, through the importer."""
    payload = _tau2_results()()
    payload["simulations"][1]["reward_info"] = reward_info
    path = tmp_path / "results.json"
    path.write_text(json.dumps(payload), encoding="utf-8")
    trace = import_tau2(path).traces[1].model_dump()
    assert trace["metadata"]["reward_info"] == reward_info  # the verdict travels in the trace
    return trace


def test_tau2_success_is_not_a_failure(tmp_path: Path) -> None:
    path = tmp_path / "results.json"
    path.write_text(json.dumps(_tau2_results()()), encoding="utf-8")
    good, bad = (t.model_dump() for t in import_tau2(path).traces)
    assert reflect(good).error_identification == ""
    failed = reflect(bad)  # db_check and the communicate check failed; the reservation lookup errored
    assert "never told the user '1180'" in failed.error_identification
    assert "get_reservation_details returned errors" in failed.error_identification


def test_tau2_action_check(tmp_path: Path) -> None:
    reflection = reflect(
        tau2_trace(
            tmp_path,
            {
                "reward": 0.0,
                "action_checks": [
                    {
                        "action": {"name": "cancel_reservation", "arguments": {"reservation_id": "Q4ZK8M"}},
                        "action_match": False,
                    },
                    {"action": {"name": "get_user_details", "arguments": {}}, "action_match": True},
                ],
            },
        )
    )
    assert 'never made the expected call cancel_reservation(reservation_id="Q4ZK8M")' in (
        reflection.error_identification
    )
    assert "get_user_details(" not in reflection.error_identification
    assert reflection.key_insight.startswith("When the task requires cancel_reservation,")


def test_tau2_communicate_check(tmp_path: Path) -> None:
    checks = [{"info": "1180", "met": False}, {"info": "Q4ZK8M", "met": True}]
    reflection = reflect(tau2_trace(tmp_path, {"reward": 0.0, "communicate_checks": checks}))
    assert reflection.error_identification.startswith("The agent never told the user '1180'.")
    assert "Q4ZK8M" not in reflection.error_identification
    assert reflection.correct_approach == "The agent should tell the user '1180'."


def test_tau2_nl_assertion(tmp_path: Path) -> None:
    assertion = "The agent refunds to the original payment method"
    checks = [{"nl_assertion": assertion, "met": False, "justification": "it offered a voucher"}]
    reflection = reflect(tau2_trace(tmp_path, {"reward": 0.0, "nl_assertions": checks}))
    assert f"did not meet the policy point: {assertion} (grader: it offered a voucher)" in (
        reflection.error_identification
    )
    assert reflection.key_insight.startswith(f"Follow the policy point: {assertion}")


def test_tau2_database_check(tmp_path: Path) -> None:
    reflection = reflect(tau2_trace(tmp_path, {"reward": 0.0, "db_check": {"db_match": False, "db_reward": 0.0}}))
    assert "database different from the expected one" in reflection.error_identification


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


def test_a_collection_without_any_verdict_is_refused_before_writing(tmp_path: Path) -> None:
    from ace_eval.collection import read_collection, write_collection
    from ace_eval.e2e.config import ConfigError

    _, traces = read_collection(DEMO)
    ungraded = tmp_path / "ungraded"
    write_collection(ungraded, [t.model_copy(update={"grader": None}) for t in traces], source_system="demo-airline")
    settings = E2ESettings(traces=ungraded, no_benchmark=True, reflector_type="grounded", output_dir=tmp_path / "out")
    sm = FunctionModel(ScriptedSkillManager(), model_name="scripted-sm")
    injections = RunInjections(models={"skill_manager": sm}, embedder=TestEmbedder(), show_progress=False)
    with pytest.raises(ConfigError, match=r"none of the 10 traces carries one.*--reflector-type simple"):
        runner.run_e2e(settings, injections=injections)
    assert not (tmp_path / "out").exists()
