"""`RecursiveAgent` sessions: budgets, history compaction that keeps call/return pairs, one span per session."""

from __future__ import annotations

import asyncio
import itertools
from dataclasses import dataclass, field

import pytest
from logfire.testing import TestExporter
from pydantic_ai import RunContext
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel

from ace.agents.recursive import (
    COMPACTION_NOTE_PREFIX,
    RecursiveAgent,
    SessionBudget,
    compact_history,
    estimate_tokens,
)


@dataclass
class Deps:
    fetched: list[int] = field(default_factory=list[int])


def fetch_page(ctx: RunContext[Deps], page: int) -> str:
    """Fetch one page of a long trace.

    Args:
        page: The page number, from 0.
    """
    ctx.deps.fetched.append(page)
    return f"page {page}: " + "passenger booked flight HAT170 in economy; " * 40


def history(pairs: int) -> list[ModelMessage]:
    """A task request then `pairs` call/return round trips, the last one still awaiting the model."""
    messages: list[ModelMessage] = [ModelRequest(parts=[UserPromptPart("Summarise the trace.")])]
    for i in range(pairs):
        messages.append(ModelResponse(parts=[ToolCallPart("fetch_page", {"page": i}, tool_call_id=f"c{i}")]))
        part = ToolReturnPart("fetch_page", "x" * 400, tool_call_id=f"c{i}", outcome="retried" if i == 1 else "success")
        messages.append(ModelRequest(parts=[part]))
    return messages


def assert_pairs_intact(messages: list[ModelMessage]) -> None:
    calls = {p.tool_call_id for m in messages for p in m.parts if isinstance(p, ToolCallPart)}
    returns = {p.tool_call_id for m in messages for p in m.parts if isinstance(p, ToolReturnPart)}
    assert calls == returns
    kinds = [type(m) for m in messages]
    assert all(a is not b for a, b in itertools.pairwise(kinds)), "requests and responses alternate"


def note_of(messages: list[ModelMessage]) -> str:
    [note] = [
        p.content
        for p in messages[0].parts
        if isinstance(p, UserPromptPart) and str(p.content).startswith(COMPACTION_NOTE_PREFIX)
    ]
    return str(note)


# ------------------------------------------------------------------------------------------ budget
def test_budget_rejects_nonsense_and_maps_to_usage_limits() -> None:
    limits = SessionBudget(request_limit=7, tool_calls_limit=None, total_tokens_limit=900).usage_limits()
    assert (limits.request_limit, limits.tool_calls_limit, limits.total_tokens_limit) == (7, None, 900)
    with pytest.raises(ValueError, match="request_limit must be a positive integer"):
        SessionBudget(request_limit=0)
    with pytest.raises(ValueError, match="keep_last_messages must be at least 2"):
        SessionBudget(keep_last_messages=1)


# -------------------------------------------------------------------------------------- compaction
def test_history_under_budget_is_left_alone() -> None:
    messages = history(6)
    kept, dropped = compact_history(messages, max_tokens=estimate_tokens(messages), keep_last=4)
    assert kept is messages and dropped == 0


def test_compaction_keeps_task_and_latest_pairs_and_digests_the_rest() -> None:
    messages = history(6)
    task = list(messages[0].parts)
    kept, dropped = compact_history(messages, max_tokens=300, keep_last=4)

    assert dropped == 8 and len(kept) == 5
    assert list(kept[0].parts[:1]) == task  # the task prompt, untouched
    assert kept[1:] == messages[-4:]
    assert isinstance(kept[1], ModelResponse)
    assert_pairs_intact(kept)
    note = note_of(kept)
    assert note.count("- fetch_page(") == 4
    assert '- fetch_page({"page":1}) -> refused: ' in note and '- fetch_page({"page":0}) -> success: xxx' in note
    assert estimate_tokens(kept) < estimate_tokens(messages)
    assert list(messages[0].parts) == task and len(messages) == 13  # the input history is not mutated


