"""Optimistic concurrency of skill-manager sessions: a stale edit or a racing add is not applied, and the model
is shown what changed (a `ConflictResult`, not a retry).

"Another session" is simulated inside the scripted model: between two of this session's calls, a step edits the
shared skillbook with another trace's provenance, exactly as a concurrent session's tool call would.
"""

from __future__ import annotations

from typing import Any

from _ace_scripts import applied, conflict_skills
from pydantic_ai.messages import ModelMessage, ModelRequest, ToolReturnPart
from test_skill_manager import (
    AIRLINE_SOURCE,
    RETAIL_SOURCE,
    Script,
    Step,
    call,
    manager,
    say,
    seeded_book,
)

from ace import InsightSource, Skillbook
from ace.embeddings.test import TestEmbedder
from ace.reflector.reflection import Reflection

OTHER = InsightSource(trace_uid="tau-bench-airline:99", source_system="tau-bench-airline", trace_id="99", epoch=1)
REFLECTION = Reflection(
    error_identification="Cancelled the reservation before the user said yes.",
    root_cause_analysis="The agent treated a question as a confirmation.",
    correct_approach="List the reservation details and wait for an explicit yes.",
    key_insight="Confirm every write action explicitly.",
)
RETAIL_ID = "context-00001"


def then(effect: Any, step: Step) -> Step:
    """Run `effect()` (another session's edit), then answer with `step`."""

    def run(messages: list[ModelMessage]) -> Any:
        effect()
        return step(messages)

    return run


def last_result(messages: list[ModelMessage]) -> ToolReturnPart:
    last = messages[-1]
    assert isinstance(last, ModelRequest)
    return next(p for p in last.parts if isinstance(p, ToolReturnPart))


WIDER = "Before any write action (retail orders, airline reservations), list the details and wait for a 'yes'."


def test_update_of_a_skill_another_session_rewrote_is_refused_with_its_current_text() -> None:
    book = seeded_book()
    other_issue = book.require_skill(RETAIL_ID).issue + " Also applies to exchanges."

    def other_session() -> None:
        book.update_skill(RETAIL_ID, other_issue, insight_source=OTHER.derive("UPDATE"))

    def merged(messages: list[ModelMessage]) -> Any:
        part = last_result(messages)
        assert not applied(part)
        [current] = conflict_skills(part)
        assert current["id"] == RETAIL_ID and current["issue"] == other_issue
        return call("update_skill", skill_id=RETAIL_ID, issue=current["issue"] + " " + WIDER)(messages)

    script = Script(
        call("search_skills", query="confirm before a write action"),
        then(other_session, call("update_skill", skill_id=RETAIL_ID, issue=WIDER)),
        merged,
        say("Widened the confirmation skill."),
    )
    result = manager(script).update_skills([REFLECTION], book, source=AIRLINE_SOURCE)

    skill = book.require_skill(RETAIL_ID)
    assert skill.issue == other_issue + " " + WIDER  # both widenings survive
    assert result.completed and result.ids("UPDATE") == [RETAIL_ID]
    assert [(r.tool, "another session rewrote" in r.reason) for r in result.refusals] == [("update_skill", True)]
    assert [o.trace_uid for o in skill.occurrences] == [
        RETAIL_SOURCE.trace_uid,
        OTHER.trace_uid,
        AIRLINE_SOURCE.trace_uid,
    ]


def test_update_goes_through_when_only_counters_changed_or_nothing_did() -> None:
    book = seeded_book()

    def other_session() -> None:
        book.tag_skill(RETAIL_ID, 1, insight_source=OTHER.derive("TAG"))  # tags commute with a rewrite

    script = Script(
        call("read_skill", skill_id=RETAIL_ID),
        then(other_session, call("update_skill", skill_id=RETAIL_ID, issue=WIDER)),
        call("update_skill", skill_id=RETAIL_ID, issue=WIDER + " Holds for every airline."),  # its own edit: fresh
        say("done"),
    )
    result = manager(script).update_skills([REFLECTION], book, source=AIRLINE_SOURCE)

    assert result.refusals == ()
    skill = book.require_skill(RETAIL_ID)
    assert skill.issue == WIDER + " Holds for every airline." and skill.helpful_count == 1


