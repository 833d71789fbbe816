"""`RecursiveReflector` sessions scripted with `FunctionModel`: tools, the reflection, budgets, tags, caching, spans."""

from __future__ import annotations

import asyncio
import json
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
from ace.embeddings.test import TestEmbedder
from ace.reflector.recursive import RecursiveConfig, RecursiveReflector, SandboxLimits, cache_retention
from ace.reflector.simple import ReflectorError

DEMO = Path(__file__).resolve().parents[3] / "examples" / "demo-collection"
Step = Callable[[list[ModelMessage], AgentInfo], ModelResponse]


class Script(_Script):
    """The shared scripted model, named for this file's assertions."""

    def __init__(self, *steps: Step) -> None:
        super().__init__(*steps, name="scripted-rr")


ANALYSIS: dict[str, Any] = {
    "error_identification": "Message 13 refunded a gift-card flight change to the Mastercard.",
    "root_cause_analysis": "The agent picked a payment method without asking which one the customer wanted.",
    "correct_approach": "Ask which gift card or credit card of the profile to use, then update_reservation_flights.",
    "key_insight": "Before update_reservation_flights, ask the customer which payment method to charge or refund.",
}
COUNT_CALLS = (
    "from collections import Counter\n"
    "Counter(c['function']['name'] for m in messages if m['role'] == 'assistant' for c in m.get('tool_calls') or [])"
)


def demo(trace_id: str) -> dict[str, Any]:
    from ace_eval.collection import read_collection

    _, traces = read_collection(DEMO)
    return next(t.model_dump() for t in traces if t.trace_id == trace_id)


def setting() -> tuple[Skillbook, dict[str, Any], str]:
    """A gift-card flight change refunded to the wrong card, with one payment skill in the agent's context."""
    book = Skillbook()
    skill = book.add_skill(
        "context",
        "In tau-airline flight changes, the customer chooses which gift card or credit card pays or is refunded.",
        ["airline", "payment"],
        "Ask which payment method to use before update_reservation_flights.",
    )
    book.add_skill(
        "context", "In tau-airline, baggage can only be added, never removed.", ["airline", "baggage"], "Say so."
    )
    trace = {**demo("change-flight-gift-card-trial-0"), "skills_in_context": [skill.id]}
    # A failed attempt, as real traces have: the agent first tried a payment method the user does not hold.
    messages = trace["messages"]
    failed_call = {
        "id": "call_bad",
        "type": "function",
        "function": {"name": "update_reservation_flights", "arguments": '{"payment_id": "gift_card_0000000"}'},
    }
    trace["messages"] = [
        *messages[:4],
        {"role": "assistant", "content": None, "tool_calls": [failed_call]},
        {"role": "tool", "tool_call_id": "call_bad", "content": "Error: payment method not found"},
        *messages[4:],
    ]
    return book, trace, skill.id


def call(tool: str, **args: Any) -> Step:
    return lambda _m, _i: ModelResponse(parts=[ToolCallPart(tool, args)])


def reflect(tags: list[dict[str, str]] | None = None) -> Step:
    return lambda _m, _i: ModelResponse(parts=[ToolCallPart("final_result", {**ANALYSIS, "skill_tags": tags or []})])


def returns(messages: list[ModelMessage]) -> list[str]:
    """The tool results (or retry messages) the model received in the last request."""
    last = messages[-1]
    assert isinstance(last, ModelRequest)
    out: list[str] = []
    for part in last.parts:
        if isinstance(part, ToolReturnPart):
            out.append(part.model_response_str())
        elif isinstance(part, RetryPromptPart):
            out.append(part.model_response())
    return out


def reflector(script: Script, model_settings: Any = None, **config: Any) -> RecursiveReflector:
    limits = SandboxLimits(timeout_s=2.0, memory_mb=128)
    return RecursiveReflector(
        script.model,
        config=RecursiveConfig(sandbox=limits, **config),
        embedder=TestEmbedder(),
        model_settings=model_settings,
    )