def test_second_compaction_merges_the_notes() -> None:
    first, _ = compact_history(history(6), max_tokens=300, keep_last=4)
    grown = first + history(9)[13:]  # three more round trips (calls 6, 7, 8)
    second, dropped = compact_history(grown, max_tokens=300, keep_last=2)

    assert dropped == 8 and len(second) == 3
    note = note_of(second)
    assert [line.split("(")[1].split(")")[0] for line in note.splitlines()[1:]] == [f'{{"page":{i}}}' for i in range(8)]
    assert_pairs_intact(second)


def test_compaction_never_splits_a_call_from_its_return() -> None:
    messages = history(5)
    kept, _ = compact_history(messages, max_tokens=10, keep_last=3)  # an odd tail would start with a request
    assert isinstance(kept[1], ModelResponse) and len(kept) == 5
    assert_pairs_intact(kept)


# ----------------------------------------------------------------------------------------- sessions
def reader_agent(
    seen: list[list[ModelMessage]], span_label: str, budget: SessionBudget, *, record_content: bool = False
) -> RecursiveAgent[Deps, str]:
    """A session that reads 12 pages, one `fetch_page` call per request, then answers."""
    return RecursiveAgent(
        reader_model(12, seen),
        instructions="Read every page.",
        tools=[fetch_page],
        deps_type=Deps,
        output_type=str,
        span_label=span_label,
        budget=budget,
        record_content=record_content,
    )


def reader_model(pages: int, seen: list[list[ModelMessage]]) -> FunctionModel:
    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        seen.append(list(messages))
        step = len(seen) - 1
        if step < pages:
            return ModelResponse(parts=[ToolCallPart("fetch_page", {"page": step})])
        return ModelResponse(parts=[TextPart(f"read {pages} pages")])

    return FunctionModel(model)


def test_long_session_is_compacted_and_finishes(spans: TestExporter) -> None:
    seen: list[list[ModelMessage]] = []
    agent = reader_agent(seen, "rr", SessionBudget(request_limit=20, max_history_tokens=1_500, keep_last_messages=4))
    deps = Deps()
    result = asyncio.run(agent.run("Summarise the trace.", deps=deps, attributes={"ace.trace_uid": "t:1"}))

    assert result.completed and result.output == "read 12 pages" and deps.fetched == list(range(12))
    assert result.compactions >= 2 and result.messages_dropped >= 10
    assert max(len(m) for m in seen) <= 8  # the model never saw the whole history
    last_view = seen[-1]
    assert "- fetch_page(" in note_of(last_view) and "page 0" in note_of(last_view)
    assert_pairs_intact(last_view)
    assert estimate_tokens(last_view) < 1_500 + 2 * 600

    [session] = [s for s in spans.exported_spans_as_dict() if s["name"] == "rr.session"]
    attrs = session["attributes"]
    assert attrs["ace.trace_uid"] == "t:1" and attrs["ace.completed"] is True
    assert attrs["ace.compactions"] == result.compactions and attrs["ace.max_history_tokens"] == 1_500
    assert attrs["ace.requests"] == 13 and "ace.prompt" not in attrs


def test_request_budget_stops_the_session_without_raising(spans: TestExporter) -> None:
    seen: list[list[ModelMessage]] = []
    agent = reader_agent(seen, "sm", SessionBudget(request_limit=3), record_content=True)
    deps = Deps()
    result = asyncio.run(agent.run("Summarise the trace.", deps=deps))

    assert not result.completed and result.output is None
    assert result.stop_reason is not None and "request_limit of 3" in result.stop_reason
    assert deps.fetched == [0, 1, 2] and result.usage.requests == 3
    [session] = [s for s in spans.exported_spans_as_dict() if s["name"] == "sm.session"]
    assert session["attributes"]["ace.completed"] is False and session["attributes"]["ace.stop_reason"] == "budget"
    assert session["attributes"]["ace.prompt"] == "Summarise the trace."


def test_token_budget_is_enforced() -> None:
    seen: list[list[ModelMessage]] = []
    agent = reader_agent(seen, "rr", SessionBudget(total_tokens_limit=1_000))
    result = asyncio.run(agent.run("Summarise the trace.", deps=Deps()))
    assert not result.completed and result.stop_reason is not None and "total_tokens_limit" in result.stop_reason
    assert result.usage.total_tokens > 1_000 and result.usage.requests < 12


