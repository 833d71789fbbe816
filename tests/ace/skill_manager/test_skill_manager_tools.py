"""The atomic skill-manager tools, called directly: each rule with an accepted and a refused case."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from pydantic_ai import Agent, ModelRetry, RunContext
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.models.test import TestModel
from pydantic_ai.usage import RunUsage

from ace import InsightSource, Skillbook
from ace.embeddings.test import TestEmbedder
from ace.skill_manager.deps import SMDeps, SMSettings
from ace.skill_manager.tools import (
    SM_TOOLS,
    add_skill,
    read_skill,
    remove_skill,
    search_skills,
    tag_skill,
    update_skill,
)

SOURCE = InsightSource(
    trace_uid="tau-bench-airline:5",
    source_system="tau-bench-airline",
    trace_id="5",
    sample_question="Add a checked bag to reservation ZFA04Y.",
    epoch=2,
    error_identification="Charged for a bag that is free for gold members.",
    learning_text="Check membership before quoting baggage fees.",
)
SEED = InsightSource(trace_uid="seed:1", source_system="seed", trace_id="1", epoch=0)

BAGGAGE_ISSUE = (
    "In tau-airline's update_reservation_baggages API, the agent charged for checked bags without checking the "
    "user's membership tier; gold members get free bags."
)
BAGGAGE_INSIGHT = "Look up the membership tier with get_user_details before quoting any baggage fee."


@pytest.fixture
def book() -> Skillbook:
    b = Skillbook()
    b.add_skill("context", BAGGAGE_ISSUE, ["airline", "baggage"], BAGGAGE_INSIGHT, insight_source=SEED)
    b.add_skill("harness", "The airline tool server times out on search_direct_flight after 30 s.", ["tau_bench"])
    return b


@pytest.fixture
def ctx(book: Skillbook) -> RunContext[SMDeps]:
    deps = SMDeps(skillbook=book, current_source=SOURCE, embedder=TestEmbedder(), settings=SMSettings())
    return RunContext(deps=deps, model=TestModel(), usage=RunUsage())


@pytest.fixture
def untouched(book: Skillbook, ctx: RunContext[SMDeps]) -> Iterator[None]:
    """Asserts, after the test, that the skillbook is byte-identical and nothing was recorded as applied."""
    before = json.dumps(book.to_dict())
    yield
    assert json.dumps(book.to_dict()) == before
    assert ctx.deps.applied == []
    assert ctx.deps.refusals, "the test expected a refusal"


def refused(fn: Callable[..., Any], *args: Any, match: str, **kwargs: Any) -> str:
    with pytest.raises(ModelRetry, match=match) as info:
        fn(*args, **kwargs)
    return info.value.message


# ---------------------------------------------------------------------------------------------- add
def test_add_context_skill_needs_insight(ctx: RunContext[SMDeps], untouched: None) -> None:
    refused(add_skill, ctx, "context", "Issue text.", ["airline"], match="insight is required for a context skill")
    refused(add_skill, ctx, "context", "Issue text.", ["airline"], "   ", match="insight is required")


def test_add_harness_skill_without_insight_is_accepted(ctx: RunContext[SMDeps], book: Skillbook) -> None:
    out = add_skill(ctx, "harness", "Bedrock returns 429 under 8 workers.", ["Bedrock", "rate limit"])
    skill = book.require_skill(out["skill_id"])
    assert out == {"ok": True, "skill_id": "harness-00002"}
    assert (skill.insight, skill.keywords) == (None, ["bedrock", "rate_limit"])
    [occ] = skill.occurrences
    assert occ.operation_type == "ADD" and occ.trace_uid == SOURCE.trace_uid and occ.epoch == 2
    assert occ.error_identification == SOURCE.error_identification
    assert occ.learning_text == "Bedrock returns 429 under 8 workers."  # no insight: the issue is what was learned
    assert [(a.tool, a.operation_type, a.skill_id) for a in ctx.deps.applied] == [("add_skill", "ADD", skill.id)]


def test_add_needs_an_issue(ctx: RunContext[SMDeps], untouched: None) -> None:
    refused(add_skill, ctx, "context", "  ", ["airline"], "Do X.", match="issue is required")


def test_add_needs_one_to_five_keywords(ctx: RunContext[SMDeps], untouched: None) -> None:
    refused(add_skill, ctx, "context", "Issue.", [" ", "__"], "Do X.", match="at least one label")
    refused(add_skill, ctx, "context", "Issue.", ["a", "b", "c", "d", "e", "f"], "Do X.", match="at most 5")


def test_add_with_five_keywords_is_accepted(ctx: RunContext[SMDeps], book: Skillbook) -> None:
    out = add_skill(ctx, "context", "Issue.", ["a", "b", "c", "d", "e", "A"], "Do X.")  # 'A' de-duplicates to 'a'
    assert book.require_skill(out["skill_id"]).keywords == ["a", "b", "c", "d", "e"]


# -------------------------------------------------------------------------------------------- update
def test_update_unknown_id_suggests_the_close_one(ctx: RunContext[SMDeps], untouched: None) -> None:
    message = refused(update_skill, ctx, "context-0001", "New issue.", match="Unknown skill id")
    assert "Did you mean 'context-00001'" in message


def test_update_widens_issue_and_merges_keywords(ctx: RunContext[SMDeps], book: Skillbook) -> None:
    wider = BAGGAGE_ISSUE.replace("tau-airline's update_reservation_baggages API", "tau-airline baggage and seat APIs")
    assert update_skill(ctx, "context-00001", wider, ["airline", "baggage", "seats"]) == {"ok": True}
    skill = book.require_skill("context-00001")
    assert (skill.issue, skill.keywords, skill.insight) == (wider, ["airline", "baggage", "seats"], BAGGAGE_INSIGHT)
    assert [(o.operation_type, o.trace_uid) for o in skill.occurrences] == [
        ("ADD", "seed:1"),
        ("UPDATE", "tau-bench-airline:5"),
    ]
    assert book.operations[-1].type == "UPDATE" and book.operations[-1].trace_uid == SOURCE.trace_uid


def test_update_that_changes_nothing_is_refused(ctx: RunContext[SMDeps], untouched: None) -> None:
    refused(update_skill, ctx, "context-00001", f"  {BAGGAGE_ISSUE} ", ["Airline", "baggage"], match="change nothing")


def test_update_of_keywords_alone_is_accepted(ctx: RunContext[SMDeps], book: Skillbook) -> None:
    update_skill(ctx, "context-00001", BAGGAGE_ISSUE, ["airline", "baggage_fees"])
    assert book.require_skill("context-00001").keywords == ["airline", "baggage_fees"]


def test_update_refuses_empty_keywords_and_clearing_a_context_insight(ctx: RunContext[SMDeps], untouched: None) -> None:
    refused(update_skill, ctx, "context-00001", "Wider issue.", [], match="at least one label")
    refused(update_skill, ctx, "context-00001", "Wider issue.", None, " ", match="insight is required")


# ------------------------------------------------------------------------------------- tag and remove
def test_tag_refuses_a_bad_delta(ctx: RunContext[SMDeps], untouched: None) -> None:
    refused(tag_skill, ctx, "context-00001", 2, match="delta must be -1")
    refused(tag_skill, ctx, "context-00001", True, match="delta must be -1")


def test_tag_counts_and_records(ctx: RunContext[SMDeps], book: Skillbook) -> None:
    tag_skill(ctx, "context-00001", -1)
    tag_skill(ctx, "context-00001", 0)
    skill = book.require_skill("context-00001")
    assert (skill.used_count, skill.harmful_count, skill.neutral_count) == (2, 1, 1)
    assert [o.learning_text for o in skill.occurrences[1:]] == ["tagged harmful", "tagged neutral"]


def test_removed_skill_cannot_be_changed_again(ctx: RunContext[SMDeps], book: Skillbook) -> None:
    assert remove_skill(ctx, "context-00001", "Gold tiers changed; the rule is outdated.") == {"ok": True}
    skill = book.require_skill("context-00001")
    assert not skill.active and skill.removal_reason == "Gold tiers changed; the rule is outdated."
    assert skill.occurrences[-1].trace_uid == SOURCE.trace_uid
    before = json.dumps(book.to_dict())
    refused(update_skill, ctx, "context-00001", "Wider.", match="was removed")
    refused(tag_skill, ctx, "context-00001", 1, match="was removed")
    refused(remove_skill, ctx, "context-00001", "again", match="was removed")
    assert json.dumps(book.to_dict()) == before
    assert read_skill(ctx, "context-00001")["active"] is False


def test_remove_needs_a_reason(ctx: RunContext[SMDeps], untouched: None) -> None:
    refused(remove_skill, ctx, "context-00001", " ", match="reason is required")


# ---------------------------------------------------------------------------------------------- read
def test_search_validates_and_filters(ctx: RunContext[SMDeps]) -> None:
    refused(search_skills, ctx, "  ", match="query must be non-empty")
    refused(search_skills, ctx, "baggage", 0, match="top_k must be between 1 and 20")
    refused(search_skills, ctx, "baggage", 21, match="top_k must be between 1 and 20")
    found = search_skills(ctx, "checked bag fee for gold members", 5)
    assert found[0]["id"] == "context-00001" and found[0]["insight"] == BAGGAGE_INSIGHT
    assert [s["id"] for s in search_skills(ctx, "baggage", 5, "harness")] == ["harness-00001"]
    boosted = search_skills(ctx, "agent rule", 2, None, ["Baggage"])  # keywords boost (normalised), never hide
    assert [s["id"] for s in boosted] == ["context-00001", "harness-00001"]


def test_read_skill_shows_counters_and_history(ctx: RunContext[SMDeps], book: Skillbook) -> None:
    refused(read_skill, ctx, "harness-1", match="Did you mean 'harness-00001'")
    detail = read_skill(ctx, "context-00001")
    assert (detail["used"], detail["helpful"], detail["harmful"], detail["neutral"]) == (0, 0, 0, 0)
    assert detail["active"] is True and detail["removal_reason"] is None
    assert detail["occurrences_count"] == 1 and detail["occurrences"][0]["trace_uid"] == "seed:1"
    assert ctx.deps.applied == []


def test_search_skills_hides_a_quarantined_skill_and_read_skill_says_why(
    ctx: RunContext[SMDeps], book: Skillbook
) -> None:
    query = "checked bag fees for gold members"
    assert "context-00001" in [s["id"] for s in search_skills(ctx, query)]
    book.quarantine_skill("context-00001", "harmful on 2 distinct traces")
    assert "context-00001" not in [s["id"] for s in search_skills(ctx, query)]
    detail = read_skill(ctx, "context-00001")
    assert detail["active"] is True and detail["quarantine_reason"] == "harmful on 2 distinct traces"
    book.release_skill("context-00001", "reviewed")
    assert "context-00001" in [s["id"] for s in search_skills(ctx, query)]


# ----------------------------------------------------------------------------------------- surface
def test_tool_surface_is_the_six_atomic_tools_with_documented_arguments() -> None:
    seen: list[AgentInfo] = []

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        seen.append(info)
        return ModelResponse(parts=[TextPart("ok")])

    agent = Agent(FunctionModel(model), deps_type=SMDeps, tools=SM_TOOLS)
    empty = Skillbook()
    agent.run_sync("hi", deps=SMDeps(skillbook=empty, current_source=SOURCE))
    # Tools that need an existing skill are offered only once there is one.
    assert sorted(t.name for t in seen[0].function_tools) == ["add_skill", "search_skills"]
    empty.add_skill("harness", "Rate limits", ["tau2"])
    agent.run_sync("hi", deps=SMDeps(skillbook=empty, current_source=SOURCE))
    tools = {t.name: t for t in seen[1].function_tools}
    assert sorted(tools) == sorted(
        ["add_skill", "update_skill", "tag_skill", "remove_skill", "search_skills", "read_skill"]
    )
    assert list(tools["add_skill"].parameters_json_schema["properties"]) == ["section", "issue", "keywords", "insight"]
    assert tools["add_skill"].parameters_json_schema["required"] == ["section", "issue", "keywords"]
    assert tools["update_skill"].parameters_json_schema["required"] == ["skill_id", "issue"]
    assert tools["tag_skill"].parameters_json_schema["properties"]["delta"]["enum"] == [-1, 0, 1]
    assert tools["add_skill"].parameters_json_schema["properties"]["section"]["enum"] == ["context", "harness"]
    for tool in tools.values():
        assert tool.description
        for name, prop in tool.parameters_json_schema["properties"].items():
            assert prop.get("description"), f"{tool.name}.{name} has no description"


def test_mutations_are_barriers_so_the_audit_log_follows_the_model_order() -> None:
    # pydantic-ai runs the calls of one response concurrently unless a tool is `sequential` (a barrier).
    assert {t.name for t in SM_TOOLS if t.sequential} == {"add_skill", "update_skill", "tag_skill", "remove_skill"}
    assert {t.name for t in SM_TOOLS if not t.sequential} == {"search_skills", "read_skill"}


def test_every_tool_result_has_a_schema() -> None:
    """pydantic builds a result schema only from `typing_extensions.TypedDict` on Python 3.11; a `typing` one
    falls back to an unconstrained schema (with a warning), so the skill manager's tools must keep using it."""
    from ace.skill_manager.tools import SM_TOOLS

    for tool in SM_TOOLS:
        schema = tool.function_schema.return_schema
        assert schema is not None and ("properties" in schema or "$defs" in schema or "items" in schema), tool.name
