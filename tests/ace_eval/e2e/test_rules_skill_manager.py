"""The rule-based skill manager (`--skill-manager-model rules`) on grounded reflections: no model, real sessions."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ace.core.skillbook import Skillbook
from ace.embeddings.test import TestEmbedder
from ace.llm import infer_model
from ace.llm.rules import lessons_of
from ace.reflector import Reflection
from ace.skill_manager.manager import SkillManager
from ace_eval.e2e import runner
from ace_eval.e2e.config import E2ESettings
from ace_eval.e2e.preflight import preflight
from ace_eval.e2e.segment import RunInjections

DEMO = Path(__file__).resolve().parents[3] / "examples" / "demo-collection"


def grounded_settings(tmp_path: Path) -> E2ESettings:
    return E2ESettings(
        traces=DEMO,
        no_benchmark=True,
        reflector_type="grounded",
        skill_manager_model="rules",
        output_dir=tmp_path / "out",
    )


def test_the_preflight_accepts_rules_without_a_key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for key in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "ACE_MODEL", "ACE_SKILL_MANAGER_MODEL"):
        monkeypatch.delenv(key, raising=False)
    checked = preflight(grounded_settings(tmp_path), {}, TestEmbedder())
    assert list(checked.models) == ["skill_manager"] and checked.models["skill_manager"].model_name == "rules"


def test_the_demo_collection_learns_one_grounded_skill_per_failure(tmp_path: Path) -> None:
    result = runner.run_e2e(
        grounded_settings(tmp_path), injections=RunInjections(embedder=TestEmbedder(), show_progress=False)
    )
    record = result.record
    assert record.status == "completed" and record.errors == []
    rewards = {}
    for line in (DEMO / "traces.jsonl").read_text(encoding="utf-8").splitlines():
        trace = json.loads(line)
        rewards[trace["trace_uid"]] = trace["reward"]
    skills = result.skillbook.skills()
    assert sorted((s.keywords[1], s.keywords[2]) for s in skills) == [
        ("cancel_reservation", "forbidden_write"),
        ("send_certificate", "forbidden_write"),
        ("update_reservation_baggages", "wrong_arguments"),
        ("update_reservation_flights", "forbidden_write"),
        ("update_reservation_flights", "wrong_arguments"),
    ]
    for skill in skills:
        assert skill.keywords[0] == "airline" and skill.keywords[1] in skill.issue  # names the tool it failed on
        assert all(rewards[o.trace_uid] == 0.0 for o in skill.occurrences)  # never from a successful trace
    baggage = next(s for s in skills if "update_reservation_baggages" in s.keywords)
    assert (
        baggage.issue == "In airline, the agent called update_reservation_baggages with wrong total_baggages, "
        "nonfree_baggages."
    )
    spans = [json.loads(line)["name"] for line in result.folder.spans.read_text(encoding="utf-8").splitlines()]
    assert spans.count("sm.session") == 10


def test_a_repeated_failure_widens_the_skill_instead_of_adding_one() -> None:
    from ace.core.insight_source import InsightSource

    book = Skillbook()
    manager = SkillManager(infer_model("rules"), embedder=TestEmbedder())

    def reflection(arguments: str) -> Reflection:
        return Reflection(
            error_identification="The agent called book_reservation with arguments that differ.",
            root_cause_analysis="This happened because ...",
            correct_approach="The agent should call book_reservation(...).",
            key_insight=f"Before calling book_reservation, check {arguments} against the user's request and the policy",
        )

    for i, (system, arguments) in enumerate(
        [("tau-bench-airline", "cabin"), ("tau-bench-retail", "cabin, payment_id")]
    ):
        source = InsightSource(source_system=system, trace_id=f"t{i}", trace_uid=f"{system}:t{i}")
        result = manager.update_skills([reflection(arguments)], book, source=source)
        assert result.completed
    [skill] = book.skills()
    assert skill.issue == "In airline and retail, the agent called book_reservation with wrong cabin, payment_id."
    assert skill.keywords == ["airline", "retail", "book_reservation", "wrong_arguments"]
    assert len(skill.occurrences) == 2


def test_prose_reflections_teach_the_rules_nothing() -> None:
    assert lessons_of("key_insight: Always be careful with refunds.") == []
