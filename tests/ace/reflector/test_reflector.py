"""`SimpleReflector` scripted with `FunctionModel`: the prompt it sends, the result, the skill-tag policy, spans."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from _ace_scripts import Script as _Script
from logfire.testing import TestExporter
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    RetryPromptPart,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
)
from pydantic_ai.models.function import AgentInfo

from ace import Skillbook
from ace.reflector.recursive import RecursiveConfig, RecursiveReflector
from ace.reflector.reflection import Reflection, SkillTag
from ace.reflector.simple import (
    Reflector,
    ReflectorError,
    ReflectorResult,
    SimpleReflector,
    TagCheck,
    check_skill_tags,
    make_reflector,
    split_skill_tags,
)

DEMO = Path(__file__).resolve().parents[3] / "examples" / "demo-collection"

ANALYSIS: dict[str, Any] = {
    "error_identification": "Message 10 cancelled basic-economy reservation K3P9QZ after a change of plans.",
    "root_cause_analysis": "Policy: basic economy is cancellable only within 24 h, insured, or airline-cancelled.",
    "correct_approach": "Read created_at, cabin and insurance; refuse the cancellation and explain the rule.",
    "key_insight": "Before cancel_reservation, check the cancellation rules against cabin, booking time and insurance.",
}
Respond = Callable[[list[ModelMessage], AgentInfo], ModelResponse]


class Script(_Script):
    """The shared scripted model, named for this file's assertions."""

    def __init__(self, *steps: Respond) -> None:
        super().__init__(*steps, name="scripted-reflector")


def demo(trace_id: str) -> dict[str, Any]:
    from ace_eval.collection import read_collection

    _, traces = read_collection(DEMO)
    return next(t.model_dump() for t in traces if t.trace_id == trace_id)


def book_and_trace(trace_id: str = "cancel-basic-economy-trial-0") -> tuple[Skillbook, dict[str, Any], list[str]]:
    """The skillbook the agent ran with, and the trace listing the skills it had in context."""
    book = Skillbook()
    ids = [
        book.add_skill(
            "context",
            "In tau-airline, cancel_reservation is allowed for basic economy only within 24 h, insured or cancelled.",
            ["airline", "cancellation"],
            "Check cabin, created_at and insurance before cancelling.",
        ).id,
        book.add_skill(
            "context",
            "In tau-airline, the agent must get an explicit yes before any write action.",
            ["airline", "confirmation"],
            "List the action and wait for yes.",
        ).id,
        book.add_skill("harness", "The airline tool server is slow on search_direct_flight.", ["tau_bench"]).id,
    ]
    trace = {**demo(trace_id), "skills_in_context": ids[:2]}
    return book, trace, ids


