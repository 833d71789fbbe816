"""One real skill-manager session on the embedded offline model (SmolLM2-135M via llama.cpp), when installed.

The model is tiny: the test does not ask it to be clever, only that whatever it does leaves a valid skillbook
whose every change is recorded with this trace's provenance.
"""

from __future__ import annotations

import importlib.util

import pytest

from ace import InsightSource, Skillbook
from ace.agents.recursive import SessionBudget
from ace.embeddings.test import TestEmbedder
from ace.llm import LocalModel, LocalModelUnavailableError, RoleSettings, infer_model
from ace.llm._local_runtime import RUNTIME_MODULES
from ace.reflector.reflection import Reflection, SkillTag
from ace.skill_manager.manager import SkillManager, SMSettings

if not any(importlib.util.find_spec(name) for name in RUNTIME_MODULES):
    pytest.skip("no llama.cpp binding installed (`python3 dev.py demo` installs xllamacpp)", allow_module_level=True)

SOURCE = InsightSource(
    trace_uid="tau-bench-airline:12",
    source_system="tau-bench-airline",
    trace_id="12",
    sample_question="Cancel my reservation EHGLP3, I can no longer travel.",
    epoch=0,
    error_identification="Cancelled the reservation before the user confirmed.",
    learning_text="Ask for an explicit yes before cancel_reservation.",
)


@pytest.mark.timeout(300)
def test_one_session_on_the_embedded_model_leaves_a_valid_skillbook() -> None:
    model = infer_model("local", settings=RoleSettings(max_tokens=128))
    assert isinstance(model, LocalModel)
    try:
        model.load()
    except LocalModelUnavailableError as e:
        pytest.skip(f"embedded model not available: {e}")
    book = Skillbook()
    book.add_skill(
        "context",
        "In tau-retail's cancel_pending_order API, the agent cancelled before the user said an explicit yes.",
        ["retail", "user_confirmation"],
        "Before cancelling, list the order details and wait for an explicit yes.",
        insight_source=InsightSource(trace_uid="seed:1", source_system="seed", trace_id="1"),
    )
    reflection = Reflection(
        error_identification="The agent called cancel_reservation before the user said yes.",
        root_cause_analysis="It skipped the confirmation step the airline policy requires.",
        correct_approach="List the reservation and refund, then ask for an explicit yes.",
        key_insight="Ask for an explicit yes before cancel_reservation.",
        skill_tags=[SkillTag(skill_id="context-00001", tag="helpful")],
    )
    settings = SMSettings(budget=SessionBudget(request_limit=2, tool_calls_limit=4), tool_retries=1)
    sm = SkillManager(model, embedder=TestEmbedder(), settings=settings)

    result = sm.update_skills([reflection], book, source=SOURCE)

    assert 1 <= result.usage.requests <= 2
    for skill in book.skills(include_inactive=True):
        assert skill.occurrences and skill.keywords
        assert (skill.insight is not None) or skill.section == "harness"
    mine = [(op.type, op.skill_id) for op in book.operations if op.trace_uid == SOURCE.trace_uid]
    assert mine == [(op.operation_type, op.skill_id) for op in result.operations]
    for op in result.operations:
        skill = book.require_skill(op.skill_id)
        assert any(
            o.operation_type == op.operation_type and o.trace_uid == SOURCE.trace_uid and o.epoch == 0
            for o in skill.occurrences
        )
