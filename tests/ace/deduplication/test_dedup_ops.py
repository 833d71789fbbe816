"""Near-duplicate decisions applied to the skillbook (MERGE / DELETE / UPDATE / KEEP) and KEEP persistence."""

from __future__ import annotations

from pathlib import Path

import pytest

from ace import InsightSource, Skillbook, SkillbookError, SkillbookFormatError
from ace.deduplication.detector import find_similar_pairs
from ace.deduplication.operations import DedupDecisionError, apply_decision, check_decision
from ace.deduplication.prompts import DeleteDecision, KeepDecision, MergeDecision, UpdateDecision
from ace.embeddings.test import TestEmbedder

SRC = InsightSource(
    trace_uid="demo:t9", source_system="demo", trace_id="t9", sample_question="q", epoch=2, learning_text="learned"
)


def book_with_pair() -> tuple[Skillbook, tuple[str, str]]:
    book = Skillbook()
    a = book.add_skill(
        "context",
        "In airline cancellations the agent cancels before the user confirms.",
        ["airline", "cancel"],
        "List the details and wait for an explicit yes before cancelling.",
    )
    b = book.add_skill(
        "context",
        "In retail order cancellations the agent cancels before the user confirms.",
        ["retail", "cancel"],
        "Wait for an explicit yes before cancelling an order.",
    )
    book.add_skill("harness", "The runner times out.", ["runner"])
    return book, (a.id, b.id)


def test_merge_widens_the_kept_skill_and_retires_the_other() -> None:
    book, (a, b) = book_with_pair()
    decision = MergeDecision(
        keep_id=a,
        issue="In airline and retail cancellations the agent cancels before the user confirms.",
        keywords=["airline", "retail", "cancel"],
        insight="List the details and wait for an explicit yes before any cancellation.",
        reason="same confirmation issue in two domains",
    )
    done = apply_decision(book, (a, b), decision, similarity=0.93, source=SRC)
    assert (done.kind, done.updated_id, done.removed_id, done.changed_ids) == ("MERGE", a, b, (a, b))
    kept, gone = book.require_skill(a), book.require_skill(b)
    assert kept.active and kept.keywords == ["airline", "retail", "cancel"] and "retail" in kept.issue
    assert not gone.active
    assert gone.removal_reason == f"merged into {a}: same confirmation issue in two domains"
    update_occ, remove_occ = kept.occurrences[-1], gone.occurrences[-1]
    assert (update_occ.operation_type, remove_occ.operation_type) == ("UPDATE", "REMOVE")
    for occ in (update_occ, remove_occ):
        assert (occ.trace_uid, occ.epoch) == ("demo:t9", 2)
        assert occ.error_identification == f"near-duplicate pair {a} / {b} (cosine 0.930)"
    assert update_occ.learning_text == f"merged {b} into {a}: same confirmation issue in two domains"
    assert [op.type for op in book.operations[-2:]] == ["UPDATE", "REMOVE"]


def test_merge_that_the_skillbook_refuses_changes_nothing() -> None:
    book, (a, b) = book_with_pair()
    before = book.to_dict()
    bad_keywords = MergeDecision(keep_id=a, issue="Merged.", keywords=["  ", "--"], reason="r")
    with pytest.raises(SkillbookError, match="keywords must contain at least one label"):
        apply_decision(book, (a, b), bad_keywords)
    outsider = MergeDecision(keep_id="harness-00001", issue="Merged.", keywords=["x"], reason="r")
    with pytest.raises(DedupDecisionError, match=r"keep_id must be 'context-00001' or 'context-00002'"):
        apply_decision(book, (a, b), outsider)
    assert book.to_dict() == before


def test_merge_without_insight_keeps_the_kept_skills_insight() -> None:
    book, (a, b) = book_with_pair()
    insight = book.require_skill(b).insight
    apply_decision(book, (a, b), MergeDecision(keep_id=b, issue="Both domains.", keywords=["cancel"], reason="r"))
    assert book.require_skill(b).insight == insight
    assert book.require_skill(a).removal_reason == f"merged into {b}: r"


