"""The review queue: its file format, grouping, idempotence, and a review run killed and resumed."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from _e2e_support import kill_after
from _review_support import (
    PlannedSkillManager,
    comparable,
    demo_collection,
    published_skillbook,
    queue_of,
    review_injections,
    review_run,
    review_settings,
)

from ace import InsightSource, Skillbook
from ace.core.update_operation import UpdateOperation
from ace_eval.e2e import runner
from ace_eval.review import (
    QueueFile,
    QueueFormatError,
    ReviewQueue,
    SourceRef,
    Stager,
    apply_candidate,
    read_queue,
)
from ace_eval.review.step import ReviewStep


def proposal(op: UpdateOperation, trace: str, epoch: int = 0) -> Any:
    from ace_eval.review import Proposal

    source = InsightSource(
        trace_uid=f"s:{trace}", source_system="s", trace_id=trace, epoch=epoch, operation_type=op.type
    )
    ref = SourceRef(
        trace_uid=f"s:{trace}",
        source_system="s",
        trace_id=trace,
        epoch=epoch,
        error_identification="wrong",
        key_insight="lesson",
        collection="/nowhere",
        trace_sha256="0" * 64,
        run_id="run_a",
    )
    return Proposal(operation=op, source=source, ref=ref)


def add(skill_id: str, issue: str, keywords: list[str]) -> UpdateOperation:
    return UpdateOperation(
        type="ADD", skill_id=skill_id, section="context", issue=issue, insight="Do it.", keywords=keywords
    )


def empty_queue() -> QueueFile:
    return QueueFile(review_queue_version=1, skillbook="skillbook.json", next_number=1, candidates=[])


def test_adds_group_by_section_keywords_and_near_duplicate_issue() -> None:
    base = Skillbook()
    queue = empty_queue()
    stager = Stager(run_id="run_a", base=base)
    stager.propose(queue, [proposal(add("context-00001", "The agent forgets the refund.", ["refund", "airline"]), "a")])
    stager.propose(queue, [proposal(add("context-00002", "The agent forgets the refund!", ["airline", "refund"]), "b")])
    stager.propose(queue, [proposal(add("context-00003", "The agent forgets the refund.", ["airline"]), "c")])
    stager.propose(queue, [proposal(add("context-00004", "Bags are added without a fee.", ["refund", "airline"]), "d")])
    assert [len(c.sources) for c in queue.candidates] == [2, 1, 1]  # other keywords, other issue: other groups
    assert stager.counts.new_candidates == 3 and stager.counts.queued == 4

    again = Stager(run_id="run_b", base=base)  # a second run over the same traces
    before = queue.model_dump()
    same = add("context-00009", "The agent forgets the refund.", ["airline", "refund"])
    changed = again.propose(queue, [proposal(same, "a")])
    assert not changed and queue.model_dump() == before
    assert again.counts.already_queued == 1 and again.counts.queued == 0


def test_edits_of_published_skills_group_by_kind_target_and_base_text() -> None:
    base = Skillbook()
    base.add_skill("context", "Old issue.", ["x"], "Old insight.")
    queue = empty_queue()
    stager = Stager(run_id="run_a", base=base)
    update = UpdateOperation(type="UPDATE", skill_id="context-00001", issue="New issue.", keywords=["x"])
    tag = UpdateOperation(type="TAG", skill_id="context-00001", delta=1)
    stager.propose(queue, [proposal(update, "a"), proposal(tag, "a")])
    stager.propose(queue, [proposal(tag, "b")])
    assert [(c.kind, c.target, len(c.edits)) for c in queue.candidates] == [
        ("UPDATE", "context-00001", 1),
        ("TAG", "context-00001", 2),
    ]
    assert queue.candidates[0].base is not None and queue.candidates[0].base.issue == "Old issue."
    unknown = UpdateOperation(type="TAG", skill_id="context-00077", delta=1)
    assert not stager.propose(queue, [proposal(unknown, "c")]) and stager.unattributed == 1


def test_an_edit_committed_before_the_add_of_its_skill_waits_for_it() -> None:
    """Concurrent sessions: B updates the skill A added, and B's sample commits before A's."""
    queue = empty_queue()
    stager = Stager(run_id="run_a", base=Skillbook())
    update = UpdateOperation(type="UPDATE", skill_id="context-00001", issue="The agent forgets the refund often.")
    assert not stager.propose(queue, [proposal(update, "b")])
    assert stager.unattributed == 1 and queue.candidates == []
    assert stager.propose(queue, [proposal(add("context-00001", "The agent forgets the refund.", ["refund"]), "a")])
    [cand] = queue.candidates
    assert [e.key for e in cand.edits] == ["s:a|0|ADD|0", "s:b|0|UPDATE|0"] and stager.unattributed == 0


def test_an_add_candidate_is_one_skill_whichever_run_staged_its_edits() -> None:
    queue = empty_queue()
    Stager(run_id="run_a", base=Skillbook()).propose(
        queue, [proposal(add("context-00001", "The agent forgets the refund.", ["refund"]), "a")]
    )
    second = Stager(run_id="run_b", base=Skillbook())  # its fork numbered the same skill context-00005
    refined = UpdateOperation(type="UPDATE", skill_id="context-00005", issue="The agent forgets refunds.")
    second.propose(queue, [proposal(add("context-00005", "The agent forgets the refund.", ["refund"]), "a")])
    second.propose(queue, [proposal(refined, "b")])
    assert (second.counts.already_queued, second.counts.queued) == (1, 1)
    [cand] = queue.candidates
    book = Skillbook()
    assert apply_candidate(cand, book, reviewer="ana", decided_at="2026-12-01T00:00:00+00:00") == ["context-00001"]
    assert book.require_skill("context-00001").issue == "The agent forgets refunds."
    assert [o.trace_id for o in book.require_skill("context-00001").occurrences] == ["a", "b"]


def test_the_queue_file_is_versioned_and_strict(tmp_path: Path) -> None:
    book = tmp_path / "skillbook.json"
    queue = ReviewQueue(book)
    assert read_queue(queue.path, book).candidates == []  # no file yet: empty
    queue.path.write_text(
        json.dumps({"review_queue_version": 2, "skillbook": "skillbook.json", "next_number": 1, "candidates": []})
    )
    with pytest.raises(QueueFormatError, match="is review queue version 2; this ace-eval reads version 1 only"):
        queue.read()
    queue.path.write_text(
        json.dumps(
            {
                "review_queue_version": 1,
                "skillbook": "skillbook.json",
                "next_number": 1,
                "candidates": [],
                "extra": True,
            }
        )
    )
    with pytest.raises(QueueFormatError, match="field 'extra'"):
        queue.read()
    queue.path.unlink()
    with queue.editing() as q:
        q.next_number = 7
        queue.save(q)
    assert queue.read().next_number == 7 and not list(tmp_path.glob("*.tmp"))


class KilledBetweenJournalAndQueue(BaseException):
    """Stands for a kill after the checkpoint journaled a sample and before its candidates were written."""


@pytest.mark.parametrize("workers", [1, 3])
@pytest.mark.parametrize("where", ["after_commit", "before_queue"])
def test_a_killed_review_run_resumes_with_no_candidate_lost_or_duplicated(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, workers: int, where: str
) -> None:
    collection = demo_collection(tmp_path)
    reference_book = published_skillbook(tmp_path / "ref" / "skillbook.json")
    reference = review_run(collection, reference_book, tmp_path / "ref-out")

    published = published_skillbook(tmp_path / "prod" / "skillbook.json")
    published_bytes = published.read_bytes()
    settings = review_settings(collection, published, tmp_path / "out", max_workers=workers, sm_sessions="ordered")
    original = ReviewStep.__call__
    calls = {"n": 0}

    async def dies_on_the_fourth(self: ReviewStep, ctx: Any) -> Any:
        calls["n"] += 1
        if calls["n"] == 4:
            raise KilledBetweenJournalAndQueue
        return await original(self, ctx)

    if where == "after_commit":
        injections = review_injections(on_sample=kill_after(3))  # Ctrl-C after the third committed sample
        with pytest.raises(KeyboardInterrupt):
            runner.run_e2e(settings, injections=injections)
    else:
        monkeypatch.setattr(ReviewStep, "__call__", dies_on_the_fourth)
        with pytest.raises(KilledBetweenJournalAndQueue):
            runner.run_e2e(settings, injections=review_injections())
        monkeypatch.setattr(ReviewStep, "__call__", original)
    [folder] = list((tmp_path / "out").iterdir())
    journaled = len((folder / "samples.jsonl").read_text().splitlines())
    assert 3 <= journaled < 6
    queued = queue_of(published)
    staged = sum(len(c["edits"]) for c in queued["candidates"])
    assert staged < 6  # the run stopped with candidates still to come

    resumed = runner.resume_e2e(folder, injections=review_injections(PlannedSkillManager()))
    assert comparable(queue_of(published)) == comparable(queue_of(reference_book))
    keys = [e["key"] for c in queue_of(published)["candidates"] for e in c["edits"]]
    assert len(keys) == len(set(keys)) == 6
    assert resumed.record.review.new_candidates == reference.record.review.new_candidates == 4
    assert resumed.record.review.queued == 6 and resumed.record.review.already_queued == 0
    assert published.read_bytes() == published_bytes  # nothing published, before or after the kill
