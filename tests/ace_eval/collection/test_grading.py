"""The grader's comparison with the gold: which action is missing, extra or different, with which argument and
both values, and which required output was never said; on invented runs and on the real tau-bench runs."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from ace_eval.collection import Trace, read_collection, write_collection
from ace_eval.collection.grading import GraderReport, diff_against_gold, is_write_tool
from ace_eval.collection.importers.tau_bench import import_tau_bench

TRAJECTORIES = "trajectories-gpt-4o-tasks-0-29.json"


def run(*calls: tuple[str, dict[str, Any], str], reply: str = "Done.") -> list[dict[str, Any]]:
    """A conversation in which the agent makes `calls` (name, arguments, result) and then replies."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": "Please help."}]
    for i, (name, arguments, result) in enumerate(calls):
        call = {"id": f"c{i}", "type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}
        messages += [
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": f"c{i}", "name": name, "content": result},
        ]
    return [*messages, {"role": "assistant", "content": reply}]


UPGRADE = {
    "name": "update_reservation_flights",
    "kwargs": {
        "reservation_id": "PX4J8E",
        "cabin": "business",
        "flights": [{"flight_number": "HAT271", "date": "2024-05-24"}],
        "payment_id": "gift_card_1",
    },
}


def test_a_wrong_argument_is_named_with_both_values() -> None:
    given = {**UPGRADE["kwargs"], "cabin": "economy"}
    report = diff_against_gold(run(("update_reservation_flights", given, "{}")), [UPGRADE], reward=0.0)
    [diff] = report.actions
    assert (diff.kind, diff.tool, diff.write, diff.message_index, diff.gold_index) == (
        "different",
        "update_reservation_flights",
        True,
        1,
        0,
    )
    assert [(a.path, a.given, a.gold) for a in diff.arguments] == [("cabin", "economy", "business")]
    assert 'update_reservation_flights.cabin: gave "economy", gold "business"' in report.text
    assert report.text.startswith("reward 0: 0 of 1 gold actions made exactly; 1 difference(s) from the gold")


def test_nested_differences_have_paths_and_numbers_compare_by_value() -> None:
    given = {
        **UPGRADE["kwargs"],
        "flights": [{"flight_number": "HAT272", "date": "2024-05-24", "origin": "JFK"}],  # origin: ignored
        "payment_id": "gift_card_1",
    }
    report = diff_against_gold(run(("update_reservation_flights", given, "{}")), [UPGRADE])
    assert [(a.path, a.given, a.gold) for a in report.actions[0].arguments] == [
        ("flights[0].flight_number", "HAT272", "HAT271")
    ]
    bags = {"name": "update_reservation_baggages", "kwargs": {"reservation_id": "X", "total_baggages": 2}}
    same = diff_against_gold(
        run(("update_reservation_baggages", {"reservation_id": "X", "total_baggages": 2.0}, "{}")), [bags]
    )
    assert same.actions == [] and same.matched_actions == 1
    extra_arg = diff_against_gold(
        run(("update_reservation_baggages", {"reservation_id": "X", "total_baggages": 2, "note": "x"}, "{}")), [bags]
    )
    assert [(a.path, a.absent) for a in extra_arg.actions[0].arguments] == [("note", "gold")]
    assert 'update_reservation_baggages.note: gave "x", gold (not in the gold)' in extra_arg.text


def test_a_missing_action_and_its_failed_attempt() -> None:
    cancel = {"name": "cancel_reservation", "kwargs": {"reservation_id": "Z7GOZK"}}
    never = diff_against_gold(run(("get_reservation_details", {"reservation_id": "Z7GOZK"}, "{}")), [cancel])
    assert [(d.kind, d.tool, d.given, d.error) for d in never.actions] == [
        ("missing", "cancel_reservation", None, None)
    ]
    assert '- missing write cancel_reservation(reservation_id="Z7GOZK"): the agent never made it' in never.text
    attempt = run(("cancel_reservation", {"reservation_id": "Z7G0ZK"}, "Error: reservation not found"))
    tried = diff_against_gold(attempt, [cancel])
    [diff] = tried.actions
    assert (diff.kind, diff.message_index, diff.error) == ("missing", 1, "Error: reservation not found")
    assert "its attempt (message [1]) failed with 'Error: reservation not found'" in tried.text
    assert 'cancel_reservation.reservation_id: gave "Z7G0ZK", gold "Z7GOZK"' in tried.text


def test_extra_writes_are_listed_extra_reads_are_not_and_a_retry_matches_exactly() -> None:
    wrong = {**UPGRADE["kwargs"], "payment_id": "credit_card_9"}
    report = diff_against_gold(
        run(
            ("get_user_details", {"user_id": "u"}, "{}"),
            ("update_reservation_flights", wrong, "{}"),
            ("update_reservation_flights", UPGRADE["kwargs"], "{}"),
            ("send_certificate", {"user_id": "u", "amount": 50}, "Certificate added"),
        ),
        [UPGRADE],
        database="differs",
    )
    assert report.matched_actions == 1
    assert [(d.kind, d.tool, d.message_index) for d in report.actions] == [
        ("extra", "update_reservation_flights", 3),
        ("extra", "send_certificate", 7),
    ]
    assert (
        'extra write send_certificate(user_id="u", amount=50) (message [7]): the gold actions do not make'
        in report.text
    )
    assert report.text.endswith("- final database: differs from the one the gold actions produce")
    assert [
        is_write_tool(n)
        for n in ("get_user_details", "search_direct_flight", "think", "transfer_to_human_agents", "book_reservation")
    ] == [False, False, False, False, True]


def test_a_missing_output_and_a_different_read() -> None:
    search = {"name": "search_direct_flight", "kwargs": {"origin": "JFK", "destination": "SEA", "date": "2024-05-20"}}
    report = diff_against_gold(
        run(("search_direct_flight", {**search["kwargs"], "date": "2024-05-21"}, "[]")),
        [search],
        outputs={"327": True, "1786": False},
    )
    assert report.missing_outputs == ["1786"]
    assert '- required output(s) never said to the user: "1786" (each must appear in a reply)' in report.text
    assert (
        'different call search_direct_flight (message [1]): search_direct_flight.date: gave "2024-05-21", '
        'gold "2024-05-20"' in report.text
    )
    assert report.actions[0].write is False


def test_nothing_to_do_and_nothing_done() -> None:
    report = diff_against_gold(run(), [], reward=1.0, database="matches")
    assert report.text == (
        "reward 1: the gold makes no tool call and neither did the agent.\n"
        "- final database: equals the one the gold actions produce"
    )


# ------------------------------------------------------------------------------------------ real runs
@pytest.fixture(scope="module")
def real_traces(airline_data: Path) -> dict[str, Trace]:
    path = airline_data / TRAJECTORIES  # shipped in tests/data/: never missing
    return {t.trace_id: t for t in import_tau_bench(path).traces}


def grader(traces: dict[str, Trace], trace_id: str) -> GraderReport:
    report = traces[trace_id].grader
    assert report is not None
    return report


def test_real_wrong_argument(real_traces: dict[str, Trace]) -> None:
    report = grader(real_traces, "task-3-trial-0")
    assert report.database == "differs"
    assert 'update_reservation_flights.cabin: gave "business", gold "economy"' in report.text
    assert 'update_reservation_flights.payment_id: gave "credit_card_9879898", gold "gift_card_6276644"' in report.text
    assert "missing write update_reservation_baggages(" in report.text


def test_real_missing_action(real_traces: dict[str, Trace]) -> None:
    report = grader(real_traces, "task-1-trial-0")
    assert [(d.kind, d.tool, d.gold) for d in report.actions] == [
        ("missing", "cancel_reservation", {"reservation_id": "Z7GOZK"})
    ]


def test_real_extra_action(real_traces: dict[str, Trace]) -> None:
    report = grader(real_traces, "task-15-trial-0")
    assert ("extra", "cancel_reservation", {"reservation_id": "GV1N64"}) in [
        (d.kind, d.tool, d.given) for d in report.actions
    ]
    assert 'extra write cancel_reservation(reservation_id="GV1N64") (message [26])' in report.text


def test_real_missing_output_and_failed_attempt(real_traces: dict[str, Trace]) -> None:
    report = grader(real_traces, "task-8-trial-1")
    assert report.outputs == {"327": True, "1000": True, "1786": False}
    assert '- required output(s) never said to the user: "1786"' in report.text
    assert report.database == "unknown"  # tau-bench recorded only the outputs check for this task
    [missing] = report.actions
    assert missing.error == "Error: payment amount does not add up, total price is 4875, but paid 1625"


def test_every_real_run_has_a_consistent_comparison(real_traces: dict[str, Trace], tmp_path: Path) -> None:
    reports = {uid: grader(real_traces, uid) for uid in real_traces}
    assert len(reports) == 120
    assert Counter((r.reward, r.database) for r in reports.values()) == {
        (0.0, "differs"): 73,
        (1.0, "matches"): 36,
        (0.0, "unknown"): 11,
    }
    # the grader's database verdict and the write differences agree on every run
    for uid, report in reports.items():
        writes = [d for d in report.actions if d.write]
        assert bool(writes) == (report.database == "differs") or report.database == "unknown", (uid, report.text)
    # the comparison survives the collection file
    write_collection(tmp_path / "c", real_traces.values(), source_system="tau-bench-airline")
    _, read_back = read_collection(tmp_path / "c")
    again = {t.trace_id: t.grader for t in read_back}
    assert again == reports
