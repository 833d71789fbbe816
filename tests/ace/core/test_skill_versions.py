"""Every mutation makes a new `Skill`: the one handed out before stays as it was, fields and chain; the new one
shares what did not change, a tag's provenance entry is shared while the same record comes back, and the audit
log holds the skill's own texts."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime, timedelta

import pytest

from ace import InsightSource, Skillbook
from ace.core.insight_source import utc_now
from ace.core.skill import Skill
from ace.exceptions import SkillFieldError

SOURCE = InsightSource(
    trace_uid="bench:task-1",
    source_system="bench",
    trace_id="task-1",
    sample_question="Change my flight.",
    epoch=0,
    error_identification="The agent skipped the fare.",
    learning_text="Confirm the fare.",
)


def snapshot(skill: Skill) -> dict[str, object]:
    return {f.name: getattr(skill, f.name) for f in dataclasses.fields(Skill)} | {"chain": list(skill.occurrences)}


def test_a_skill_handed_out_never_changes_whatever_follows() -> None:
    book = Skillbook()
    first = book.add_skill("context", "Fares change.", ["fares"], "Confirm the fare.", insight_source=SOURCE)
    before = snapshot(first)
    tagged = book.tag_skill(first.id, 1, insight_source=SOURCE)
    updated = book.update_skill(first.id, "Fares change daily.", ["fares", "daily"], insight_source=SOURCE)
    quarantined = book.quarantine_skill(first.id, "misleads", evidence=["t1"])
    released = book.release_skill(first.id, "fixed")
    removed = book.remove_skill(first.id, "outdated")
    assert snapshot(first) == before and list(first.occurrences) == before["chain"]
    versions = [first, tagged, updated, quarantined, released, removed]
    assert [len(v.occurrences) for v in versions] == [1, 2, 3, 4, 5, 6]
    assert [v.occurrences[-1].operation_type for v in versions] == [
        "ADD",
        "TAG",
        "UPDATE",
        "QUARANTINE",
        "RELEASE",
        "REMOVE",
    ]
    assert all(type(v.occurrences) is tuple for v in versions)
    assert (tagged.helpful_count, first.helpful_count, updated.helpful_count) == (1, 0, 1)
    assert tagged.keywords is first.keywords and tagged.issue is first.issue  # what a tag leaves is shared
    assert updated.keywords == ["fares", "daily"] and first.keywords == ["fares"]
    assert quarantined.quarantine is not None and released.quarantine is None and not removed.active
    assert first.active and first.quarantine is None and book.require_skill(first.id) is removed


def test_every_field_refuses_assignment_and_deletion_and_other_names_do_not_exist() -> None:
    skill = Skillbook().add_skill("harness", "Retries time out.", ["retries"])
    for name in ("issue", "occurrences", "helpful_count"):
        with pytest.raises(SkillFieldError, match=rf"Skill\.{name} cannot be assigned"):
            delattr(skill, name)
    with pytest.raises(AttributeError, match="no attribute 'note'") as refused:
        skill.note = "x"  # type: ignore[attr-defined]
    assert not isinstance(refused.value, SkillFieldError)
    with pytest.raises(TypeError, match="unhashable"):
        hash(skill)


def test_the_constructor_still_builds_a_skill_and_stores_its_chain_as_a_tuple() -> None:
    entry = InsightSource.manual("by hand")
    skill = Skill(id="context-00001", section="context", keywords=["a"], issue="I.", insight="Do.", occurrences=[entry])
    assert skill.occurrences == (entry,) and type(skill) is Skill
    assert dataclasses.replace(skill, used_count=2).used_count == 2 and skill.used_count == 0
    with pytest.raises(SkillFieldError, match="tag_skill"):
        skill.used_count = 3  # type: ignore[misc]


def test_tags_with_one_record_share_one_entry_and_log_each_use() -> None:
    book = Skillbook()
    ids = [book.add_skill("harness", f"Issue {i}.", ["x"], insight_source=SOURCE).id for i in range(3)]
    start = book.operations_count
    tagged = [book.tag_skill(sid, delta, insight_source=SOURCE) for sid, delta in zip(ids, (1, -1, 0), strict=True)]
    entries = [s.occurrences[-1] for s in tagged]
    assert entries[0] is entries[1] is entries[2]  # one immutable entry for every tag of the record
    assert entries[0].operation_type == "TAG" and entries[0].trace_uid == SOURCE.trace_uid
    assert entries[0].learning_text == SOURCE.learning_text and SOURCE.operation_type is None
    assert [s.occurrences[0].operation_type for s in tagged] == ["ADD"] * 3  # the ADD entry is another one
    logged = book.operations_since(start)
    assert [(op.type, op.skill_id, op.delta, op.trace_uid) for op in logged] == [
        ("TAG", sid, delta, SOURCE.trace_uid) for sid, delta in zip(ids, (1, -1, 0), strict=True)
    ]
    assert all(op.timestamp == s.updated_at for op, s in zip(logged, tagged, strict=True))
    other = dataclasses.replace(SOURCE, trace_uid="bench:task-2")
    assert book.tag_skill(ids[0], 1, insight_source=other).occurrences[-1].trace_uid == "bench:task-2"


def test_a_source_derived_for_the_operation_is_the_entry_itself() -> None:
    book = Skillbook()
    derived = SOURCE.derive("ADD", learning_text="new lesson")
    skill = book.add_skill("harness", "Issue.", ["x"], insight_source=derived)
    assert skill.occurrences[0] is derived
    removed = book.remove_skill(skill.id, "wrong", insight_source=SOURCE.derive("REMOVE", learning_text="other"))
    assert removed.occurrences[-1].learning_text == "wrong"  # a removal's entry says its reason


def test_a_mutation_without_source_is_stamped_once() -> None:
    book = Skillbook()
    skill = book.add_skill("harness", "Issue.", ["x"])
    entry, logged = skill.occurrences[0], book.operations[-1]
    assert entry.trace_uid == entry.source_system == entry.trace_id == "manual"
    assert skill.created_at is skill.updated_at is entry.timestamp is logged.timestamp  # one string for all four


def test_the_log_holds_the_skills_own_texts() -> None:
    book = Skillbook()
    skill = book.add_skill("context", "  Fares change.  ", ["Fare Rules"], "Confirm.")
    added = book.operations[-1]
    assert added.issue is skill.issue == "Fares change." and added.keywords is skill.keywords == ["fare_rules"]
    updated = book.update_skill(skill.id, "Fares change daily.")
    assert book.operations[-1].issue is updated.issue and updated.keywords is skill.keywords
    assert book.operations[-1] is book.operations_since(1)[0]  # an entry is made once, when first read
    book.tag_skill(skill.id, 0)
    assert book.operations_since(2)[0].delta == 0 and len(book.operations) == book.operations_count == 3


def test_a_failed_mutation_leaves_no_trace() -> None:
    book = Skillbook()
    skill = book.add_skill("harness", "Issue.", ["x"])
    count, version = book.operations_count, book.version
    for bad in (
        lambda: book.tag_skill(skill.id, 2),
        lambda: book.update_skill(skill.id, " "),
        lambda: book.tag_skill("harness-9", 1),
    ):
        with pytest.raises(Exception):  # noqa: B017, PT011 - each names its own fix, tested elsewhere
            bad()
    assert (book.operations_count, book.version, book.require_skill(skill.id)) == (count, version, skill)


def test_utc_now_is_the_iso_format_of_datetime_now() -> None:
    before = datetime.now(UTC)
    stamp = utc_now()
    after = datetime.now(UTC)
    parsed = datetime.fromisoformat(stamp)
    assert before - timedelta(microseconds=1) <= parsed <= after + timedelta(microseconds=1)
    assert len(stamp) == len(before.isoformat(timespec="microseconds")) and stamp.endswith("+00:00")
