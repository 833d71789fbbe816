"""The grounding check of benchmarks/demo_quality.py: a skill names what differed in a trace it came from."""

from __future__ import annotations

import json
from typing import Any

from ace import InsightSource, Skillbook
from ace_eval.collection.grading import diff_against_gold
from ace_eval.e2e.grading.grounding import diff_terms, grounded_terms, reflection_grounding, summarise_grounding

GOLD = {
    "name": "update_reservation_flights",
    "kwargs": {"reservation_id": "PX4J8E", "cabin": "business", "payment_id": "gift_card_2290446", "amount": 15.0},
}


def messages(arguments: dict[str, Any]) -> list[dict[str, Any]]:
    call = {"id": "c", "type": "function", "function": {"name": GOLD["name"], "arguments": json.dumps(arguments)}}
    return [
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "c", "content": "{}"},
    ]


def source(trace_id: str) -> InsightSource:
    return InsightSource(trace_uid=f"demo:{trace_id}", source_system="demo", trace_id=trace_id, epoch=1)


def test_terms_are_the_differing_tool_argument_names_and_values() -> None:
    wrong = diff_against_gold(messages({**GOLD["kwargs"], "cabin": "economy", "amount": 16.0}), [GOLD])
    assert diff_terms(wrong) == {"update reservation flights", "cabin", "economy", "business", "amount"}
    missing = diff_against_gold([], [{"name": "cancel_reservation", "kwargs": {"reservation_id": "K3P9QZ"}}])
    assert diff_terms(missing) == {"cancel reservation"}


def test_summary_counts_grounded_skills_among_those_learned_from_a_difference() -> None:
    failed = diff_against_gold(messages({**GOLD["kwargs"], "cabin": "economy"}), [GOLD], reward=0.0)
    succeeded = diff_against_gold(messages(GOLD["kwargs"]), [GOLD], reward=1.0)
    graders = {"demo:failed": failed, "demo:ok": succeeded, "demo:unjudged": None}
    book = Skillbook()
    by_keyword = book.add_skill(
        "context",
        "Upgrades go to the wrong class.",
        ["Update Reservation Flights"],
        "Check it.",
        insight_source=source("failed"),
    )
    by_value = book.add_skill(
        "context",
        "The agent booked Economy instead of what was asked.",
        ["airline"],
        "Read the request again.",
        insight_source=source("failed"),
    )
    degenerate = book.add_skill("context", "15.0", ["15.0"], "15.0", insight_source=source("failed"))
    book.add_skill("context", "Cabin changes need a yes.", ["cabin"], "Ask first.", insight_source=source("ok"))
    book.add_skill("context", "Cabin rules.", ["cabin"], "Ask.", insight_source=source("unjudged"))
    removed = book.add_skill("context", "cabin economy", ["cabin"], "x", insight_source=source("failed"))
    book.remove_skill(removed.id, "test")

    assert grounded_terms(by_keyword, diff_terms(failed)) == ["update reservation flights"]
    assert grounded_terms(by_value, diff_terms(failed)) == ["economy"]
    assert grounded_terms(degenerate, diff_terms(failed)) == []
    summary = summarise_grounding(book.skills(include_inactive=True), graders)
    assert (summary.skills, summary.with_diff, summary.grounded) == (5, 3, 2)
    assert summary.share == 2 / 3
    assert dict(summary.examples) == {by_keyword.id: ("update reservation flights",), by_value.id: ("economy",)}
    assert summarise_grounding([], graders).share is None


def test_whole_words_only() -> None:
    report = diff_against_gold([], [{"name": "send_certificate", "kwargs": {}}])
    book = Skillbook()
    partial = book.add_skill("context", "send_certificates twice", ["x"], "no", insight_source=source("a"))
    assert grounded_terms(partial, diff_terms(report)) == []


def test_reflections_are_checked_against_their_own_trace() -> None:
    failed = diff_against_gold(messages({**GOLD["kwargs"], "cabin": "economy"}), [GOLD], reward=0.0)
    graders = {"demo:failed": failed, "demo:ok": diff_against_gold(messages(GOLD["kwargs"]), [GOLD])}
    reflections = [
        ("demo:failed", {"key_insight": "Confirm the cabin before update_reservation_flights."}),
        ("demo:failed", {"key_insight": "The agent never made it"}),
        ("demo:failed", None),
        ("demo:ok", {"key_insight": "cabin"}),  # no difference: not counted
    ]
    assert reflection_grounding(reflections, graders) == (3, 1)
