"""Reading a trace for reflectors: rendering, truncation, calls matched with results, failures, skills in context."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ace import Skillbook
from ace.reflector.trace_view import (
    TraceFormatError,
    TraceView,
    classify_tool_result,
    content_text,
    render_trace,
    skills_in_context,
    truncate,
)

DEMO = Path(__file__).resolve().parents[3] / "examples" / "demo-collection"


def demo_traces() -> list[dict[str, Any]]:
    from ace_eval.collection import read_collection

    _, traces = read_collection(DEMO)
    return [t.model_dump() for t in traces]


def failing_trace() -> dict[str, Any]:
    """A tau-bench-like airline trace whose flight change fails twice before the agent gives up."""
    call = {"id": "c1", "type": "function", "function": {"name": "get_user_details", "arguments": '{"user_id": "u1"}'}}
    change = {
        "id": "c2",
        "type": "function",
        "function": {
            "name": "update_reservation_flights",
            "arguments": json.dumps({"reservation_id": "WD5S1N", "cabin": "economy", "payment_id": "gift_card_1"}),
        },
    }
    retry = {**change, "id": "c3"}
    return {
        "trace_uid": "tau-bench-airline:task-7-trial-0",
        "source_system": "tau-bench-airline",
        "trace_id": "task-7-trial-0",
        "question": "Change reservation WD5S1N to the May 20 flight and pay with the gift card.",
        "messages": [
            {"role": "system", "content": "# Airline policy\n" + "Rule. " * 2_000},
            {"role": "user", "content": "Please move WD5S1N to May 20, pay with my gift card."},
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": "c1", "name": "get_user_details", "content": '{"user_id": "u1"}'},
            {"role": "assistant", "content": "Changing it now.", "tool_calls": [change]},
            {"role": "tool", "tool_call_id": "c2", "content": "Error: gift card balance is not enough"},
            {"role": "assistant", "content": None, "tool_calls": [retry]},
            {"role": "tool", "tool_call_id": "c3", "content": "Traceback (most recent call last):\nKeyError: 'HAT227'"},
            {"role": "tool", "tool_call_id": "zz", "content": "Error: stray result"},
            {"role": "assistant", "content": [{"type": "text", "text": "Sorry, "}, {"type": "text", "text": "no."}]},
        ],
        "reward": 0.0,
        "feedback": "reward 0: the reservation was not changed",
        "ground_truth": {"actions": [{"name": "update_reservation_flights", "kwargs": {"payment_id": "gift_card_1"}}]},
        "metadata": {},
        "skills_in_context": [],
    }


# ----------------------------------------------------------------------------------------- classify
@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("Error: flight HAT030 not available on date 2024-05-13", "error"),
        ("error: payment method not found", "error"),
        ('{"error": "reservation not found"}', "error"),
        ('{"success": false, "message": "declined"}', "error"),
        ("Traceback (most recent call last):\n  File ...\nKeyError: 'x'", "exception"),
        ("ValueError: invalid literal for int()", "exception"),
        ("The reservation cannot be cancelled: basic economy without insurance.", "refusal"),
        ("Changing the passenger count is not allowed by policy.", "refusal"),
        ("Permission denied for this user.", "refusal"),
    ],
)
def test_failed_tool_results_are_classified(text: str, kind: str) -> None:
    assert classify_tool_result(text) == kind


@pytest.mark.parametrize(
    "text",
    [
        '{"reservation_id": "K3P9QZ", "cabin": "basic_economy", "insurance": "no", "status": "cancelled"}',
        '[{"flight_number": "HAT114", "note": "refund not allowed"}]',  # a data list, whatever words it holds
        "Transfer successful",
        "The refund of $94 is on its way.",
        '{"error": null, "ok": true}',
    ],
)
def test_normal_tool_results_are_not_failures(text: str) -> None:
    assert classify_tool_result(text) is None


def test_a_result_flagged_by_the_source_is_an_error() -> None:
    assert classify_tool_result('{"status": "done"}', flagged=True) == "error"
    assert classify_tool_result("plain text", flagged=True) == "error"
    assert classify_tool_result("plain text", flagged=False) is None


# ------------------------------------------------------------------------------------------ truncate
def test_truncate_keeps_head_and_tail_with_a_marker() -> None:
    text = "".join(f"{i:04d}" for i in range(1_000))  # 4,000 characters
    cut = truncate(text, 300)
    assert cut.startswith(text[:200]) and cut.endswith(text[-100:])
    assert "[... 3,700 characters truncated ...]" in cut
    assert truncate("short", 300) == "short"
    with pytest.raises(ValueError, match="positive"):
        truncate(text, 0)


def test_content_text_joins_parts() -> None:
    assert content_text([{"type": "text", "text": "a"}, {"type": "image_url", "image_url": {}}]) == "a\n[image_url]"
    assert content_text(None) == "" and content_text("x") == "x"


# ------------------------------------------------------------------------------------------ the view
def test_calls_are_matched_with_their_results() -> None:
    view = TraceView.from_trace(failing_trace())
    assert [(c.index, c.name, c.message_index, c.result_index) for c in view.tool_calls] == [
        (0, "get_user_details", 2, 3),
        (1, "update_reservation_flights", 4, 5),
        (2, "update_reservation_flights", 6, 7),
    ]
    assert [(c.call_id, c.error_kind) for c in view.errors] == [("c2", "error"), ("c3", "exception")]
    assert view.orphan_results == (8,) and view.orphan_errors == ((8, "error"),)
    assert view.tool_names() == {"update_reservation_flights": 2, "get_user_details": 1}
    assert view.message_line(5, 30) == "[5] tool update_reservation_flights [ERROR]: Error: gift card balance is..."
    assert view.message_line(4, 200).startswith("[4] assistant: Changing it now. -> update_reservation_flights(")
    assert "[7] tool result of update_reservation_flights (call c3) [EXCEPTION]:" in view.message_text(7)
    assert view.message_text(9) == "[9] assistant:\nSorry, \nno."


def test_a_reused_call_id_answers_the_oldest_open_call() -> None:
    # tau-bench's GPT-4o trajectories reuse call ids; each result belongs to the call just before it.
    def call(name: str) -> dict[str, Any]:
        return {"id": "same", "type": "function", "function": {"name": name, "arguments": "{}"}}

    trace = {
        "question": "q",
        "messages": [
            {"role": "assistant", "content": None, "tool_calls": [call("book_reservation")]},
            {"role": "tool", "tool_call_id": "same", "content": "Error: payment amount does not add up"},
            {"role": "assistant", "content": None, "tool_calls": [call("think")]},
            {"role": "tool", "tool_call_id": "same", "content": ""},
            {"role": "tool", "tool_call_id": "same", "content": "late duplicate"},
        ],
    }
    view = TraceView.from_trace(trace)
    assert [(c.name, c.result_index, c.error_kind) for c in view.tool_calls] == [
        ("book_reservation", 1, "error"),
        ("think", 3, None),
    ]
    assert view.orphan_results == (4,)


def test_tau2_flags_mark_errors() -> None:
    trace = failing_trace()
    trace["metadata"] = {"tool_errors": ["c1"]}
    assert [c.call_id for c in TraceView.from_trace(trace).errors] == ["c1", "c2", "c3"]


def test_render_trace_shows_everything_a_reflector_needs() -> None:
    text = render_trace(failing_trace(), max_tool_result_chars=1_000, max_system_chars=500)
    assert text.startswith("<task>\nChange reservation WD5S1N to the May 20 flight")
    assert '<conversation messages="10" tool_calls="3" failed_tool_calls="2">' in text
    assert '  -> call update_reservation_flights({"reservation_id": "WD5S1N"' in text
    assert "[5] tool result of update_reservation_flights (call c2) [ERROR]:\nError: gift card balance" in text
    assert "(message [8] answers no tool call of this trace)" in text
    assert "characters truncated ...]" in text and len(text) < 4_000  # the 12,000-character policy was cut
    assert "<outcome>\nreward: 0.0\nfeedback: reward 0: the reservation was not changed\n</outcome>" in text
    assert '<ground_truth>\n{\n "actions": [' in text


def test_huge_tool_results_are_truncated_with_a_marker() -> None:
    trace = failing_trace()
    trace["messages"][3]["content"] = json.dumps({"flights": [{"n": f"HAT{i:03d}"} for i in range(2_000)]})
    text = render_trace(trace, max_tool_result_chars=600, max_system_chars=500)
    assert "HAT000" in text and "HAT1999" in text  # head and tail kept
    assert "characters truncated ...]" in text and len(text) < 6_000


def test_a_trace_without_judgement_or_ground_truth_says_so() -> None:
    trace = {**failing_trace(), "reward": None, "feedback": None, "ground_truth": None}
    text = render_trace(trace)
    assert "unjudged: the trace has no reward and no feedback" in text and "<ground_truth>" not in text


@pytest.mark.parametrize(
    ("trace", "message"),
    [
        ({"question": "q"}, "no 'messages' list"),
        ({"messages": "hello"}, "no 'messages' list"),
        ({"messages": [{"role": "user", "content": "x"}, "oops"]}, r"messages\[1\] is not a chat message"),
    ],
)
def test_unreadable_traces_are_refused_with_the_fix(trace: dict[str, Any], message: str) -> None:
    with pytest.raises(TraceFormatError, match=message):
        TraceView.from_trace(trace)


def test_demo_collection_renders() -> None:
    traces = demo_traces()
    assert len(traces) == 10
    for trace in traces:
        text = render_trace(trace)
        view = TraceView.from_trace(trace)
        assert trace["question"] in text and f'messages="{len(trace["messages"])}"' in text
        assert all(c.result_index is not None for c in view.tool_calls)


def test_real_tau_bench_errors_are_found(airline_data: Path) -> None:
    from ace_eval.collection.importers.tau_bench import import_tau_bench

    traces = [t.model_dump() for t in import_tau_bench(airline_data / "trajectories-gpt-4o-tasks-0-29.json").traces]
    expected = sum(
        1 for t in traces for m in t["messages"] if m["role"] == "tool" and str(m["content"]).startswith("Error")
    )
    found = [c for t in traces for c in TraceView.from_trace(t).errors]
    assert expected > 50
    assert sum(c.error_kind == "error" for c in found) == expected
    assert all(c.result and c.result.startswith("Error") for c in found if c.error_kind == "error")


# ---------------------------------------------------------------------------------- skills in context
def test_skills_in_context_are_looked_up() -> None:
    book = Skillbook()
    kept = book.add_skill("context", "Gift-card payments in tau-airline flight changes.", ["airline"], "Check balance.")
    gone = book.add_skill("harness", "Tool server timeouts.", ["tau_bench"])
    book.remove_skill(gone.id, "fixed upstream")
    trace = {**failing_trace(), "skills_in_context": [kept.id, gone.id, "context-00042", kept.id]}
    found = skills_in_context(trace, book)
    assert [s.id for s in found.skills] == [kept.id] and found.ids == {kept.id}
    assert found.missing == (gone.id, "context-00042")
    assert skills_in_context({**trace, "skills_in_context": []}, book).ids == frozenset()
    assert skills_in_context({k: v for k, v in trace.items() if k != "skills_in_context"}, book).skills == ()