def reflect_with(tags: list[dict[str, str]]) -> Respond:
    def respond(_messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        [output] = info.output_tools
        return ModelResponse(parts=[ToolCallPart(output.name, {**ANALYSIS, "skill_tags": tags})])

    return respond


def prompt_of(messages: list[ModelMessage]) -> str:
    first = messages[0]
    assert isinstance(first, ModelRequest)
    return "\n".join(str(getattr(p, "content", "")) for p in first.parts)


def retry_text(messages: list[ModelMessage]) -> str:
    """What the model was told when its last output was sent back."""
    last = messages[-1]
    assert isinstance(last, ModelRequest)
    texts = [p.model_response() for p in last.parts if isinstance(p, RetryPromptPart)]
    texts += [p.model_response_str() for p in last.parts if isinstance(p, ToolReturnPart) and p.outcome == "retried"]
    assert len(texts) == 1, last.parts
    return texts[0]


# ---------------------------------------------------------------------------------------- the result
def test_the_structured_output_lands_in_the_result_with_usage() -> None:
    book, trace, ids = book_and_trace()
    script = Script(reflect_with([{"skill_id": ids[0], "tag": "harmful"}]))
    result = asyncio.run(SimpleReflector(script.model).reflect(trace, book))

    assert isinstance(result, ReflectorResult)
    assert result.reflection == Reflection(**ANALYSIS, skill_tags=[SkillTag(skill_id=ids[0], tag="harmful")])
    assert result.model_name == "scripted-reflector"
    assert result.usage.requests == 1 and result.usage.input_tokens > 500 and result.usage.output_tokens > 20
    assert result.dropped_tags == () and result.tool_calls == 0
    assert len(script.seen) == 1 and script.infos[0].function_tools == []  # one structured call, no tools


def test_the_prompt_holds_the_trace_outcome_ground_truth_and_skills() -> None:
    book, trace, ids = book_and_trace("change-flight-gift-card-trial-0")
    script = Script(reflect_with([]))
    asyncio.run(SimpleReflector(script.model).reflect(trace, book))
    prompt = prompt_of(script.seen[0])

    assert f"<task>\n{trace['question']}\n</task>" in prompt
    assert "-> call update_reservation_flights(" in prompt and "tool result of update_reservation_flights" in prompt
    assert "reward: 0.0" in prompt and trace["feedback"] in prompt
    assert '<ground_truth>\n{\n "actions": [' in prompt and '"payment_id": "gift_card_' in prompt
    assert f'<skill id="{ids[0]}"' in prompt and f'<skill id="{ids[1]}"' in prompt
    assert ids[2] not in prompt  # in the skillbook but not in the agent's context
    system = script.infos[0].instructions or ""
    assert "key_insight" in system and "skill_tags" in system


def test_a_successful_trace_still_gets_a_reflection() -> None:
    book, trace, ids = book_and_trace("cancel-business-trial-0")
    worked = {
        "error_identification": "none: the agent verified the business cabin and cancelled after a yes.",
        "root_cause_analysis": "It checked the reservation's cabin against the cancellation rules first.",
        "correct_approach": "Same as done: get details, check the rule, confirm, cancel.",
        "key_insight": "Business reservations can always be cancelled; confirm before cancel_reservation.",
        "skill_tags": [{"skill_id": ids[0], "tag": "helpful"}, {"skill_id": ids[1], "tag": "helpful"}],
    }
    script = Script(lambda _m, info: ModelResponse(parts=[ToolCallPart(info.output_tools[0].name, worked)]))
    result = asyncio.run(SimpleReflector(script.model).reflect(trace, book))
    assert "reward: 1.0" in prompt_of(script.seen[0])
    assert result.reflection.error_identification.startswith("none")
    assert [(t.skill_id, t.delta) for t in result.reflection.skill_tags] == [(ids[0], 1), (ids[1], 1)]


def test_a_malformed_reflection_is_retried_then_fails_with_the_fix() -> None:
    book, trace, _ = book_and_trace()

    def incomplete(_m: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        return ModelResponse(parts=[ToolCallPart(info.output_tools[0].name, {"key_insight": "check rules"})])

    recovered = Script(incomplete, reflect_with([]))
    assert asyncio.run(SimpleReflector(recovered.model).reflect(trace, book)).usage.requests == 2

    hopeless = Script(incomplete, incomplete)
    with pytest.raises(ReflectorError, match=r"did not return a valid reflection.*output_retries"):
        asyncio.run(SimpleReflector(hopeless.model, output_retries=1).reflect(trace, book))


def test_a_text_answer_is_sent_back_for_the_structured_one() -> None:
    book, trace, _ = book_and_trace()
    script = Script(lambda _m, _i: ModelResponse(parts=[TextPart("The agent broke the policy.")]), reflect_with([]))
    result = asyncio.run(SimpleReflector(script.model).reflect(trace, book))
    assert result.reflection.key_insight == ANALYSIS["key_insight"] and result.usage.requests == 2


# ------------------------------------------------------------------------------------------- skill tags
def test_a_tag_on_a_skill_outside_the_context_is_sent_back_once() -> None:
    book, trace, ids = book_and_trace()
    script = Script(
        reflect_with([{"skill_id": ids[2], "tag": "harmful"}, {"skill_id": ids[0], "tag": "harmful"}]),
        reflect_with([{"skill_id": ids[0], "tag": "harmful"}]),
    )
    result = asyncio.run(SimpleReflector(script.model).reflect(trace, book))
    feedback = retry_text(script.seen[1])
    assert f"not in the agent's context: {ids[2]}" in feedback
    assert f"valid ids: {ids[0]}, {ids[1]}" in feedback
    assert [t.skill_id for t in result.reflection.skill_tags] == [ids[0]]
    assert result.dropped_tags == () and result.usage.requests == 2


def test_unknown_tags_the_model_insists_on_are_dropped() -> None:
    book, trace, ids = book_and_trace()
    insisting = reflect_with([{"skill_id": "context-00099", "tag": "helpful"}, {"skill_id": ids[1], "tag": "neutral"}])
    script = Script(insisting, insisting, insisting)
    result = asyncio.run(SimpleReflector(script.model, output_retries=2).reflect(trace, book))
    assert [(t.skill_id, t.tag) for t in result.reflection.skill_tags] == [(ids[1], "neutral")]
    assert result.dropped_tags == (SkillTag(skill_id="context-00099", tag="helpful"),)
    assert result.usage.requests == 3  # two retries, then the tag is dropped rather than failing the sample


def test_with_no_skill_in_context_every_tag_is_dropped() -> None:
    book, trace, ids = book_and_trace()
    trace["skills_in_context"] = []
    script = Script(reflect_with([{"skill_id": ids[0], "tag": "helpful"}]))
    result = asyncio.run(SimpleReflector(script.model, output_retries=0).reflect(trace, book))
    assert result.reflection.skill_tags == [] and [t.skill_id for t in result.dropped_tags] == [ids[0]]
    assert "(none: the agent had no skill in its context; skill_tags must be empty)" in prompt_of(script.seen[0])


def test_a_removed_skill_in_context_is_shown_apart_and_cannot_be_tagged() -> None:
    book, trace, ids = book_and_trace()
    book.remove_skill(ids[1], "superseded")
    script = Script(reflect_with([{"skill_id": ids[1], "tag": "helpful"}]))
    result = asyncio.run(SimpleReflector(script.model, output_retries=0).reflect(trace, book))
    assert f"(also listed, but removed or unknown now, do not tag: {ids[1]})" in prompt_of(script.seen[0])
    assert result.reflection.skill_tags == [] and len(result.dropped_tags) == 1


def test_duplicate_tags_keep_the_last_verdict() -> None:
    tags = [
        SkillTag(skill_id="context-00001", tag="helpful"),
        SkillTag(skill_id="context-00002", tag="neutral"),
        SkillTag(skill_id="context-00001", tag="harmful"),
        SkillTag(skill_id="context-00009", tag="harmful"),
    ]
    kept, rejected = split_skill_tags(tags, {"context-00001", "context-00002"})
    assert [(t.skill_id, t.tag) for t in kept] == [("context-00001", "harmful"), ("context-00002", "neutral")]
    assert [t.skill_id for t in rejected] == ["context-00009"]


def test_check_skill_tags_retries_only_while_retries_are_left() -> None:
    reflection = Reflection(**ANALYSIS, skill_tags=[SkillTag(skill_id="context-00009", tag="harmful")])
    check = TagCheck(allowed=frozenset({"context-00001"}))
    with pytest.raises(Exception, match="valid ids: context-00001"):
        check_skill_tags(reflection, check, retry=0, max_retries=1)
    assert check.dropped == []
    cleaned = check_skill_tags(reflection, check, retry=1, max_retries=1)
    assert cleaned.skill_tags == [] and [t.skill_id for t in check.dropped] == ["context-00009"]
    valid = Reflection(**ANALYSIS, skill_tags=[SkillTag(skill_id="context-00001", tag="helpful")])
    assert check_skill_tags(valid, check, retry=0, max_retries=1) is valid


# ------------------------------------------------------------------------------------------ factory
def test_make_reflector_builds_both_kinds() -> None:
    model = Script(reflect_with([])).model
    simple = make_reflector("simple", model, output_retries=1)
    recursive = make_reflector("rr", model, config=RecursiveConfig(max_requests=5))
    assert isinstance(simple, SimpleReflector) and isinstance(recursive, RecursiveReflector)
    assert isinstance(simple, Reflector) and isinstance(recursive, Reflector)
    assert recursive.config.max_requests == 5
    with pytest.raises(ValueError, match="unknown reflector kind 'deep': use 'simple'"):
        make_reflector("deep", model)  # type: ignore[arg-type]


def test_a_model_string_is_routed_for_the_reflector_role() -> None:
    reflector = SimpleReflector("test")
    assert reflector.model.model_name == "test"


# -------------------------------------------------------------------------------------------- spans


def test_one_reflect_span_with_ids_and_counts_but_no_content(spans: TestExporter) -> None:
    book, trace, _ = book_and_trace()
    script = Script(reflect_with([{"skill_id": "context-00099", "tag": "helpful"}]), reflect_with([]))
    asyncio.run(SimpleReflector(script.model).reflect(trace, book))
    [span] = [s for s in spans.exported_spans_as_dict() if s["name"] == "reflect"]
    attrs = span["attributes"]
    assert attrs["ace.reflector"] == "simple" and attrs["ace.trace_uid"] == trace["trace_uid"]
    assert (attrs["ace.messages_count"], attrs["ace.trace_tool_calls"], attrs["ace.skills_in_context_count"]) == (
        13,
        3,
        2,
    )
    assert attrs["ace.requests"] == 2 and attrs["ace.tags_count"] == 0 and attrs["ace.dropped_tags_count"] == 0
    assert "ace.prompt" not in attrs and "ace.output" not in attrs


def test_content_goes_on_the_span_only_when_asked(spans: TestExporter) -> None:
    book, trace, _ = book_and_trace()
    asyncio.run(SimpleReflector(Script(reflect_with([])).model, record_content=True).reflect(trace, book))
    [span] = [s for s in spans.exported_spans_as_dict() if s["name"] == "reflect"]
    assert trace["question"] in span["attributes"]["ace.prompt"]
    assert "cancel_reservation, check the cancellation rules" in span["attributes"]["ace.output"]
