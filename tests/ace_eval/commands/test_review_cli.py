"""Review runs end to end: `ace-eval e2e --review` stages candidates, `ace-eval review` decides them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from _review_support import (
    LIMIT,
    NEAR_DUPLICATE_ISSUE,
    REFINED_ISSUE,
    REFUND_ISSUE,
    WIDENED_ISSUE,
    PlannedSkillManager,
    demo_collection,
    published_skillbook,
    queue_of,
    review_run,
)
from click.testing import CliRunner, Result

from ace import Skillbook
from ace_eval.cli import main
from ace_eval.commands.e2e import format_summary


@pytest.fixture
def scenario(tmp_path: Path) -> tuple[Path, Path]:
    """The demo collection and the published skillbook."""
    return demo_collection(tmp_path), published_skillbook(tmp_path / "prod" / "skillbook.json")


def review(*args: str) -> Result:
    return CliRunner().invoke(main, ["review", *[str(a) for a in args]])


def candidates(skillbook: Path) -> dict[str, dict[str, Any]]:
    return {c["id"]: c for c in queue_of(skillbook)["candidates"]}


def test_a_review_run_changes_nothing_published_and_queues_grouped_candidates(
    scenario: tuple[Path, Path], tmp_path: Path
) -> None:
    collection, published = scenario
    before = published.read_bytes()
    manager = PlannedSkillManager()
    result = review_run(collection, published, tmp_path / "out", manager)

    assert published.read_bytes() == before  # nothing published
    assert manager.found == ["context-00003"]  # the session saw the refund skill staged three samples earlier
    fork = Skillbook.load_from_file(result.folder.skillbook)  # the run's own skillbook is the fork
    assert fork.require_skill("context-00003").issue == REFINED_ISSUE
    cands = candidates(published)
    assert [(c["kind"], c["target"]) for c in cands.values()] == [
        ("ADD", None),
        ("UPDATE", "context-00001"),
        ("TAG", "context-00001"),
        ("REMOVE", "context-00002"),
    ]
    add = cands["c00001"]
    assert [e["operation"]["type"] for e in add["edits"]] == ["ADD", "UPDATE", "ADD"]  # the near-duplicate joins
    assert [s["trace_id"] for s in add["sources"]] == [
        "cancel-business-trial-0",
        "upgrade-one-passenger-trial-0",
        "change-flight-gift-card-trial-0",
    ]
    source = add["sources"][0]
    assert source["epoch"] == 0 and source["error_identification"].startswith("The agent mishandled")
    assert source["key_insight"].startswith("Check the policy first") and len(source["trace_sha256"]) == 64
    assert (
        cands["c00002"]["base"]["issue"] == "Agents cancel basic economy bookings without checking the "
        "cancellation policy."
    )
    review_record = result.record.to_json()["review"]
    assert review_record == {
        "skillbook": str(published),
        "queue": str(published.with_name("skillbook.review.json")),
        "new_candidates": 4,
        "queued": 6,
        "already_queued": 0,
        "already_reviewed": 0,
        "unattributed": 0,
    }
    listed = review("list", result.folder.path)  # a run folder finds its published skillbook's queue
    assert listed.exit_code == 0, listed.output
    assert [line.split()[0] for line in listed.stdout.splitlines()] == ["c00001", "c00002", "c00003", "c00004"]
    assert review("list", published, "--keyword", "refund").stdout.split()[0] == "c00001"
    assert review("list", published, "--source", "add-one-bag").stdout.split()[0] == "c00004"
    shown = review("show", published, "c00001")
    assert f"Proposed: Issue: {NEAR_DUPLICATE_ISSUE}" in shown.stdout and "Sources (3):" in shown.stdout


def test_accept_applies_exactly_the_candidates_edits_with_provenance(
    scenario: tuple[Path, Path], tmp_path: Path
) -> None:
    collection, published = scenario
    review_run(collection, published, tmp_path / "out")
    before = Skillbook.load_from_file(published)

    accepted = review("accept", published, "c00001", "c00002", "--reviewer", "ana", "--reason", "sound")
    assert accepted.exit_code == 0, accepted.output
    assert "accepted c00001: context-00003" in accepted.stdout

    book = Skillbook.load_from_file(published)
    new_ops = book.operations[len(before.operations) :]
    assert [(op.type, op.skill_id) for op in new_ops] == [
        ("ADD", "context-00003"),
        ("UPDATE", "context-00003"),
        ("UPDATE", "context-00003"),  # the near-duplicate add is one skill: an update of it
        ("UPDATE", "context-00001"),
    ]
    refund = book.require_skill("context-00003")
    assert refund.issue == NEAR_DUPLICATE_ISSUE and refund.keywords == ["refund", "airline"]  # the last edit wins
    assert [(o.operation_type, o.trace_id, o.reviewer) for o in refund.occurrences] == [
        ("ADD", "cancel-business-trial-0", "ana"),
        ("UPDATE", "upgrade-one-passenger-trial-0", "ana"),
        ("UPDATE", "change-flight-gift-card-trial-0", "ana"),
    ]
    assert all(o.reviewed_at is not None and o.reviewed_at > o.timestamp for o in refund.occurrences)
    assert refund.occurrences[0].learning_text == "Ask how the user wants the refund before cancelling."
    assert book.require_skill("context-00001").issue == WIDENED_ISSUE
    assert book.require_skill("context-00002").active  # not accepted: untouched
    decided = candidates(published)
    assert decided["c00001"]["decision"]["status"] == "accepted"
    assert decided["c00001"]["decision"]["reviewer"] == "ana"
    assert decided["c00001"]["decision"]["applied_skill_ids"] == ["context-00003"]
    assert decided["c00003"]["decision"] is None
    markdown = published.with_suffix(".md").read_text(encoding="utf-8")  # written beside the published skillbook
    assert "### `context-00003`" in markdown
    assert "cancel-business-trial-0 (epoch 0)" in markdown.split("### `context-00003`")[1].split("###")[0]
    again = review("accept", published, "c00001")
    assert again.exit_code == 2 and "already accepted by ana" in again.output
    assert review("list", published).stdout.split()[0] == "c00003"
    assert REFUND_ISSUE not in (refund.issue, REFINED_ISSUE)


def test_a_second_run_over_the_same_traces_queues_nothing_new(scenario: tuple[Path, Path], tmp_path: Path) -> None:
    collection, published = scenario
    review_run(collection, published, tmp_path / "out")
    assert review("reject", published, "c00004", "--reason", "keep the bag skill").exit_code == 0
    queue = published.with_name("skillbook.review.json")
    before = queue.read_bytes()

    second = review_run(collection, published, tmp_path / "out")
    assert queue.read_bytes() == before  # nothing written
    counts = second.record.to_json()["review"]
    assert (counts["new_candidates"], counts["queued"]) == (0, 0)
    assert (counts["already_queued"], counts["already_reviewed"]) == (LIMIT - 1, 1)
    assert "Review: 0 new candidates, 0 edits queued, 5 already queued, 1 already reviewed" in format_summary(second)


def test_rejected_groups_are_not_proposed_again(scenario: tuple[Path, Path], tmp_path: Path) -> None:
    collection, published = scenario
    review_run(collection, published, tmp_path / "out")
    rejected = review("reject", published, "c00001", "c00002", "c00003", "c00004", "--reviewer", "bo", "--reason", "no")
    assert rejected.exit_code == 0, rejected.output

    second = review_run(collection, published, tmp_path / "out")
    assert second.record.review.already_reviewed == LIMIT
    assert second.record.review.new_candidates == 0
    assert len(candidates(published)) == 4
    assert review("list", published).stdout.strip() == "no pending candidates"
    assert review("list", published, "--status", "rejected").stdout.count("rejected") == 4


def test_acceptance_refuses_when_a_cited_trace_was_edited_or_removed(
    scenario: tuple[Path, Path], tmp_path: Path
) -> None:
    collection, published = scenario
    result = review_run(collection, published, tmp_path / "out")
    before = published.read_bytes()
    traces = result.folder.collection / "traces.jsonl"
    lines = traces.read_text(encoding="utf-8").splitlines()
    edited = [json.loads(line) for line in lines]
    edited[1]["question"] += " (edited)"  # cancel-basic-economy-trial-0: the update's source
    traces.write_text("\n".join(json.dumps(t) for t in edited) + "\n", encoding="utf-8")

    refused = review("accept", published, "c00002")
    assert refused.exit_code == 2
    assert "trace demo-airline:cancel-basic-economy-trial-0 (epoch 0): edited in" in refused.output
    assert "Re-run the review" in refused.output and "--force --reason" in refused.output
    assert published.read_bytes() == before  # nothing written

    removed = [line for line in lines if "cancel-business-trial-0" not in line]
    traces.write_text("\n".join(removed) + "\n", encoding="utf-8")
    refused = review("accept-all", published)
    assert refused.exit_code == 2
    assert "cancel-business-trial-0 (epoch 0): removed from" in refused.output
    assert candidates(published)["c00001"]["decision"] is None

    no_reason = review("accept", published, "c00001", "--force")
    assert no_reason.exit_code == 2 and "--force needs --reason" in no_reason.output
    forced = review("accept", published, "c00001", "--force", "--reason", "the trace was pruned, the lesson holds")
    assert forced.exit_code == 0, forced.output
    decision = candidates(published)["c00001"]["decision"]
    assert decision["forced"] and decision["reason"] == "the trace was pruned, the lesson holds"
    assert "removed from" in decision["problems"][0]


def test_acceptance_refuses_when_the_target_skill_changed_since(scenario: tuple[Path, Path], tmp_path: Path) -> None:
    collection, published = scenario
    review_run(collection, published, tmp_path / "out")
    assert review("accept", published, "c00002").exit_code == 0  # context-00001 is rewritten now

    refused = review("accept", published, "c00003")  # the tag was made against the old text
    assert refused.exit_code == 2
    assert "skill context-00001: changed since the candidate was made (issue)" in refused.output
    book = Skillbook.load_from_file(published)
    book.update_skill("context-00002", "Agents add bags without naming the fee (edited by hand).")
    book.save_to_file(published)
    refused = review("accept", published, "c00004")
    assert refused.exit_code == 2 and "skill context-00002: changed since" in refused.output
    assert Skillbook.load_from_file(published).require_skill("context-00002").active


def test_review_needs_a_skillbook_and_no_benchmark(scenario: tuple[Path, Path], tmp_path: Path) -> None:
    collection, published = scenario
    base = ["e2e", "--traces", str(collection), "--output-dir", str(tmp_path / "out"), "--review"]
    missing = CliRunner().invoke(main, [*base, "--no-benchmark"])
    assert missing.exit_code == 2 and "pass --skillbook PATH" in missing.output
    bench = CliRunner().invoke(main, [*base, "--skillbook", str(published), "--benchmark"])
    assert bench.exit_code == 2 and "drop --benchmark (or add --no-benchmark)" in bench.output
    assert not (tmp_path / "out").exists()


def test_review_refuses_a_folder_that_is_not_a_review_run_and_a_queue_of_another_version(
    scenario: tuple[Path, Path], tmp_path: Path
) -> None:
    collection, published = scenario
    review_run(collection, published, tmp_path / "out")
    queue = published.with_name("skillbook.review.json")
    data = json.loads(queue.read_text(encoding="utf-8"))
    queue.write_text(json.dumps({**data, "review_queue_version": 99}), encoding="utf-8")
    refused = review("list", published)
    assert refused.exit_code == 2
    assert "is review queue version 99; this ace-eval reads version 1 only" in refused.output
    plain = review("list", tmp_path)
    assert plain.exit_code == 2 and "a folder without run.json" in plain.output
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "run.json").write_text(json.dumps({"config": {"review": False}}), encoding="utf-8")
    other = review("list", tmp_path / "other")
    assert other.exit_code == 2 and "is not a review run" in other.output
    assert review("list", tmp_path / "collection" / "manifest.json").exit_code == 2  # no queue beside it


def test_a_review_of_a_skillbook_that_does_not_exist_yet_creates_it_on_accept(tmp_path: Path) -> None:
    collection = demo_collection(tmp_path)
    published = tmp_path / "new" / "skillbook.json"
    manager = PlannedSkillManager()
    result = review_run(collection, published, tmp_path / "out", manager)
    assert not published.exists()  # forked empty, still unpublished
    # the refund skill is context-00001 in the empty fork, so the scripted update and tag land on it (and the
    # remove of context-00002 is refused by the skillbook): one candidate holding every edit of the run's skill
    [cand] = candidates(published).values()
    assert [e["operation"]["type"] for e in cand["edits"]] == ["ADD", "UPDATE", "TAG", "UPDATE", "ADD"]
    assert result.record.review.unattributed == 0
    listed = review("list", published)
    assert listed.exit_code == 0 and listed.stdout.split()[:2] == ["c00001", "ADD"]
    assert review("accept", published, "c00001", "--reviewer", "ana").exit_code == 0
    book = Skillbook.load_from_file(published)
    [skill] = book.skills()
    assert skill.issue == NEAR_DUPLICATE_ISSUE and (skill.used_count, skill.helpful_count) == (1, 1)
    assert [o.operation_type for o in skill.occurrences] == ["ADD", "UPDATE", "TAG", "UPDATE", "UPDATE"]
