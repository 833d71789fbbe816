"""Logfire spans of a skill-manager session: one `sm.session` with a child span per tool call."""

from __future__ import annotations

from typing import Any

from logfire.testing import TestExporter
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from ace import InsightSource, Skillbook
from ace.embeddings.test import TestEmbedder
from ace.reflector.reflection import Reflection, SkillTag
from ace.skill_manager.manager import SkillManager, SMSettings

SOURCE = InsightSource(
    trace_uid="tau-bench-airline:41",
    source_system="tau-bench-airline",
    trace_id="41",
    sample_question="Upgrade only my return flight to business.",
    epoch=3,
    error_identification="Promised a per-leg cabin upgrade.",
)
REFLECTION = Reflection(
    error_identification="Promised a per-leg cabin upgrade the API cannot do.",
    root_cause_analysis="update_reservation_flights takes one cabin for the whole reservation.",
    correct_approach="Explain that cabin class is all-or-nothing and offer all-or-nothing options.",
    key_insight="Cabin class applies to every leg and passenger of an airline reservation.",
    skill_tags=[SkillTag(skill_id="harness-00001", tag="neutral")],
)
ISSUE = "In tau-airline's update_reservation_flights API, cabin class is shared by every leg and passenger."
INSIGHT = "Tell the user cabin class is all-or-nothing before offering an upgrade."


def scripted() -> FunctionModel:
    steps = [
        [ToolCallPart("search_skills", {"query": "cabin class upgrade one leg", "top_k": 3})],
        [ToolCallPart("add_skill", {"section": "context", "issue": ISSUE, "keywords": ["airline", "cabin_class"]})],
        [
            ToolCallPart(
                "add_skill",
                {"section": "context", "issue": ISSUE, "keywords": ["airline", "cabin_class"], "insight": INSIGHT},
            ),
            ToolCallPart("tag_skill", {"skill_id": "harness-00001", "delta": 0}),
        ],
    ]

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        n = sum(isinstance(m, ModelResponse) for m in messages)
        return ModelResponse(parts=list(steps[n]) if n < len(steps) else [TextPart("Added one skill.")])

    return FunctionModel(model)


def book() -> Skillbook:
    b = Skillbook()
    b.add_skill("harness", "The airline tool server times out after 30 s on search_direct_flight.", ["tau_bench"])
    return b


def by_name(exported: list[dict[str, Any]], name: str) -> list[dict[str, Any]]:
    return [s for s in exported if s["name"] == name]


def descends_from(span: dict[str, Any], ancestor: dict[str, Any], index: dict[int, dict[str, Any]]) -> bool:
    parent = span["parent"]
    while parent is not None:
        if parent["span_id"] == ancestor["context"]["span_id"]:
            return True
        parent = index[parent["span_id"]]["parent"]
    return False


def test_session_span_with_tool_call_children(spans: TestExporter) -> None:
    sm = SkillManager(scripted(), embedder=TestEmbedder())
    result = sm.update_skills([REFLECTION], book(), source=SOURCE)
    assert result.completed

    exported = spans.exported_spans_as_dict()
    [session] = by_name(exported, "sm.session")
    attrs = session["attributes"]
    assert attrs["ace.trace_uid"] == "tau-bench-airline:41" and attrs["ace.trace_id"] == "41"
    assert attrs["ace.source_system"] == "tau-bench-airline" and attrs["ace.epoch"] == 3
    assert attrs["ace.reflections_count"] == 1 and attrs["ace.proposed_tags_count"] == 1
    assert attrs["ace.request_limit"] == 20 and attrs["ace.tool_calls_limit"] == 30
    assert attrs["ace.requests"] == 4 and attrs["ace.tool_calls"] == 3
    assert attrs["ace.input_tokens"] > 0 and attrs["ace.output_tokens"] > 0
    assert (attrs["ace.ops_added"], attrs["ace.ops_tagged"], attrs["ace.refused_count"]) == (1, 1, 1)
    assert list(attrs["ace.changed_ids"]) == ["context-00001", "harness-00001"]
    assert attrs["ace.completed"] is True and attrs["ace.compactions"] == 0

    tools = [s for s in exported if s["attributes"].get("ace.tool")]
    assert [s["name"] for s in tools] == ["search_skills", "add_skill", "add_skill", "tag_skill"]
    for span in tools:
        assert span["parent"]["span_id"] == session["context"]["span_id"]  # direct children, no instrumentation
    search, refused, added, tagged = (s["attributes"] for s in tools)
    assert (search["ace.top_k"], search["ace.results_count"], search["ace.result"]) == (3, 1, "ok")
    assert (refused["ace.section"], refused["ace.keywords_count"], refused["ace.result"]) == ("context", 2, "refused")
    assert "ace.skill_id" not in refused
    assert (added["ace.skill_id"], added["ace.section"], added["ace.result"]) == ("context-00001", "context", "ok")
    assert (tagged["ace.skill_id"], tagged["ace.delta"], tagged["ace.section"]) == ("harness-00001", 0, "harness")

    # No prompt or skill text unless the user opted in.
    ace_values = [str(v) for s in [session, *tools] for k, v in s["attributes"].items() if k.startswith("ace.")]
    assert not any("cabin" in v or "all-or-nothing" in v for v in ace_values)
    assert not any(k in s["attributes"] for s in [session, *tools] for k in ("ace.prompt", "ace.issue", "ace.refusal"))


def test_content_is_recorded_only_when_opted_in(spans: TestExporter) -> None:
    sm = SkillManager(scripted(), embedder=TestEmbedder(), settings=SMSettings(record_content=True))
    sm.update_skills([REFLECTION], book(), source=SOURCE)

    exported = spans.exported_spans_as_dict()
    [session] = by_name(exported, "sm.session")
    assert "update_reservation_flights takes one cabin" in session["attributes"]["ace.prompt"]
    assert session["attributes"]["ace.output"] == "Added one skill."
    refused, added = by_name(exported, "add_skill")
    assert added["attributes"]["ace.issue"] == ISSUE and added["attributes"]["ace.insight"] == INSIGHT
    assert list(added["attributes"]["ace.keywords"]) == ["airline", "cabin_class"]
    assert "insight is required" in refused["attributes"]["ace.refusal"]
    [search] = by_name(exported, "search_skills")
    assert search["attributes"]["ace.query"] == "cabin class upgrade one leg"


def test_pydantic_ai_instrumentation_nests_under_the_session(spans: TestExporter) -> None:
    sm = SkillManager(scripted(), embedder=TestEmbedder(), instrument=True)
    sm.update_skills([REFLECTION], book(), source=SOURCE)

    exported = spans.exported_spans_as_dict()
    index = {s["context"]["span_id"]: s for s in exported}
    [session] = by_name(exported, "sm.session")
    executes = [s for s in exported if s["name"].startswith("execute_tool ")]
    # Calls of one model response run concurrently, so their spans may end in either order.
    assert sorted(s["name"] for s in executes) == [
        "execute_tool add_skill",
        "execute_tool add_skill",
        "execute_tool search_skills",
        "execute_tool tag_skill",
    ]
    for span in [*executes, *(s for s in exported if s["attributes"].get("ace.tool"))]:
        assert descends_from(span, session, index)
    ours = [s for s in exported if s["attributes"].get("ace.tool")]
    assert all(index[s["parent"]["span_id"]]["name"].startswith("execute_tool ") for s in ours)