def test_remove_of_a_skill_another_session_rewrote_is_refused() -> None:
    book = seeded_book()

    def other_session() -> None:
        book.update_skill(RETAIL_ID, WIDER, insight_source=OTHER.derive("UPDATE"))

    script = Script(
        call("search_skills", query="confirm before a write action"),
        then(other_session, call("remove_skill", skill_id=RETAIL_ID, reason="Too narrow.")),
        say("It was widened meanwhile; nothing to remove."),
    )
    result = manager(script).update_skills([REFLECTION], book, source=AIRLINE_SOURCE)

    assert book.require_skill(RETAIL_ID).active
    assert [r.tool for r in result.refusals] == ["remove_skill"]


ADD = {
    "section": "context",
    "issue": "In airline reservations the agent cancelled before the user confirmed the cancellation.",
    "keywords": ["airline", "user_confirmation"],
    "insight": "Before cancel_reservation, list the reservation and wait for an explicit yes.",
}


def test_add_racing_a_similar_add_of_another_session_is_refused_and_shown_that_skill() -> None:
    book = seeded_book()
    added: list[str] = []

    def other_session() -> None:
        skill = book.add_skill(
            "context",
            "In airline reservations the agent cancelled a reservation without an explicit confirmation.",
            ["airline", "user_confirmation"],
            "List the reservation and wait for a yes before cancel_reservation.",
            insight_source=OTHER.derive("ADD"),
        )
        added.append(skill.id)

    def widen(messages: list[ModelMessage]) -> Any:
        part = last_result(messages)
        assert not applied(part) and "another session added or rewrote" in part.model_response_str()
        shown = conflict_skills(part)
        assert [s["id"] for s in shown] == added
        return call("update_skill", skill_id=added[0], issue=shown[0]["issue"] + " Seen again in trace 23.")(messages)

    script = Script(
        call("search_skills", query="cancel reservation without confirmation", keywords=["airline"]),
        then(other_session, call("add_skill", **ADD)),
        widen,
        say("Widened the skill another session had just added."),
    )
    result = manager(script).update_skills([REFLECTION], book, source=AIRLINE_SOURCE)

    assert result.ids("ADD") == [] and result.ids("UPDATE") == added
    assert len(book.skills()) == 3  # no near-duplicate
    assert book.require_skill(added[0]).issue.endswith("Seen again in trace 23.")


def test_add_goes_through_when_the_concurrent_skill_is_unrelated_or_was_already_seen() -> None:
    book = seeded_book()
    for i in range(8):  # skills close to the new one, so an unrelated skill ranks below them
        book.add_skill(
            "context",
            f"Airline reservation step {i}: the agent must confirm before cancelling or changing reservations.",
            ["airline", "user_confirmation"],
            f"Confirm airline reservation change {i} explicitly.",
            insight_source=RETAIL_SOURCE.derive("ADD"),
        )

    def unrelated() -> None:
        book.add_skill("harness", "Disk full on the CI runner.", ["ci_runner"], insight_source=OTHER.derive("ADD"))

    script = Script(
        call("search_skills", query="cancel reservation without confirmation"),
        then(unrelated, call("add_skill", **ADD)),
        say("Added."),
    )
    result = manager(script, embedder=TestEmbedder()).update_skills([REFLECTION], book, source=AIRLINE_SOURCE)
    assert result.refusals == () and len(result.ids("ADD")) == 1

    # Seen by a search after the other session's add: no refusal either.
    def similar() -> None:
        book.add_skill("context", ADD["issue"] + " (b)", ADD["keywords"], ADD["insight"], insight_source=OTHER)

    script = Script(
        then(similar, call("search_skills", query="cancel reservation without confirmation")),
        call("add_skill", **{**ADD, "issue": "A third wording of the airline confirmation lesson."}),
        say("Added."),
    )
    second = manager(script).update_skills([REFLECTION], book, source=AIRLINE_SOURCE)
    assert second.refusals == () and len(second.ids("ADD")) == 1


def test_alone_a_session_never_meets_a_refusal_of_its_own_edits() -> None:
    book = Skillbook()
    script = Script(
        call("search_skills", query="confirmation"),
        call("add_skill", **ADD),
        call("update_skill", skill_id="context-00001", issue=ADD["issue"] + " Also for flight changes."),
        call("add_skill", **{**ADD, "issue": ADD["issue"] + " Second, narrower lesson."}),
        say("done"),
    )
    result = manager(script).update_skills([REFLECTION], book, source=AIRLINE_SOURCE)
    assert result.refusals == ()
    assert [op.operation_type for op in result.operations] == ["ADD", "UPDATE", "ADD"]
