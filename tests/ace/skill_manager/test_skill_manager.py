"""Skill-manager sessions scripted with `FunctionModel`: search then add, widening, refused calls, tag and remove."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from _ace_scripts import applied
from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from ace import InsightSource, Skillbook
from ace.agents.recursive import SessionBudget
from ace.embeddings.test import TestEmbedder
from ace.reflector.reflection import Reflection, SkillTag
from ace.skill_manager.manager import SkillManager, SMResult, SMSettings
from ace.skill_manager.prompts import SKILL_MANAGER_PROMPT
from ace.skill_manager.tools import SKILL_ID_CHOICES

Step = Callable[[list[ModelMessage]], ModelResponse]

RETAIL_SOURCE = InsightSource(
    trace_uid="tau-bench-retail:7",
    source_system="tau-bench-retail",
    trace_id="7",
    sample_question="Cancel my pending order #W2378156, I ordered the wrong size.",
    epoch=0,
    error_identification="Cancelled the order before the user confirmed.",
    learning_text="Wait for an explicit yes before a write action.",
)
AIRLINE_SOURCE = InsightSource(
    trace_uid="tau-bench-airline:23",
    source_system="tau-bench-airline",
    trace_id="23",
    sample_question="Please cancel reservation 4WQ150 and upgrade my other trip to business for the second leg only.",
    epoch=1,
    error_identification="Called cancel_reservation before the user said yes.",
    learning_text="Confirm every write action explicitly.",
)


class Script:
    """A scripted LLM: each model request runs the next step, which sees the whole history."""

    def __init__(self, *steps: Step) -> None:
        self.steps = list(steps)
        self.seen: list[list[ModelMessage]] = []

    def __call__(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        self.seen.append(list(messages))
        assert len(self.seen) <= len(self.steps), "the model was asked more often than scripted"
        return self.steps[len(self.seen) - 1](messages)

    @property
    def model(self) -> FunctionModel:
        return FunctionModel(self)


def call(tool: str, **args: Any) -> Step:
    return lambda _messages: ModelResponse(parts=[ToolCallPart(tool, args)])


def say(text: str) -> Step:
    return lambda _messages: ModelResponse(parts=[TextPart(text)])


def last_return(messages: list[ModelMessage]) -> ToolReturnPart:
    last = messages[-1]
    assert isinstance(last, ModelRequest)
    [part] = [p for p in last.parts if isinstance(p, ToolReturnPart)]
    return part


def first_prompt(messages: list[ModelMessage]) -> str:
    first = messages[0]
    assert isinstance(first, ModelRequest)
    return "\n".join(str(getattr(p, "content", "")) for p in first.parts)


def manager(script: Script, embedder: TestEmbedder | None = None, **settings: Any) -> SkillManager:
    return SkillManager(script.model, embedder=embedder or TestEmbedder(), settings=SMSettings(**settings))


def seeded_book() -> Skillbook:
    book = Skillbook()
    book.add_skill(
        "context",
        "In tau-retail's cancel_pending_order API, the agent cancelled an order before the user explicitly "
        "confirmed the listed details; the retail policy requires an explicit 'yes' before any write action.",
        ["retail", "order_api", "user_confirmation"],
        "Before calling cancel_pending_order, list the order items and refund route and wait for an explicit 'yes'.",
        insight_source=RETAIL_SOURCE,
    )
    book.add_skill(
        "harness",
        "The tau-bench runner retries Bedrock 429 responses with a 60 s backoff, stalling the whole batch.",
        ["tau_bench", "rate_limit"],
        insight_source=RETAIL_SOURCE,
    )
    return book


def assert_valid(book: Skillbook, result: SMResult, source: InsightSource) -> None:
    """The acceptance invariants, plus: each applied operation left one matching occurrence from `source`."""
    for skill in book.skills(include_inactive=True):
        assert len(skill.occurrences) >= 1, skill.id
        assert skill.keywords, skill.id
        if skill.section == "context":
            assert skill.insight, skill.id
        for occ in skill.occurrences:
            assert occ.operation_type in ("ADD", "UPDATE", "TAG", "REMOVE")
            assert occ.trace_uid and occ.source_system and occ.trace_id
    for skill_id in result.changed_ids:
        changed = book.require_skill(skill_id)
        mine = [o for o in changed.occurrences if o.trace_uid == source.trace_uid]
        expected = [op.operation_type for op in result.operations if op.skill_id == skill_id]
        assert [o.operation_type for o in mine] == expected
        for occ in mine:
            assert (occ.trace_uid, occ.source_system, occ.trace_id, occ.epoch, occ.sample_question) == (
                source.trace_uid,
                source.source_system,
                source.trace_id,
                source.epoch,
                source.sample_question,
            )
            assert occ.error_identification == source.error_identification
    logged = [(op.type, op.skill_id) for op in book.operations if op.trace_uid == source.trace_uid]
    assert logged == [(op.operation_type, op.skill_id) for op in result.operations]


CABIN_REFLECTION = Reflection(
    error_identification="The agent offered a business upgrade for only the second flight of the reservation.",
    root_cause_analysis="update_reservation_flights takes one cabin for the whole reservation; the agent assumed "
    "per-leg cabins and promised something the API cannot do.",
    correct_approach="Tell the user the cabin applies to all legs and passengers, then offer all-or-nothing options.",
    key_insight="In airline reservations cabin class is all-or-nothing across legs and passengers.",
)


def test_search_then_add_records_provenance() -> None:
    book = seeded_book()

    def add_after_search(messages: list[ModelMessage]) -> ModelResponse:
        found = last_return(messages).content
        assert isinstance(found, list)
        assert all("cabin_class" not in s["keywords"] for s in found)  # nothing covers this issue yet
        return ModelResponse(
            parts=[
                ToolCallPart(
                    "add_skill",
                    {
                        "section": "context",
                        "issue": "In tau-airline's update_reservation_flights API, cabin class is one parameter for "
                        "every leg and passenger of the reservation; per-leg upgrades are impossible.",
                        "keywords": ["Airline", "booking_api", "cabin class"],
                        "insight": "Before offering a per-leg upgrade, tell the user cabin class is all-or-nothing "
                        "and offer only all-or-nothing options.",
                    },
                )
            ]
        )

    script = Script(
        call("search_skills", query="upgrade cabin class for one leg update_reservation_flights", top_k=5),
        add_after_search,
        say("Added a narrow airline skill about all-or-nothing cabin class."),
    )
    result = manager(script).update_skills([CABIN_REFLECTION], book, source=AIRLINE_SOURCE)

    assert result.completed and result.summary is not None and "cabin" in result.summary
    assert result.ids("ADD") == ["context-00002"] and result.counts == {"ADD": 1, "UPDATE": 0, "TAG": 0, "REMOVE": 0}
    assert result.refusals == ()
    skill = book.require_skill("context-00002")
    assert skill.keywords == ["airline", "booking_api", "cabin_class"]
    [occ] = skill.occurrences
    assert occ.operation_type == "ADD" and occ.learning_text == skill.insight
    assert '<reflection index="1">' in first_prompt(script.seen[0])
    assert "update_reservation_flights takes one cabin" in first_prompt(script.seen[0])
    assert result.usage.requests == 3
    assert_valid(book, result, AIRLINE_SOURCE)


CONFIRM_REFLECTION = Reflection(
    error_identification="The agent called cancel_reservation before the user explicitly confirmed.",
    root_cause_analysis="It treated 'I want to cancel' as consent instead of listing the details and asking.",
    correct_approach="List the reservation, the refund route, then ask for an explicit yes before cancelling.",
    key_insight="Every write action needs the user's explicit confirmation of the listed details.",
)


def test_overlapping_issue_from_another_domain_is_widened_not_duplicated() -> None:
    book = seeded_book()
    before_ids = [s.id for s in book.skills(include_inactive=True)]

    def widen(messages: list[ModelMessage]) -> ModelResponse:
        found = last_return(messages).content
        assert isinstance(found, list)
        retail = next(s for s in found if "retail" in s["keywords"] and "user_confirmation" in s["keywords"])
        assert found[0]["id"] == retail["id"]  # the overlapping skill ranks first
        merged = [k for k in retail["keywords"] if k != "order_api"] + ["airline", "write_actions"]
        return ModelResponse(
            parts=[
                ToolCallPart(
                    "update_skill",
                    {
                        "skill_id": retail["id"],
                        "issue": "In tau-retail and tau-airline write APIs (cancel_pending_order, cancel_reservation, "
                        "modify and update calls), the agent acted before the user explicitly confirmed the listed "
                        "details; both policies require an explicit 'yes' before any write action.",
                        "keywords": merged,
                        "insight": "Before any write call (cancel, modify, update, book), list the exact details and "
                        "the refund or payment route, then wait for an explicit 'yes'.",
                    },
                )
            ]
        )

    script = Script(
        call("search_skills", query="explicit user confirmation before cancel write action"),
        widen,
        say("Widened context-00001 to cover airline write actions."),
    )
    result = manager(script).update_skills([CONFIRM_REFLECTION], book, source=AIRLINE_SOURCE)

    assert [s.id for s in book.skills(include_inactive=True)] == before_ids  # no near-duplicate was added
    assert result.ids("UPDATE") == ["context-00001"] and result.ids("ADD") == []
    skill = book.require_skill("context-00001")
    assert skill.keywords == ["retail", "user_confirmation", "airline", "write_actions"]
    assert "tau-airline" in skill.issue and "tau-retail" in skill.issue
    assert [o.operation_type for o in skill.occurrences] == ["ADD", "UPDATE"]
    assert [o.trace_uid for o in skill.occurrences] == [RETAIL_SOURCE.trace_uid, AIRLINE_SOURCE.trace_uid]
    assert skill.embedding is None or skill.embedding.shape == (64,)
    assert_valid(book, result, AIRLINE_SOURCE)
    # The relevant existing skill was already shown in the prompt, so the model could see the overlap up front.
    assert 'id="context-00001"' in first_prompt(script.seen[0])


def test_invalid_calls_are_retried_and_leave_no_trace() -> None:
    book = seeded_book()
    snapshot = {s.id: s.to_dict() for s in book.skills(include_inactive=True)}
    ops_before = len(book.operations)
    retry_texts: list[str] = []

    def record_retry_then(step: Step) -> Step:
        def run(messages: list[ModelMessage]) -> ModelResponse:
            part = last_return(messages)
            assert part.outcome == "retried"
            retry_texts.append(part.model_response_str())
            return step(messages)

        return run

    add_args = {
        "section": "context",
        "issue": "In tau-airline's update_reservation_flights API, cabin class is shared by all legs and passengers.",
        "keywords": ["airline", "cabin_class"],
    }
    script = Script(
        call("search_skills", query="cabin class per leg"),
        call("add_skill", **add_args),  # context skill without insight
        record_retry_then(call("update_skill", skill_id="context-0001", issue="x y z")),  # unknown id
        record_retry_then(call("tag_skill", skill_id="context-00001", delta=5)),  # bad delta (schema)
        record_retry_then(call("add_skill", **add_args, insight="Tell the user cabin class is all-or-nothing.")),
        say("Added the cabin-class skill after fixing the call."),
    )
    result = manager(script).update_skills([CABIN_REFLECTION], book, source=AIRLINE_SOURCE)

    assert result.completed
    assert "insight is required for a context skill" in retry_texts[0]
    assert "Unknown skill id 'context-0001'" in retry_texts[1] and "Did you mean 'context-00001'" in retry_texts[1]
    assert "-1, 0 or 1" in retry_texts[2]
    # The schema refusal never ran the tool, and it counts like the others.
    assert [r.tool for r in result.refusals] == ["add_skill", "update_skill", "tag_skill"]
    assert "delta" in result.refusals[2].reason
    # Only the corrected add changed anything: seeded skills are byte-identical, one op and one skill were added.
    assert {sid: book.require_skill(sid).to_dict() for sid in snapshot} == snapshot
    assert len(book.operations) == ops_before + 1
    assert [s.id for s in book.skills(include_inactive=True)] == [*snapshot, "context-00002"]
    assert result.ids("ADD") == ["context-00002"]
    assert_valid(book, result, AIRLINE_SOURCE)


def test_proposed_tags_are_applied_and_harmful_skill_soft_removed() -> None:
    book = seeded_book()
    outdated = book.add_skill(
        "context",
        "In tau-airline, basic-economy reservations can be cancelled for a full refund within 24 hours of booking.",
        ["airline", "cancellation", "refund_policy"],
        "Offer basic-economy customers a full refund whenever they ask to cancel.",
        insight_source=RETAIL_SOURCE,
    )
    reflection = CONFIRM_REFLECTION.model_copy(
        update={
            "skill_tags": [
                SkillTag(skill_id="context-00001", tag="helpful"),
                SkillTag(skill_id=outdated.id, tag="harmful"),
                SkillTag(skill_id="context-00099", tag="neutral"),
            ]
        }
    )

    def check_prompt_then_tag(messages: list[ModelMessage]) -> ModelResponse:
        prompt = first_prompt(messages)
        assert 'context-00001: helpful -> tag_skill(skill_id="context-00001", delta=1)' in prompt
        assert f'{outdated.id}: harmful -> tag_skill(skill_id="{outdated.id}", delta=-1)' in prompt
        assert "context-00099: neutral (no such skill: skip it)" in prompt
        return ModelResponse(
            parts=[
                ToolCallPart("tag_skill", {"skill_id": "context-00001", "delta": 1}),
                ToolCallPart("tag_skill", {"skill_id": outdated.id, "delta": -1}),
            ]
        )

    script = Script(
        check_prompt_then_tag,
        call(
            "remove_skill",
            skill_id=outdated.id,
            reason="Outdated and harmful: basic economy is refunded only within 24 h; the agent over-promised.",
        ),
        call("read_skill", skill_id=outdated.id),
        call("search_skills", query="basic economy cancellation full refund", top_k=5),
        say("Tagged two skills and removed the outdated refund skill."),
    )
    result = manager(script).update_skills([reflection], book, source=AIRLINE_SOURCE)

    helpful, removed = book.require_skill("context-00001"), book.require_skill(outdated.id)
    assert (helpful.used_count, helpful.helpful_count, helpful.harmful_count) == (1, 1, 0)
    assert (removed.used_count, removed.harmful_count, removed.active) == (1, 1, False)
    assert removed.removal_reason is not None and removed.removal_reason.startswith("Outdated and harmful")
    assert [o.operation_type for o in removed.occurrences] == ["ADD", "TAG", "REMOVE"]
    assert [o.learning_text for o in helpful.occurrences[1:]] == ["tagged helpful"]
    assert result.counts == {"ADD": 0, "UPDATE": 0, "TAG": 2, "REMOVE": 1}
    # Soft delete: gone from the active views and from search, still readable with its history.
    assert outdated.id not in [s.id for s in book.skills()]
    detail = last_return(script.seen[3]).content
    assert isinstance(detail, dict) and detail["active"] is False and detail["occurrences_count"] == 3
    found = last_return(script.seen[4]).content
    assert isinstance(found, list) and outdated.id not in [s["id"] for s in found]
    assert_valid(book, result, AIRLINE_SOURCE)


def test_budget_ends_the_session_early_but_keeps_applied_operations() -> None:
    book = seeded_book()
    script = Script(
        call("tag_skill", skill_id="context-00001", delta=1),
        *[call("search_skills", query=f"confirmation attempt {i}") for i in range(10)],
    )
    sm = manager(script, budget=SessionBudget(request_limit=3))
    result = sm.update_skills([CONFIRM_REFLECTION], book, source=AIRLINE_SOURCE)

    assert not result.completed and result.summary is None
    assert result.stop_reason is not None and result.stop_reason.startswith("budget:")
    assert result.usage.requests == 3 and result.ids("TAG") == ["context-00001"]
    assert book.require_skill("context-00001").helpful_count == 1
    assert_valid(book, result, AIRLINE_SOURCE)


def test_model_that_keeps_repeating_a_refused_call_stops_cleanly() -> None:
    book = seeded_book()
    bad = call("update_skill", skill_id="context-00404", issue="Widened issue text.")
    script = Script(*[bad] * 6)
    result = manager(script, tool_retries=2).update_skills([CONFIRM_REFLECTION], book, source=AIRLINE_SOURCE)

    assert not result.completed and result.stop_reason is not None and result.stop_reason.startswith("model:")
    assert result.operations == () and len(result.refusals) == 3
    assert all(o.trace_uid != AIRLINE_SOURCE.trace_uid for o in book.operations)


def test_source_is_required_and_reflections_must_not_be_empty() -> None:
    sm = manager(Script())
    book = seeded_book()
    with pytest.raises(TypeError, match="source"):
        sm.update_skills([CONFIRM_REFLECTION], book)  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="must be an InsightSource"):
        sm.update_skills([CONFIRM_REFLECTION], book, source="tau-bench-airline:23")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="at least one reflection"):
        sm.update_skills([], book, source=AIRLINE_SOURCE)


def test_sync_call_inside_an_event_loop_names_the_async_variant() -> None:
    script = Script(say("Nothing to change."))
    sm = manager(script)
    book = seeded_book()

    async def inside_loop() -> SMResult:
        with pytest.raises(RuntimeError, match="update_skills_async"):
            sm.update_skills([CONFIRM_REFLECTION], book, source=AIRLINE_SOURCE)
        return await sm.update_skills_async([CONFIRM_REFLECTION], book, source=AIRLINE_SOURCE)

    result = asyncio.run(inside_loop())
    assert result.completed and result.operations == () and result.summary == "Nothing to change."


def test_system_prompt_states_every_rule_of_the_spec_and_is_sent() -> None:
    prompt = SKILL_MANAGER_PROMPT
    rules = [
        'exactly one of two values, "context" or "harness"',  # two-section taxonomy
        'insight is required if and only if section is "context"',
        "the finer categories (domain, subsystem, API family, behaviour category) go in keywords, never in section",
        "issue: required on EVERY add_skill and EVERY update_skill",
        "1-5 short, stable, lowercase labels",
        "the problem AND where it applies",
        "Start narrow: one domain, one API or one endpoint",
        "call update_skill on that skill with a broader issue that covers both contexts",
        "instead of creating a near-duplicate skill",
        "keep the existing labels that still fit, add the genuinely new ones",
        "drop stale labels that no longer fit",
        "Search before add, always: call search_skills",
        "Removal is soft",
        "its audit chain is preserved",
    ]
    for rule in rules:
        assert rule in " ".join(prompt.split()), rule
    seen: list[str | None] = []

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        seen.append(info.instructions)
        return ModelResponse(parts=[TextPart("Nothing to change.")])

    SkillManager(FunctionModel(model), embedder=TestEmbedder()).update_skills(
        [CONFIRM_REFLECTION], seeded_book(), source=AIRLINE_SOURCE
    )
    assert seen == [SKILL_MANAGER_PROMPT.strip()]


def test_sessions_from_several_threads_lose_no_update() -> None:
    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        task = first_prompt(messages)
        trace_id = task.split("trace_id: ")[1].split()[0]
        returned = {p.tool_name for m in messages for p in m.parts if isinstance(p, ToolReturnPart) and applied(p)}
        if not returned:
            return ModelResponse(parts=[ToolCallPart("search_skills", {"query": f"trace {trace_id} issue"})])
        if "add_skill" not in returned:  # also after a refusal: the concurrent skills are about other traces
            args = {"section": "harness", "issue": f"Runner problem seen in trace {trace_id}.", "keywords": ["runner"]}
            return ModelResponse(parts=[ToolCallPart("add_skill", args)])
        return ModelResponse(parts=[TextPart("done")])

    sm = SkillManager(FunctionModel(model), embedder=TestEmbedder())
    book = Skillbook()
    sources = [
        InsightSource(trace_uid=f"tau-bench-airline:{i}", source_system="tau-bench-airline", trace_id=str(i), epoch=0)
        for i in range(8)
    ]

    def work(source: InsightSource) -> SMResult:
        return sm.update_skills([CONFIRM_REFLECTION], book, source=source)

    with ThreadPoolExecutor(max_workers=4) as pool:  # 8 sessions on 4 threads: each thread reuses its loop
        results = list(pool.map(work, sources))

    assert all(r.completed and len(r.ids("ADD")) == 1 for r in results)
    # A session whose add raced another session's add was shown that skill first (one retry, then its own add).
    for r in results:
        assert all(f.tool == "add_skill" and "another session added or rewrote" in f.reason for f in r.refusals)
    skills = book.skills()
    assert len(skills) == 8 and len({s.id for s in skills}) == 8
    for result, source in zip(results, sources, strict=True):
        [skill_id] = result.ids("ADD")
        skill = book.require_skill(skill_id)
        assert skill.issue == f"Runner problem seen in trace {source.trace_id}."
        assert [o.trace_uid for o in skill.occurrences] == [source.trace_uid]


def test_skill_ids_are_offered_as_choices_while_the_skillbook_is_small() -> None:
    """A model decoding under the tool schema (the embedded model) can only name a skill that exists."""
    offered: list[dict[str, dict[str, Any]]] = []

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        offered.append({tool.name: tool.parameters_json_schema for tool in info.function_tools})
        return ModelResponse(parts=[TextPart("Nothing to change.")])

    book = seeded_book()
    SkillManager(FunctionModel(model), embedder=TestEmbedder()).update_skills(
        [CABIN_REFLECTION], book, source=AIRLINE_SOURCE
    )
    [tools] = offered
    for name in ("update_skill", "tag_skill", "remove_skill", "read_skill"):
        assert tools[name]["properties"]["skill_id"]["enum"] == ["context-00001", "harness-00001"], name
    assert tools["add_skill"]["properties"]["keywords"]["minItems"] == 1
    assert "skill_id" not in tools["search_skills"]["properties"]

    offered.clear()
    big = Skillbook()
    for n in range(SKILL_ID_CHOICES + 1):
        big.add_skill(
            "harness", f"Runner problem number {n} in the batch scheduler.", [f"k{n}"], insight_source=RETAIL_SOURCE
        )
    SkillManager(FunctionModel(model), embedder=TestEmbedder()).update_skills(
        [CABIN_REFLECTION], big, source=AIRLINE_SOURCE
    )
    [tools] = offered
    assert "enum" not in tools["update_skill"]["properties"]["skill_id"]


def test_the_skill_id_choices_stay_the_same_for_the_whole_session() -> None:
    """A skill added mid-session does not change the tool definitions (a prompt cache over them stays valid)."""
    offered: list[list[str]] = []
    script = Script(
        call("search_skills", query="cabin class", top_k=3),
        call(
            "add_skill",
            section="context",
            issue="In tau-airline's update_reservation_flights API, cabin class is one parameter for every leg.",
            keywords=["airline", "cabin_class"],
            insight="Offer only all-or-nothing cabin changes.",
        ),
        say("Added one skill."),
    )

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        tools = {tool.name: tool.parameters_json_schema for tool in info.function_tools}
        offered.append(tools["tag_skill"]["properties"]["skill_id"]["enum"])
        return script(messages, info)

    book = seeded_book()
    result = SkillManager(FunctionModel(model), embedder=TestEmbedder()).update_skills(
        [CABIN_REFLECTION], book, source=AIRLINE_SOURCE
    )
    assert result.ids("ADD") == ["context-00002"]
    assert offered == [["context-00001", "harness-00001"]] * 3


def test_the_last_request_of_a_session_has_no_tools_so_it_ends_with_a_summary() -> None:
    """A small budget ends the session cleanly: the model is asked for its summary instead of being stopped."""
    offered: list[list[str]] = []
    script = Script(
        call("tag_skill", skill_id="context-00001", delta=1),
        say("Tagged the confirmation skill as helpful."),
    )

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        offered.append(sorted(tool.name for tool in info.function_tools))
        return script(messages, info)

    book = seeded_book()
    result = SkillManager(
        FunctionModel(model),
        embedder=TestEmbedder(),
        settings=SMSettings(budget=SessionBudget(request_limit=2, tool_calls_limit=5)),
    ).update_skills([CONFIRM_REFLECTION], book, source=AIRLINE_SOURCE)

    assert offered == [["add_skill", "read_skill", "remove_skill", "search_skills", "tag_skill", "update_skill"], []]
    assert result.completed and result.summary == "Tagged the confirmation skill as helpful."
    assert result.ids("TAG") == ["context-00001"] and book.require_skill("context-00001").helpful_count == 1
    assert_valid(book, result, AIRLINE_SOURCE)


def test_tools_are_withdrawn_once_the_tool_calls_are_spent() -> None:
    offered: list[int] = []
    script = Script(
        call("search_skills", query="confirmation"),
        call("tag_skill", skill_id="context-00001", delta=1),
        say("Done."),
    )

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        offered.append(len(info.function_tools))
        return script(messages, info)

    book = seeded_book()
    result = SkillManager(
        FunctionModel(model),
        embedder=TestEmbedder(),
        settings=SMSettings(budget=SessionBudget(request_limit=10, tool_calls_limit=2)),
    ).update_skills([CONFIRM_REFLECTION], book, source=AIRLINE_SOURCE)
    assert offered == [6, 6, 0] and result.completed and result.ids("TAG") == ["context-00001"]


def test_tools_that_name_a_skill_are_not_offered_while_every_active_skill_is_quarantined() -> None:
    offered: list[list[str]] = []

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        offered.append(sorted(tool.name for tool in info.function_tools))
        return ModelResponse(parts=[TextPart("Nothing to change.")])

    book = seeded_book()
    for skill in book.skills():
        book.quarantine_skill(skill.id, "harmful in two traces")
    assert book.active_count == 2 and not book.skills()
    SkillManager(FunctionModel(model), embedder=TestEmbedder()).update_skills(
        [CABIN_REFLECTION], book, source=AIRLINE_SOURCE
    )
    assert offered == [["add_skill", "search_skills"]]


def test_a_small_models_session_prompt_can_leave_the_trace_out() -> None:
    prompts: list[str] = []

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        prompts.append(first_prompt(messages))
        return ModelResponse(parts=[TextPart("Nothing to change.")])

    for show_trace in (True, False):
        SkillManager(
            FunctionModel(model), embedder=TestEmbedder(), settings=SMSettings(show_trace=show_trace)
        ).update_skills([CABIN_REFLECTION], seeded_book(), source=AIRLINE_SOURCE)
    with_task, without = prompts
    assert f"task: {AIRLINE_SOURCE.sample_question}" in with_task
    assert AIRLINE_SOURCE.sample_question not in without and "trace_id" not in without and "<trace>" in with_task
    assert CABIN_REFLECTION.key_insight in without
