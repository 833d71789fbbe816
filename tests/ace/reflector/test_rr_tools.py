"""The recursive reflector's tools called directly: slices of the trace, failures, skills, code, budget wrap-up."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from pydantic_ai import ModelRetry, RunContext
from pydantic_ai.models.test import TestModel
from pydantic_ai.tools import ToolDefinition
from pydantic_ai.usage import RunUsage

from ace import Skillbook
from ace.embeddings.test import TestEmbedder
from ace.reflector.recursive import RecursiveConfig, RRDeps, SandboxLimits, rr_tools
from ace.reflector.recursive.tools import (
    execute_code,
    find_errors,
    list_messages,
    list_tool_calls,
    read_message,
    read_skill,
    search_skillbook,
    while_budget_left,
)
from ace.reflector.simple import TagCheck
from ace.reflector.trace_view import TraceView


def airline_trace(extra_messages: int = 0) -> dict[str, Any]:
    """A cancelled-flight complaint: the agent looks the user up, then issues a certificate it should not."""

    def call(call_id: str, name: str, **args: Any) -> dict[str, Any]:
        function = {"name": name, "arguments": json.dumps(args)}
        return {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": call_id, "type": "function", "function": function}],
        }

    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "# Airline policy\nCompensation only for silver/gold members. " + "x" * 9_000},
        {"role": "user", "content": "My flight HAT045 was delayed 5 hours. I want compensation. User mei_chen_1150."},
        call("c1", "get_user_details", user_id="mei_chen_1150"),
        {
            "role": "tool",
            "tool_call_id": "c1",
            "content": json.dumps({"membership": "regular", "reservations": ["L0X2"]}),
        },
        call("c2", "send_certificate", user_id="mei_chen_1150", amount=50),
        {"role": "tool", "tool_call_id": "c2", "content": "Error: amount must be a multiple of 100"},
        call("c3", "send_certificate", user_id="mei_chen_1150", amount=100),
        {"role": "tool", "tool_call_id": "c3", "content": "Certificate certificate_1 added to user mei_chen_1150."},
        {"role": "assistant", "content": "I sent you a $100 certificate."},
    ]
    messages += [{"role": "user", "content": f"filler {i}"} for i in range(extra_messages)]
    return {
        "trace_uid": "demo-airline:delay-complaint-trial-9",
        "source_system": "demo-airline",
        "trace_id": "delay-complaint-trial-9",
        "question": "You are mei_chen_1150; ask compensation for the 5-hour delay of HAT045.",
        "messages": messages,
        "reward": 0.0,
        "feedback": "reward 0: a certificate was sent to a regular member",
        "ground_truth": {"actions": [], "outputs": []},
        "metadata": {},
        "skills_in_context": ["context-00001"],
    }


def context(
    trace: dict[str, Any] | None = None,
    book: Skillbook | None = None,
    usage: RunUsage | None = None,
    **config: Any,
) -> RunContext[RRDeps]:
    trace = trace or airline_trace()
    book = book if book is not None else Skillbook()
    deps = RRDeps(
        trace=trace,
        view=TraceView.from_trace(trace),
        trace_json=json.dumps(trace).encode(),
        skillbook=book,
        tags=TagCheck(allowed=frozenset(trace.get("skills_in_context") or [])),
        config=RecursiveConfig(sandbox=SandboxLimits(timeout_s=2.0, memory_mb=128), **config),
        embedder=TestEmbedder(),
    )
    return RunContext(deps=deps, model=TestModel(), usage=usage or RunUsage())


def skillbook() -> Skillbook:
    book = Skillbook()
    book.add_skill(
        "context",
        "In tau-airline, compensation certificates are only for silver or gold members, insured or business fliers.",
        ["airline", "compensation"],
        "Check membership, insurance and cabin before send_certificate; refuse regular members politely.",
    )
    book.add_skill("context", "In tau-airline, bags can be added but never removed.", ["airline", "baggage"], "Say so.")
    return book


# ---------------------------------------------------------------------------------------- messages
def test_list_messages_shows_one_line_per_message() -> None:
    ctx = context()
    lines = list_messages(ctx, 1, 6).splitlines()
    assert lines[0].startswith("[1] user: My flight HAT045 was delayed")
    assert lines[1] == '[2] assistant: -> get_user_details({"user_id": "mei_chen_1150"})'
    assert lines[4] == "[5] tool send_certificate [ERROR]: Error: amount must be a multiple of 100"
    assert len(lines) == 5 and ctx.deps.calls["list_messages"] == 1


def test_list_messages_is_capped_and_says_how_to_go_on() -> None:
    ctx = context(airline_trace(extra_messages=60), max_list_messages=20)
    lines = list_messages(ctx, 0).splitlines()
    assert len(lines) == 21 and lines[-1] == "... 49 more messages: list_messages(20, 69)"
    capped = list_messages(ctx, 0, 50).splitlines()
    assert capped[-1] == "... 49 more messages: list_messages(20, 69)"
    assert list_messages(ctx, 60, 500).splitlines()[-1].startswith("[68] user: filler 59")


@pytest.mark.parametrize(
    ("start", "end", "message"),
    [(9, None, r"start=9 is out of range: the trace has 9 messages \(0-8\)"), (3, 3, "end=3 must be greater")],
)
def test_list_messages_refuses_bad_ranges(start: int, end: int | None, message: str) -> None:
    with pytest.raises(ModelRetry, match=message):
        list_messages(context(), start, end)


def test_read_message_pages_through_a_long_message() -> None:
    ctx = context(max_read_chars=4_000)
    first = read_message(ctx, 0)
    assert first.startswith("[0] system:\n# Airline policy\nCompensation only for silver/gold members.")
    assert first.endswith("read_message(index=0, offset=4000) for the rest ...]")
    rest = read_message(ctx, 0, offset=8_000)
    assert rest.startswith("x") and "for the rest" not in rest
    assert read_message(ctx, -1) == "[8] assistant: I sent you a $100 certificate."
    with pytest.raises(ModelRetry, match="index=9 is out of range"):
        read_message(ctx, 9)
    with pytest.raises(ModelRetry, match="offset=99999 is out of range"):
        read_message(ctx, 0, offset=99_999)


def test_read_message_shows_the_call_a_result_answers() -> None:
    text = read_message(context(), 5)
    assert text == "[5] tool result of send_certificate (call c2) [ERROR]:\nError: amount must be a multiple of 100"


# -------------------------------------------------------------------------------------- tool calls
def test_list_tool_calls_all_or_by_name() -> None:
    ctx = context()
    every = list_tool_calls(ctx).splitlines()
    assert [line.split(" ")[0] for line in every] == ["#0", "#1", "#2"]
    assert every[1] == (
        '#1 [message 4] send_certificate({"user_id": "mei_chen_1150", "amount": 50}) '
        "-> Error: amount must be a multiple of 100 [ERROR]"
    )
    assert len(list_tool_calls(ctx, "send_certificate").splitlines()) == 2
    with pytest.raises(ModelRetry, match=r"never called 'send_certficate'.*Did you mean 'send_certificate'"):
        list_tool_calls(ctx, "send_certficate")


def test_list_tool_calls_without_calls() -> None:
    trace = {**airline_trace(), "messages": [{"role": "user", "content": "hi"}]}
    assert list_tool_calls(context(trace)) == "The agent made no tool call in this trace."


def test_find_errors_lists_failed_results_with_their_calls() -> None:
    text = find_errors(context())
    assert text == (
        '#1 [message 5] error: send_certificate({"user_id": "mei_chen_1150", "amount": 50})\n'
        "  -> Error: amount must be a multiple of 100"
    )


def test_find_errors_on_a_clean_trace_points_elsewhere() -> None:
    trace = airline_trace()
    trace["messages"][5]["content"] = "Certificate certificate_0 added."
    assert find_errors(context(trace)).startswith("No tool result in this trace is an error")


# ----------------------------------------------------------------------------------------- skillbook
def test_read_skill_and_whether_it_was_in_context() -> None:
    ctx = context(book=skillbook())
    shown = read_skill(ctx, "context-00001")
    assert '<skill id="context-00001" section="context"' in shown and "send_certificate" in shown
    assert shown.endswith("in the agent's context for this trace: yes")
    assert read_skill(ctx, "context-00002").endswith("no (do not tag it)")
    with pytest.raises(ModelRetry, match="Did you mean 'context-00001'"):
        read_skill(ctx, "context-0001")


def test_search_skillbook_finds_the_matching_skill_first() -> None:
    ctx = context(book=skillbook())
    found = search_skillbook(ctx, "compensation certificate for a regular member", top_k=1)
    assert found.startswith('<skills count="1">') and 'id="context-00001"' in found
    assert "No active skill" in search_skillbook(ctx, "compensation", section="harness")
    with pytest.raises(ModelRetry, match="top_k must be between 1 and 10"):
        search_skillbook(ctx, "compensation", top_k=50)
    with pytest.raises(ModelRetry, match="query must be non-empty"):
        search_skillbook(ctx, "  ")


def test_search_an_empty_skillbook() -> None:
    assert search_skillbook(context(), "anything") == "The skillbook has no active skill yet."


# ---------------------------------------------------------------------------------------------- code
def test_execute_code_returns_results_and_failures_as_text() -> None:
    ctx = context()
    ok = asyncio.run(execute_code(ctx, "1 + 1"))
    assert ok.startswith("OK (") and ok.endswith("--- stdout ---\n2")
    amounts = (
        "import json\nsum(json.loads(m['tool_calls'][0]['function']['arguments'])['amount'] for m in messages[4:7:2])"
    )
    assert asyncio.run(execute_code(ctx, amounts)).endswith("150")
    failed = asyncio.run(execute_code(ctx, "while True: pass"))
    assert failed.startswith("Stopped: the code ran longer than the 2 s time limit")
    assert ctx.deps.code_failures == 1 and ctx.deps.calls["execute_code"] == 3
    with pytest.raises(ModelRetry, match="code is empty"):
        asyncio.run(execute_code(ctx, "   "))


def test_execute_code_reports_an_unusable_interpreter_as_text(monkeypatch: pytest.MonkeyPatch) -> None:
    import ace.reflector.recursive.tools as tools

    async def broken(*_args: Any, **_kwargs: Any) -> Any:
        raise FileNotFoundError("python3.11")

    monkeypatch.setattr(tools, "run_code", broken)
    ctx = context()
    text = asyncio.run(execute_code(ctx, "1"))
    assert text.startswith("execute_code is unavailable on this machine (FileNotFoundError")
    assert ctx.deps.code_failures == 1


# ------------------------------------------------------------------------------------------- wrap-up
TOOL = ToolDefinition(name="find_errors")


@pytest.mark.parametrize(
    ("usage", "config", "offered"),
    [
        (RunUsage(requests=3), {"max_requests": 5}, True),
        (RunUsage(requests=4), {"max_requests": 5}, False),
        (RunUsage(requests=1, input_tokens=700, output_tokens=99), {"max_tokens": 1_000}, True),
        (RunUsage(requests=1, input_tokens=700, output_tokens=100), {"max_tokens": 1_000}, False),
        (RunUsage(requests=1, tool_calls=9), {"max_tool_calls": 10}, True),
        (RunUsage(requests=1, tool_calls=10), {"max_tool_calls": 10}, False),
    ],
)
def test_tools_are_offered_while_budget_is_left(usage: RunUsage, config: dict[str, Any], offered: bool) -> None:
    assert (while_budget_left(context(usage=usage, **config), TOOL) is TOOL) is offered


def test_each_agent_gets_fresh_tools() -> None:
    first, second = rr_tools(), rr_tools()
    assert [t.name for t in first] == [
        "list_messages",
        "read_message",
        "list_tool_calls",
        "find_errors",
        "read_skill",
        "search_skillbook",
        "execute_code",
    ]
    assert all(a is not b for a, b in zip(first, second, strict=True))
    assert all(t.description for t in first)
