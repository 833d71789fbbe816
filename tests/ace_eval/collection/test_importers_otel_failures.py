"""Agent runs that failed keep what failed: real pydantic-ai runs (FunctionModel, Logfire instrumentation, spans
as OTLP JSON lines) that error in a tool, in the model, and by a validation retry are imported with the call that
failed, its error as the tool's result, and the exception as feedback.

On an errored run pydantic-ai records only the prompt in the run's `pydantic_ai.all_messages`; the model call's
span holds the tool call and the tool's span holds the error.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest
from _otel_agent import logfire_to_file, record_runs, support_agent
from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelResponse, RetryPromptPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from ace_eval.collection.importers import import_otel
from ace_eval.collection.importers.otlp import read_otlp_spans

SYSTEM = {"role": "system", "content": "You are a support agent."}


def _call(call_id: str, arguments: str) -> dict[str, object]:
    return {"id": call_id, "type": "function", "function": {"name": "issue_refund", "arguments": arguments}}


def test_a_tool_that_raised_keeps_its_call_and_error(tmp_path: Path) -> None:
    path = tmp_path / "spans.jsonl"
    [raised] = record_runs(path, support_agent(), ["Refund order A999"])
    assert isinstance(raised, ValueError)
    (trace,) = import_otel(path).traces
    assert trace.messages == [
        SYSTEM,
        {"role": "user", "content": "Refund order A999"},
        {"role": "assistant", "content": None, "tool_calls": [_call("call-A999", '{"order_id": "A999"}')]},
        {"role": "tool", "tool_call_id": "call-A999", "content": "error: ValueError: no order A999"},
    ]
    assert trace.feedback == (
        "The agent run ended in an error: ValueError: no order A999. "
        "Tool calls failed: issue_refund (ValueError: no order A999)."
    )
    assert trace.num_tool_calls == 1 and trace.reward is None


def test_a_model_that_raised_after_a_tool_call_keeps_the_conversation(tmp_path: Path) -> None:
    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if isinstance(messages[-1].parts[-1], ToolReturnPart):
            raise RuntimeError("model backend returned 503")
        return ModelResponse(parts=[ToolCallPart("issue_refund", {"order_id": "A100"}, tool_call_id="c1")])

    path = tmp_path / "spans.jsonl"
    [raised] = record_runs(path, support_agent(FunctionModel(model)), ["Refund order A100"])
    assert isinstance(raised, RuntimeError)
    (trace,) = import_otel(path).traces
    assert [m["role"] for m in trace.messages] == ["system", "user", "assistant", "tool"]
    assert trace.messages[-1] == {"role": "tool", "tool_call_id": "c1", "content": "refunded A100"}
    assert trace.feedback == "The agent run ended in an error: RuntimeError: model backend returned 503."


def test_a_validation_retry_that_ran_out_keeps_every_attempt_and_the_reason(tmp_path: Path) -> None:
    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        attempt = sum(isinstance(p, RetryPromptPart) for m in messages for p in m.parts)
        return ModelResponse(parts=[ToolCallPart("issue_refund", {"order": 7}, tool_call_id=f"c{attempt}")])

    path = tmp_path / "spans.jsonl"
    [raised] = record_runs(path, support_agent(FunctionModel(model), retries=1), ["Refund my order"])
    assert raised is not None and "exceeded max retries" in str(raised)
    (trace,) = import_otel(path).traces
    calls = [m for m in trace.messages if m["role"] == "assistant"]
    results = [m for m in trace.messages if m["role"] == "tool"]
    assert len(calls) == 2 and len(results) == 2  # the first attempt, its retry prompt, the last attempt, its error
    assert trace.messages[-1]["role"] == "tool" and "order_id" in str(trace.messages[-1]["content"])
    assert str(trace.messages[-1]["content"]).startswith("error: ValidationError: ")
    assert trace.feedback is not None
    assert trace.feedback.startswith("The agent run ended in an error: UnexpectedModelBehavior: Tool 'issue_refund'")
    assert "Tool calls failed: issue_refund (ValidationError: " in trace.feedback


def test_the_same_failed_run_as_logfire_query_rows_keeps_the_failing_call(tmp_path: Path) -> None:
    """The run fetched back from Logfire with its query API (`{"columns": [...], "rows": [...]}` of the records
    table, exceptions in `exception_type` / `exception_message`) imports like the OTLP file."""
    path = tmp_path / "spans.jsonl"
    record_runs(path, support_agent(), ["Refund order A999"])
    rows = []
    for span in read_otlp_spans(path):
        error = dict(span.events[0][1]) if span.events else {}
        rows.append(
            {
                "trace_id": span.trace_id,
                "span_id": span.span_id,
                "parent_span_id": span.parent_id,
                "span_name": span.name,
                "start_timestamp": datetime.fromtimestamp(span.start_ns / 1e9, UTC).isoformat(),
                "attributes": span.attributes,
                "otel_status_code": "UNSET" if span.status_error is None else "ERROR",
                "otel_status_message": span.status_error,
                "exception_type": error.get("exception.type"),
                "exception_message": error.get("exception.message"),
            }
        )
    records = tmp_path / "records.json"
    records.write_text(json.dumps({"columns": [], "rows": rows}))
    (trace,) = import_otel(records).traces
    assert trace.messages[-1] == {
        "role": "tool",
        "tool_call_id": "call-A999",
        "content": "error: ValueError: no order A999",
    }
    assert trace.feedback is not None and "issue_refund (ValueError: no order A999)" in trace.feedback


def test_a_nested_agent_runs_conversation_does_not_stand_for_its_callers(tmp_path: Path) -> None:
    """The longest source wins, but only among the run's own spans: a sub-agent's longer conversation, inside a
    tool of the calling agent that then fails, is not taken for the caller's."""
    specialist = support_agent()

    def triage_model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        return ModelResponse(parts=[ToolCallPart("ask_specialist", {"question": "Refund A100"}, tool_call_id="t1")])

    triage = Agent(FunctionModel(triage_model), instructions="You triage.", name="triage")

    @triage.tool_plain
    async def ask_specialist(question: str) -> str:
        answer = (await specialist.run(question)).output  # user, call, result, answer: 4 messages
        raise RuntimeError(f"could not route: {answer}")

    path = tmp_path / "spans.jsonl"
    instance = logfire_to_file(path)
    instance.instrument_pydantic_ai(triage)
    instance.instrument_pydantic_ai(specialist)
    with pytest.raises(RuntimeError, match="could not route"):
        triage.run_sync("My order A100 needs a refund")
    instance.force_flush()
    (trace,) = import_otel(path).traces  # one run: the specialist's is inside it
    assert [m["role"] for m in trace.messages] == ["system", "user", "assistant", "tool"]
    assert trace.messages[0]["content"] == "You triage." and trace.question == "My order A100 needs a refund"
    assert str(trace.messages[-1]["content"]).startswith("error: RuntimeError: could not route: Done: refunded A100")