# ------------------------------------------------------------------------------------- repeated calls
def scripted_pages(pages: list[int], seen: list[list[ModelMessage]]) -> FunctionModel:
    """Calls `fetch_page` with each page of `pages` in turn (one call per request), then answers."""

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        seen.append(list(messages))
        step = len(seen) - 1
        if step < len(pages):
            return ModelResponse(parts=[ToolCallPart("fetch_page", {"page": pages[step]})])
        return ModelResponse(parts=[TextPart("done")])

    return FunctionModel(model)


def paging_agent(model: FunctionModel, budget: SessionBudget) -> RecursiveAgent[Deps, str]:
    return RecursiveAgent(
        model,
        instructions="Read pages.",
        tools=[fetch_page],
        deps_type=Deps,
        output_type=str,
        span_label="rr",
        budget=budget,
    )


def test_a_repeated_identical_call_is_refused_and_counted(spans: TestExporter) -> None:
    seen: list[list[ModelMessage]] = []
    agent = paging_agent(scripted_pages([0, 1, 0, 2], seen), SessionBudget())
    deps = Deps()
    result = asyncio.run(agent.run("Read pages 0 to 2.", deps=deps))

    assert result.completed and result.output == "done"
    assert deps.fetched == [0, 1, 2]  # the repeat of page 0 never ran
    assert result.repeated_calls == 1
    [refusal] = [
        p.model_response_str()
        for m in seen[3]
        for p in m.parts
        if isinstance(p, ToolReturnPart) and p.model_response_str().startswith("Refused")
    ]
    assert 'fetch_page({"page":0})' in refusal and "Do not repeat it" in refusal
    [session] = [s for s in spans.exported_spans_as_dict() if s["name"] == "rr.session"]
    assert session["attributes"]["ace.repeated_calls"] == 1 and session["attributes"]["ace.max_repeated_calls"] == 3


def test_a_model_that_keeps_repeating_is_stopped(spans: TestExporter) -> None:
    seen: list[list[ModelMessage]] = []
    agent = paging_agent(scripted_pages([5] * 19, seen), SessionBudget(max_repeated_calls=2))
    deps = Deps()
    result = asyncio.run(agent.run("Read page 5.", deps=deps))

    assert not result.completed and result.output is None
    assert result.stop_reason is not None and result.stop_reason.startswith("loop: 3 repeated identical tool calls")
    assert deps.fetched == [5] and result.repeated_calls == 3 and len(seen) == 4
    [session] = [s for s in spans.exported_spans_as_dict() if s["name"] == "rr.session"]
    assert session["attributes"]["ace.stop_reason"] == "loop" and session["attributes"]["ace.repeated_calls"] == 3


def test_the_same_tool_with_other_arguments_is_not_a_repeat() -> None:
    with pytest.raises(ValueError, match="max_repeated_calls must be 0 or more"):
        SessionBudget(max_repeated_calls=-1)
    seen: list[list[ModelMessage]] = []
    agent = paging_agent(scripted_pages([3, 4, 5], seen), SessionBudget(max_repeated_calls=0))
    result = asyncio.run(agent.run("Read pages 3 to 5.", deps=Deps()))
    assert result.completed and result.repeated_calls == 0


def test_a_call_that_was_not_applied_may_be_sent_again() -> None:
    attempts: list[str] = []

    def save(ctx: RunContext[Deps], text: str) -> dict[str, object]:
        """Save a text; the first attempt conflicts with another session."""
        attempts.append(text)
        return {"ok": len(attempts) > 1}

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if len(messages) < 6:
            return ModelResponse(parts=[ToolCallPart("save", {"text": "same"})])
        return ModelResponse(parts=[TextPart("saved")])

    agent = RecursiveAgent(
        FunctionModel(model), instructions="Save.", tools=[save], deps_type=Deps, output_type=str, span_label="sm"
    )
    result = asyncio.run(agent.run("Save it.", deps=Deps()))
    assert attempts == ["same", "same"]  # the retry after {"ok": False} ran; the third identical call did not
    assert result.completed and result.repeated_calls == 1