def investigation(skill_id: str) -> Script:
    return Script(
        call("find_errors"),
        call("list_messages", start=4, end=10),
        call("execute_code", code=COUNT_CALLS),
        call("search_skillbook", query="which payment method refund gift card", top_k=2),
        reflect([{"skill_id": skill_id, "tag": "harmful"}]),
    )


# --------------------------------------------------------------------------------------------- sessions
def test_a_session_reads_computes_searches_then_reflects() -> None:
    book, trace, skill_id = setting()
    script = investigation(skill_id)
    result = asyncio.run(reflector(script).reflect(trace, book))

    assert result.reflection.key_insight == ANALYSIS["key_insight"]
    assert [(t.skill_id, t.tag) for t in result.reflection.skill_tags] == [(skill_id, "harmful")]
    assert result.model_name == "scripted-rr" and result.tool_calls == 4 and result.dropped_tags == ()
    assert result.usage.requests == 5 and result.usage.tool_calls == 4

    [errors] = returns(script.seen[1])
    assert "#1 [message 5] error: update_reservation_flights" in errors
    assert "-> Error: payment method not found" in errors
    [listing] = returns(script.seen[2])
    assert (
        listing.splitlines()[0] == '[4] assistant: -> update_reservation_flights({"payment_id": "gift_card_0000000"})'
    )
    assert listing.splitlines()[1] == "[5] tool update_reservation_flights [ERROR]: Error: payment method not found"
    assert len(listing.splitlines()) == 6 and listing.splitlines()[-1].startswith("[9] ")
    [computed] = returns(script.seen[3])
    assert computed.startswith("OK (") and "'update_reservation_flights': 2" in computed
    [found] = returns(script.seen[4])
    assert found.startswith('<skills count="2">') and f'<skill id="{skill_id}"' in found


def test_the_prompt_is_an_outline_not_the_whole_trace() -> None:
    book, trace, skill_id = setting()
    script = investigation(skill_id)
    asyncio.run(reflector(script, preview_chars=60).reflect(trace, book))
    prompt = "\n".join(str(getattr(p, "content", "")) for p in script.seen[0][0].parts)

    assert f"<task>\n{trace['question']}\n</task>" in prompt and "reward: 0.0" in prompt
    assert '<ground_truth>\n{\n "actions": [' in prompt
    assert f'<outline messages="{len(trace["messages"])}" tool_calls="5" failed_tool_results="1">' in prompt
    assert "tools called: update_reservation_flights x2," in prompt
    assert "[5] tool update_reservation_flights [ERROR]: Error: payment method not found" in prompt
    assert trace["messages"][0]["content"][:300] not in prompt  # the policy is only previewed
    assert f'<skill id="{skill_id}"' in prompt
    assert "You have 20 model requests in all, this one included; the last one has no tools." in prompt
    tools = {t.name for t in script.infos[0].function_tools}
    assert tools == {
        "list_messages",
        "read_message",
        "list_tool_calls",
        "find_errors",
        "read_skill",
        "search_skillbook",
        "execute_code",
    }


def test_failing_code_and_bad_calls_come_back_to_the_model() -> None:
    book, trace, _ = setting()
    script = Script(
        call("execute_code", code="messages[999]"),
        call("read_message", index=99),
        call("read_skill", skill_id="context-0001"),
        reflect(),
    )
    result = asyncio.run(reflector(script).reflect(trace, book))
    [code] = returns(script.seen[1])
    assert code.startswith("The code raised an exception") and "IndexError: list index out of range" in code
    [bad_index] = returns(script.seen[2])
    assert f"index=99 is out of range: the trace has {len(trace['messages'])} messages" in bad_index
    [bad_id] = returns(script.seen[3])
    assert "Unknown skill id 'context-0001'" in bad_id and "Did you mean 'context-00001'" in bad_id
    assert result.tool_calls == 1  # only execute_code ran; the refused calls did not


