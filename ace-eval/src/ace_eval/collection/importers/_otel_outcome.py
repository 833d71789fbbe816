"""What an agent run's spans say about how it went: the results of its last tool calls when the run-level messages
stop before them, and the judgement (feedback, reward) of the run.

A run whose tool raised ends right after the model asked for the call: pydantic-ai's run-level messages (and the
last model call) hold the call but not its result, which only the tool's span has (`gen_ai.tool.call.result`, or
the exception event when it raised). `answer_trailing_calls` puts those results back, so the trace shows the call
that failed and how. `outcome` reads the run's judgement: the `ace.feedback` / `ace.reward` attributes of the run,
a span in it or a span around it (the names `ace-eval serve` uses), else the errors of the run and its tool calls.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass

from ace_eval.collection.importers.otlp import JsonAttr, Span

__all__ = ["FEEDBACK_ATTRIBUTE", "REWARD_ATTRIBUTE", "RunOutcome", "answer_trailing_calls", "outcome", "span_error"]

FEEDBACK_ATTRIBUTE = "ace.feedback"
REWARD_ATTRIBUTE = "ace.reward"
_CALL_ID, _TOOL_NAME = "gen_ai.tool.call.id", "gen_ai.tool.name"
_RESULTS = ("gen_ai.tool.call.result", "tool_response")


@dataclass(frozen=True)
class RunOutcome:
    """The judgement of one agent run: feedback text and reward, each None when the spans do not say."""

    feedback: str | None
    reward: float | None


def span_error(span: Span) -> str | None:
    """`Type: message` of the exception a span recorded (else its status message), None when it did not fail."""
    if span.status_error is None:
        return None
    for name, attributes in span.events:
        if name == "exception":
            kind = str(attributes.get("exception.type") or "").rsplit(".", 1)[-1]
            message = str(attributes.get("exception.message") or "").strip()
            return f"{kind}: {message}" if kind and message else kind or message or "error"
    return span.status_error or "error"


def _text(value: JsonAttr) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _tool_result(span: Span) -> str:
    """What a tool span returned, or the error it ended in."""
    error = span_error(span)
    if error is not None:
        return f"error: {error}"
    for key in _RESULTS:
        if key in span.attributes:
            return _text(span.attributes[key])
    return "(no result recorded)"


def answer_trailing_calls(messages: list[dict[str, object]], below: list[Span]) -> list[dict[str, object]]:
    """`messages` with a tool message for each call of its last assistant message that has no result yet, taken
    from the call's tool span (the last one with that call id); calls without a span stay unanswered."""
    if not messages or messages[-1]["role"] != "assistant":
        return messages
    calls = messages[-1].get("tool_calls")
    if not isinstance(calls, list) or not calls:
        return messages
    spans = {
        str(s.attributes[_CALL_ID]): s for s in sorted(below, key=lambda s: s.start_ns) if _CALL_ID in s.attributes
    }
    answered = list(messages)
    for call in calls:
        span = spans.get(str(call.get("id"))) if isinstance(call, dict) else None
        if span is not None:
            answered.append({"role": "tool", "tool_call_id": str(call["id"]), "content": _tool_result(span)})
    return answered


def _reward(value: JsonAttr) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        return None
    try:
        reward = float(value)
    except ValueError:
        return None
    return reward if math.isfinite(reward) else None


def outcome(run: Span, below: list[Span], above: list[Span]) -> RunOutcome:
    """The run's feedback and reward: `ace.feedback` / `ace.reward` where set (the run's span first, then the
    latest span inside it, then the spans around it, nearest first: `logfire.span("ticket", **{"ace.reward": 1})`
    around the run); without `ace.feedback`, the errors of the run and of its tool calls."""
    spans = [run, *sorted(below, key=lambda s: -s.start_ns), *above]
    given = next((s.attributes[FEEDBACK_ATTRIBUTE] for s in spans if FEEDBACK_ATTRIBUTE in s.attributes), None)
    reward = next((_reward(s.attributes[REWARD_ATTRIBUTE]) for s in spans if REWARD_ATTRIBUTE in s.attributes), None)
    if given is not None and _text(given).strip():
        return RunOutcome(_text(given).strip(), reward)
    failures: dict[str, str] = {}
    for span in sorted(below, key=lambda s: s.start_ns):
        error = span_error(span)
        if error is not None and _TOOL_NAME in span.attributes:
            failures[str(span.attributes[_TOOL_NAME])] = error  # the last failure of each tool
    parts = []
    run_error = span_error(run)
    if run_error is not None:
        parts.append(f"The agent run ended in an error: {run_error}.")
    if failures:
        parts.append("Tool calls failed: " + "; ".join(f"{name} ({error})" for name, error in failures.items()) + ".")
    return RunOutcome(" ".join(parts) or None, reward)