def test_delete_soft_removes_one_skill() -> None:
    book, (a, b) = book_with_pair()
    done = apply_decision(book, (a, b), DeleteDecision(remove_id=b, reason="says nothing new"), source=SRC)
    assert (done.removed_id, done.updated_id, done.changed_ids) == (b, None, (b,))
    removed = book.require_skill(b)
    assert not removed.active and removed.removal_reason == f"duplicate of {a}: says nothing new"
    assert removed.occurrences[-1].trace_uid == "demo:t9"
    assert book.require_skill(a).active


def test_delete_of_a_skill_outside_the_pair_is_refused() -> None:
    book, (a, b) = book_with_pair()
    with pytest.raises(DedupDecisionError, match="remove_id must be"):
        apply_decision(book, (a, b), DeleteDecision(remove_id="harness-00001", reason="r"))
    assert book.require_skill("harness-00001").active


def test_update_rewrites_one_skill() -> None:
    book, (a, b) = book_with_pair()
    decision = UpdateDecision(skill_id=b, issue="In retail, orders in 'pending' state only.", reason="sharpen")
    done = apply_decision(book, (a, b), decision, source=SRC)
    assert (done.kind, done.updated_id, done.removed_id) == ("UPDATE", b, None)
    skill = book.require_skill(b)
    assert skill.issue == "In retail, orders in 'pending' state only." and skill.keywords == ["retail", "cancel"]
    assert skill.occurrences[-1].learning_text == "rewritten apart: sharpen"


def test_update_that_changes_nothing_is_refused() -> None:
    book, (a, b) = book_with_pair()
    same = UpdateDecision(skill_id=a, issue=book.require_skill(a).issue, reason="r")
    with pytest.raises(DedupDecisionError, match="would change nothing"):
        check_decision(book, (a, b), same)


def test_keep_is_remembered_saved_and_skipped_by_detection(tmp_path: Path) -> None:
    book, (a, b) = book_with_pair()
    embedder = TestEmbedder()
    assert [p.key for p in find_similar_pairs(book, threshold=0.5, embedder=embedder)] == [frozenset((a, b))]
    ops = len(book.operations)
    done = apply_decision(book, (b, a), KeepDecision(reason="different domains, different policies"))
    assert done.changed_ids == () and len(book.operations) == ops  # not a content mutation
    assert book.keep_pairs == ((a, b),) and book.is_kept_pair(b, a)
    assert book.record_keep_pair(a, b) is False  # asked once only
    assert find_similar_pairs(book, threshold=0.5, keep_pairs=book.keep_pairs, embedder=embedder) == []
    path = tmp_path / "skillbook.json"
    book.save_to_file(path)
    assert Skillbook.load_from_file(path).keep_pairs == ((a, b),)


def test_decisions_on_an_inactive_skill_are_refused() -> None:
    book, (a, b) = book_with_pair()
    book.remove_skill(b, "outdated")
    with pytest.raises(DedupDecisionError, match="no longer active"):
        apply_decision(book, (a, b), KeepDecision(reason="r"))


def test_keep_pairs_field_is_optional_and_validated() -> None:
    book, (a, b) = book_with_pair()
    assert "dedup_keep_pairs" not in book.to_dict()  # files without KEEP decisions are unchanged
    book.record_keep_pair(a, b)
    doc = book.to_dict()
    assert doc["dedup_keep_pairs"] == [[a, b]]
    assert Skillbook.from_dict(doc).keep_pairs == ((a, b),)
    for bad, message in (
        ([[a, a]], "must be two different skill ids"),
        ([[a]], "must be two different skill ids"),
        ([[a, "context-00099"]], r"names unknown skill\(s\) \['context-00099'\]"),
        ({"a": b}, "must be a list"),
    ):
        with pytest.raises(SkillbookFormatError, match=message):
            Skillbook.from_dict({**doc, "dedup_keep_pairs": bad})


def test_keep_pair_needs_two_known_distinct_skills_and_purge_forgets_it() -> None:
    book, (a, b) = book_with_pair()
    with pytest.raises(SkillbookError, match="two different skills"):
        book.record_keep_pair(a, a)
    with pytest.raises(SkillbookError, match="Unknown skill id"):
        book.record_keep_pair(a, "context-00042")
    book.record_keep_pair(a, b)
    book.purge(b)
    assert book.keep_pairs == ()