def test_tools_are_withdrawn_on_the_last_request_so_the_model_must_answer() -> None:
    book, trace, _ = setting()

    def greedy(_m: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if info.function_tools:
            return ModelResponse(parts=[ToolCallPart("list_tool_calls", {})])
        return reflect()(_m, info)

    script = Script(greedy, greedy, greedy, greedy)
    result = asyncio.run(reflector(script, max_requests=3).reflect(trace, book))
    assert [len(i.function_tools) for i in script.infos] == [7, 7, 0]
    # The second, identical list_tool_calls() is refused without running, so it is not a tool call.
    assert result.usage.requests == 3 and result.tool_calls == 1
    assert "Refused, not executed: list_tool_calls" in returns(script.seen[2])[0]


def test_a_session_that_ends_without_a_reflection_raises_with_the_fix() -> None:
    book, trace, _ = setting()
    stubborn = Script(*[lambda _m, _i: ModelResponse(parts=[TextPart("Still thinking.")])] * 3)
    with pytest.raises(ReflectorError, match=r"stopped without a reflection.*raise RecursiveConfig.max_requests") as e:
        asyncio.run(reflector(stubborn, max_requests=2).reflect(trace, book))
    assert e.value.usage.requests == 2


def test_tags_outside_the_context_are_sent_back_then_dropped() -> None:
    book, trace, skill_id = setting()
    other = "context-00002"  # in the skillbook, but not in this trace's context
    script = Script(reflect([{"skill_id": other, "tag": "helpful"}]), reflect([{"skill_id": other, "tag": "helpful"}]))
    result = asyncio.run(reflector(script).reflect(trace, book))
    assert f"valid ids: {skill_id}" in returns(script.seen[1])[0]
    assert result.reflection.skill_tags == [] and [t.skill_id for t in result.dropped_tags] == [other]


def test_a_long_session_compacts_its_history_and_still_reflects() -> None:
    book, trace, _ = setting()
    reads = [call("read_message", index=i) for i in range(1, 9)]
    script = Script(*reads, reflect())
    result = asyncio.run(reflector(script, max_history_tokens=400, keep_last_messages=2).reflect(trace, book))
    assert result.tool_calls == 8
    assert any("[Compacted history]" in str(getattr(p, "content", "")) for p in script.seen[-1][0].parts)


# ----------------------------------------------------------------------------------------------- config
def test_prompt_caching_is_a_model_setting_of_the_session() -> None:
    # pydantic-ai turns `cache` into provider cache points (Anthropic, Bedrock, ...); FunctionModel drops it.
    cached = reflector(Script(reflect()), cache_ttl=3600, model_settings=None)
    assert cached.agent.agent.model_settings == {"cache": {"retention": "1h"}}
    uncached = reflector(Script(reflect()), cache_prompts=False)
    assert uncached.agent.agent.model_settings == {"cache": False}
    explicit = RecursiveReflector(Script(reflect()).model, model_settings={"temperature": 0.1, "cache": "5m"})
    assert explicit.agent.agent.model_settings == {"temperature": 0.1, "cache": "5m"}  # the caller's choice wins


@pytest.mark.parametrize(("ttl", "retention"), [("5m", "5m"), ("1H", "1h"), (300, "5m"), (43_200, "12h")])
def test_cache_ttls_map_to_retention_tiers(ttl: str | int, retention: str) -> None:
    assert cache_retention(ttl) == retention


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"cache_ttl": "2h"}, "not a cache tier"),
        ({"cache_ttl": 60}, "60 seconds is not a cache tier"),
        ({"cache_ttl": True}, "cache_ttl must be one of"),
        ({"max_requests": 1}, "at least 2"),
        ({"max_tokens": 0}, "max_tokens must be a positive integer or None"),
        ({"max_read_chars": 0}, "max_read_chars must be a positive integer"),
    ],
)
def test_config_is_validated(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        RecursiveConfig(**kwargs)


def test_config_budget() -> None:
    budget = RecursiveConfig(max_requests=7, max_tool_calls=None, max_tokens=9_000, max_history_tokens=500).budget
    assert (budget.request_limit, budget.tool_calls_limit, budget.total_tokens_limit) == (7, None, 9_000)
    assert budget.max_history_tokens == 500


# ------------------------------------------------------------------------------------------------ spans


def test_the_session_span_has_a_child_span_per_tool_call(spans: TestExporter) -> None:
    book, trace, skill_id = setting()
    asyncio.run(reflector(investigation(skill_id)).reflect(trace, book))

    exported = spans.exported_spans_as_dict()
    [session] = [s for s in exported if s["name"] == "rr.session"]
    attrs = session["attributes"]
    assert attrs["ace.reflector"] == "rr" and attrs["ace.trace_uid"] == trace["trace_uid"]
    assert attrs["ace.trace_id"] == "change-flight-gift-card-trial-0" and attrs["ace.source_system"] == "demo-airline"
    assert (attrs["ace.messages_count"], attrs["ace.trace_tool_calls"], attrs["ace.trace_failed_tool_results"]) == (
        18,
        5,
        1,
    )
    assert attrs["ace.skills_in_context_count"] == 1 and attrs["ace.request_limit"] == 20
    assert attrs["ace.completed"] is True and attrs["ace.requests"] == 5 and attrs["ace.tool_calls"] == 4
    assert (attrs["ace.tools_called"], attrs["ace.code_runs"], attrs["ace.code_failures"]) == (4, 1, 0)
    assert attrs["ace.dropped_tags_count"] == 0

    tools = [s for s in exported if s["attributes"].get("ace.tool")]
    assert [s["name"] for s in tools] == ["find_errors", "list_messages", "execute_code", "search_skillbook"]
    assert all(s["parent"]["span_id"] == session["context"]["span_id"] for s in tools)
    assert all(s["attributes"]["ace.result"] == "ok" for s in tools)
    errors, listing, code, search = (s["attributes"] for s in tools)
    assert errors["ace.results_count"] == 1 and (listing["ace.start"], listing["ace.end"]) == (4, 10)
    assert code["ace.exit_code"] == 0 and code["ace.timed_out"] is False and code["ace.duration_ms"] > 0
    assert code["ace.code_chars"] == len(COUNT_CALLS) and "ace.code" not in code
    assert search["ace.top_k"] == 2 and tuple(search["ace.result_ids"])[:1] == (skill_id,) and "ace.query" not in search
    # No trace content on spans unless asked for.
    assert "ace.prompt" not in attrs and "ace.output" not in attrs


def test_content_is_recorded_when_asked(spans: TestExporter) -> None:
    book, trace, skill_id = setting()
    asyncio.run(reflector(investigation(skill_id), record_content=True).reflect(trace, book))
    exported = spans.exported_spans_as_dict()
    [session] = [s for s in exported if s["name"] == "rr.session"]
    assert trace["question"] in session["attributes"]["ace.prompt"]
    assert ANALYSIS["key_insight"] in session["attributes"]["ace.output"]
    [code] = [s for s in exported if s["name"] == "execute_code"]
    assert code["attributes"]["ace.code"] == COUNT_CALLS
    [search] = [s for s in exported if s["name"] == "search_skillbook"]
    assert search["attributes"]["ace.query"] == "which payment method refund gift card"


def test_a_refused_call_is_marked_on_its_span(spans: TestExporter) -> None:
    book, trace, _ = setting()
    asyncio.run(reflector(Script(call("list_messages", start=500), reflect())).reflect(trace, book))
    [span] = [s for s in spans.exported_spans_as_dict() if s["name"] == "list_messages"]
    assert span["attributes"]["ace.result"] == "refused"
    assert json.dumps(span["attributes"]).count("out of range") == 0  # the reason is content, not recorded
