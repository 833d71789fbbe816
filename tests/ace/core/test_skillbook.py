"""Skillbook invariants: every rule has an accepted and a rejected case."""

from __future__ import annotations

import threading
from datetime import UTC

import numpy as np
import pytest
from dirty_equals import IsList, IsNow, IsStr

from ace import InsightSource, Skillbook, SkillbookError, UnknownSkillError, UpdateOperation
from ace.core.skill import VALID_SECTIONS

SRC = InsightSource(
    trace_uid="tau-bench-airline:task-3-trial-0",
    source_system="tau-bench-airline",
    trace_id="task-3-trial-0",
    sample_question="Change my flight to economy",
    epoch=1,
    error_identification="Agent upgraded one passenger only",
    learning_text="Cabin class applies to the whole reservation",
)

ISSUE = "In tau-airline's update_reservation_flights, cabin class applies to all passengers and legs."
INSIGHT = "Tell the user that cabin changes are all-or-nothing before offering options."


def add_context(sb: Skillbook, **kw: object) -> str:
    args: dict[str, object] = {"issue": ISSUE, "keywords": ["airline", "cabin_class"], "insight": INSIGHT}
    args.update(kw)
    return sb.add_skill("context", insight_source=SRC, **args).id  # type: ignore[arg-type]


def test_valid_sections_constant() -> None:
    assert frozenset({"context", "harness"}) == VALID_SECTIONS


@pytest.mark.parametrize("section", ["context", "harness"])
def test_section_accepted(section: str) -> None:
    sb = Skillbook()
    skill = sb.add_skill(section, ISSUE, ["airline"], INSIGHT)
    assert skill.section == section
    assert skill.id == f"{section}-00001"


@pytest.mark.parametrize("section", ["strategies", "Context", "", "harness "])
def test_section_rejected(section: str) -> None:
    sb = Skillbook()
    with pytest.raises(SkillbookError, match="section must be one of"):
        sb.add_skill(section, ISSUE, ["airline"], INSIGHT)
    assert len(sb) == 0
    assert sb.operations == ()


def test_keywords_normalised_on_add() -> None:
    sb = Skillbook()
    skill = sb.add_skill("harness", ISSUE, ["  Airline ", "Booking API", "airline", "rate-limit", "GPT-4.1"])
    assert skill.keywords == ["airline", "booking_api", "rate_limit", "gpt_4.1"]


@pytest.mark.parametrize("keywords", [[], ["", "  ", "--"], "airline", None])
def test_keywords_required_on_add(keywords: object) -> None:
    sb = Skillbook()
    with pytest.raises(SkillbookError, match="keywords"):
        sb.add_skill("harness", ISSUE, keywords)  # type: ignore[arg-type]
    assert len(sb) == 0


def test_keyword_too_long_rejected() -> None:
    sb = Skillbook()
    with pytest.raises(SkillbookError, match="too long"):
        sb.add_skill("harness", ISSUE, ["x" * 41])
    assert sb.add_skill("harness", ISSUE, ["x" * 40]).keywords == ["x" * 40]


@pytest.mark.parametrize("issue", ["", "   ", None])
def test_issue_required_on_add(issue: object) -> None:
    sb = Skillbook()
    with pytest.raises(SkillbookError, match="issue is required"):
        sb.add_skill("harness", issue, ["airline"])  # type: ignore[arg-type]


@pytest.mark.parametrize("issue", ["", "  "])
def test_issue_required_on_update(issue: str) -> None:
    sb = Skillbook()
    sid = add_context(sb)
    before = sb.get_skill(sid)
    with pytest.raises(SkillbookError, match="issue is required"):
        sb.update_skill(sid, issue)
    assert sb.get_skill(sid) is before
    assert sb.update_skill(sid, "A wider issue").issue == "A wider issue"


@pytest.mark.parametrize("insight", [None, "", "   "])
def test_context_requires_insight(insight: str | None) -> None:
    sb = Skillbook()
    with pytest.raises(SkillbookError, match="insight is required for a context skill"):
        sb.add_skill("context", ISSUE, ["airline"], insight)
    assert len(sb) == 0


@pytest.mark.parametrize(("insight", "stored"), [(None, None), ("", None), ("Retry later", "Retry later")])
def test_harness_insight_optional(insight: str | None, stored: str | None) -> None:
    sb = Skillbook()
    assert sb.add_skill("harness", ISSUE, ["tau2"], insight).insight == stored


def test_update_cannot_clear_context_insight() -> None:
    sb = Skillbook()
    sid = add_context(sb)
    with pytest.raises(SkillbookError, match="insight is required"):
        sb.update_skill(sid, ISSUE, insight="  ")
    assert sb.require_skill(sid).insight == INSIGHT


def test_update_keeps_omitted_fields_and_normalises_keywords() -> None:
    sb = Skillbook()
    sid = add_context(sb)
    s = sb.update_skill(sid, "Wider issue", insight_source=SRC)
    assert (s.keywords, s.insight) == (["airline", "cabin_class"], INSIGHT)
    s = sb.update_skill(sid, "Wider issue", keywords=["Airline", "Retail"], insight="New action")
    assert (s.keywords, s.insight) == (["airline", "retail"], "New action")
    with pytest.raises(SkillbookError, match="at least one label"):
        sb.update_skill(sid, "Wider issue", keywords=[" "])


def test_ids_sequential_per_section_and_never_reused() -> None:
    sb = Skillbook()
    a = add_context(sb)
    b = add_context(sb)
    h = sb.add_skill("harness", ISSUE, ["tau2"]).id
    assert (a, b, h) == ("context-00001", "context-00002", "harness-00001")
    sb.purge(b)
    assert add_context(sb) == "context-00003"
    sb.remove_skill(a, "outdated")
    assert add_context(sb) == "context-00004"


def test_ids_not_reused_after_purge_and_reload(tmp_path: object) -> None:
    from pathlib import Path

    path = Path(str(tmp_path)) / "skillbook.json"
    sb = Skillbook()
    add_context(sb)
    last = add_context(sb)
    sb.purge(last)
    sb.save_to_file(path)
    again = Skillbook.load_from_file(path)
    assert add_context(again) == "context-00003"


def test_every_mutation_appends_an_occurrence() -> None:
    sb = Skillbook()
    sid = add_context(sb)
    sb.update_skill(sid, "Wider", insight_source=SRC)
    sb.tag_skill(sid, 1, insight_source=SRC)
    sb.remove_skill(sid, "superseded by a wider skill", insight_source=SRC)
    chain = sb.require_skill(sid).occurrences
    assert [o.operation_type for o in chain] == ["ADD", "UPDATE", "TAG", "REMOVE"]
    assert all(o.trace_uid == SRC.trace_uid and o.epoch == 1 for o in chain)
    assert chain[-1].learning_text == "superseded by a wider skill"


def test_mutation_without_source_is_recorded_as_manual() -> None:
    sb = Skillbook()
    skill = sb.add_skill("harness", ISSUE, ["tau2"])
    assert [(o.source_system, o.operation_type) for o in skill.occurrences] == [("manual", "ADD")]


def test_content_change_invalidates_embedding_but_tag_does_not() -> None:
    sb = Skillbook()
    sid = add_context(sb)
    vec = np.ones(4, dtype=np.float32)
    sb.set_embedding(sid, vec)
    sb.tag_skill(sid, 0)
    assert sb.require_skill(sid).embedding is not None
    sb.update_skill(sid, ISSUE)  # same text: nothing changed, vector still valid
    assert sb.require_skill(sid).embedding is not None
    sb.update_skill(sid, ISSUE, keywords=["airline", "new_label"])
    assert sb.require_skill(sid).embedding is None
    sb.set_embedding(sid, vec)
    sb.update_skill(sid, ISSUE, insight="Other action")
    assert sb.require_skill(sid).embedding is None


@pytest.mark.parametrize(
    ("delta", "counts"), [(1, (1, 0, 0)), (-1, (0, 1, 0)), (0, (0, 0, 1))], ids=["helpful", "harmful", "neutral"]
)
def test_tag_moves_counters(delta: int, counts: tuple[int, int, int]) -> None:
    sb = Skillbook()
    sid = add_context(sb)
    s = sb.tag_skill(sid, delta)
    assert (s.helpful_count, s.harmful_count, s.neutral_count) == counts
    assert s.used_count == 1


@pytest.mark.parametrize("delta", [2, -2, True, 0.5, "1"])
def test_tag_rejects_bad_delta(delta: object) -> None:
    sb = Skillbook()
    sid = add_context(sb)
    with pytest.raises(SkillbookError, match="delta must be"):
        sb.tag_skill(sid, delta)  # type: ignore[arg-type]
    assert sb.require_skill(sid).used_count == 0
    assert len(sb.require_skill(sid).occurrences) == 1


def test_unknown_id_suggests_close_matches() -> None:
    sb = Skillbook()
    add_context(sb)
    with pytest.raises(UnknownSkillError, match="Did you mean 'context-00001'"):
        sb.tag_skill("context-0001", 1)


def test_soft_remove_keeps_history_and_hides_from_views() -> None:
    sb = Skillbook()
    sid = add_context(sb)
    keep = sb.add_skill("harness", ISSUE, ["tau2"]).id
    removed = sb.remove_skill(sid, "harmful in 3 traces")
    assert not removed.active
    assert removed.removal_reason == "harmful in 3 traces"
    assert sid in sb
    assert [s.id for s in sb.skills()] == [keep]
    assert [s.id for s in sb.skills(include_inactive=True)] == [sid, keep]
    assert sid not in sb.as_prompt()
    assert sb.operations[-1].type == "REMOVE"
    assert sb.operations[-1].reason == "harmful in 3 traces"


@pytest.mark.parametrize("reason", ["", "  "])
def test_remove_requires_reason(reason: str) -> None:
    sb = Skillbook()
    sid = add_context(sb)
    with pytest.raises(SkillbookError, match="reason is required"):
        sb.remove_skill(sid, reason)
    assert sb.require_skill(sid).active


def test_removed_skill_refuses_further_mutations() -> None:
    sb = Skillbook()
    sid = add_context(sb)
    sb.remove_skill(sid, "outdated")
    for call in (lambda: sb.update_skill(sid, "x"), lambda: sb.tag_skill(sid, 1), lambda: sb.remove_skill(sid, "x")):
        with pytest.raises(SkillbookError, match="was removed"):
            call()


def test_hard_remove_and_purge_delete_for_good() -> None:
    sb = Skillbook()
    a = add_context(sb)
    b = add_context(sb)
    sb.remove_skill(a, "duplicate", soft=False)
    sb.purge(b, "operator clean-up")
    assert len(sb) == 0
    assert [op.type for op in sb.operations][-2:] == ["PURGE", "PURGE"]
    with pytest.raises(UnknownSkillError):
        sb.purge(a)


def test_operations_log_has_spec_fields_only() -> None:
    sb = Skillbook()
    sid = add_context(sb)
    op = sb.operations[0]
    assert set(op.to_dict()) == {
        "type",
        "skill_id",
        "section",
        "issue",
        "insight",
        "keywords",
        "delta",
        "reason",
        "trace_uid",
        "timestamp",
    }
    assert (op.type, op.skill_id, op.section, op.issue, op.keywords, op.trace_uid) == (
        "ADD",
        sid,
        "context",
        ISSUE,
        ["airline", "cabin_class"],
        SRC.trace_uid,
    )
    assert not {"content", "justification", "evidence"} & set(op.to_dict())


def test_batch_is_all_or_nothing() -> None:
    sb = Skillbook()
    sid = add_context(sb)
    version = sb.version
    ops = [
        UpdateOperation(type="ADD", section="harness", issue="Rate limits", keywords=["tau2"]),
        UpdateOperation(type="TAG", skill_id=sid, delta=1),
        UpdateOperation(type="ADD", section="context", issue="No insight given", keywords=["airline"]),
    ]
    with pytest.raises(SkillbookError, match=r"operation 2 \(ADD\) refused, so none of the batch was applied"):
        sb.apply_operations(ops, insight_source=SRC)
    assert [s.id for s in sb.skills()] == [sid]
    assert sb.require_skill(sid).used_count == 0
    assert len(sb.operations) == 1
    assert sb.version == version
    assert add_context(sb) == "context-00002"  # the refused batch consumed no id

    applied = sb.apply_operations(ops[:2], insight_source=SRC)
    assert [s.id for s in applied] == ["harness-00001", sid]
    assert sb.require_skill(sid).helpful_count == 1


def test_as_prompt_spec_format() -> None:
    sb = Skillbook()
    sb.add_skill("harness", "tau2 runner retries Bedrock 429 with 60s backoff.", ["tau2", "rate_limit", "retries"])
    sb.add_skill("context", ISSUE, ["airline", "booking_api", "cabin_class"], INSIGHT)
    gone = sb.add_skill("context", "old", ["x"], "y").id
    sb.remove_skill(gone, "outdated")
    assert sb.as_prompt() == (
        "## context\n"
        "- [context-00001]\n"
        "Keywords: airline, booking_api, cabin_class\n"
        f"Issue: {ISSUE}\n"
        f"Insight: {INSIGHT}\n"
        "## harness\n"
        "- [harness-00001]\n"
        "Keywords: tau2, rate_limit, retries\n"
        "Issue: tau2 runner retries Bedrock 429 with 60s backoff."
    )
    assert Skillbook().as_prompt() == ""


def test_to_llm_dict_and_stats() -> None:
    sb = Skillbook()
    sid = add_context(sb)
    sb.tag_skill(sid, -1)
    gone = sb.add_skill("harness", ISSUE, ["tau2"]).id
    sb.remove_skill(gone, "outdated")
    assert sb.to_llm_dict() == {
        "skills": [
            {
                "id": sid,
                "section": "context",
                "keywords": ["airline", "cabin_class"],
                "issue": ISSUE,
                "insight": INSIGHT,
                "helpful": 0,
                "harmful": 1,
                "neutral": 0,
            }
        ]
    }
    stats = sb.stats()
    assert stats["skills"] == 2
    assert stats["active"] == 1
    assert stats["inactive"] == 1
    assert stats["sections"] == {"context": 1, "harness": 0}
    assert stats["tags"] == {"helpful": 0, "harmful": 1, "neutral": 0}
    assert stats["occurrences"] == 4


def test_changes_since_tracks_mutated_ids() -> None:
    sb = Skillbook()
    a = add_context(sb)
    v = sb.version
    b = add_context(sb)
    sb.tag_skill(a, 1)
    assert sb.changes_since(v) == {a, b}
    assert sb.changes_since(sb.version) == set()


def test_concurrent_mutations_lose_nothing() -> None:
    sb = Skillbook()
    target = add_context(sb)
    n_threads, per_thread = 8, 200

    def work(k: int) -> None:
        for i in range(per_thread):
            sb.add_skill("harness", f"issue {k}-{i}", [f"t{k}"])
            sb.tag_skill(target, 1)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(n_threads)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(sb) == 1 + n_threads * per_thread
    assert sb.require_skill(target).helpful_count == n_threads * per_thread
    assert len(sb.require_skill(target).occurrences) == 1 + n_threads * per_thread
    ids = [s.id for s in sb.skills(section="harness")]
    assert len(set(ids)) == len(ids) == n_threads * per_thread
    assert len(sb.operations) == 1 + 2 * n_threads * per_thread


def test_set_embedding_refuses_mixed_dimensions() -> None:
    sb = Skillbook()
    a = add_context(sb)
    b = add_context(sb)
    sb.set_embedding(a, np.ones(4, dtype=np.float32))
    with pytest.raises(SkillbookError, match="dimension 3 but the skillbook's vectors have 4"):
        sb.set_embedding(b, np.ones(3, dtype=np.float32))
    sb.set_embedding(b, [0.5, 0.5, 0.5, 0.5])  # type: ignore[arg-type]
    vec = sb.require_skill(b).embedding
    assert vec is not None and vec.dtype == np.float32


def test_active_count_follows_every_mutation_and_rollback(tmp_path: object) -> None:
    from pathlib import Path

    sb = Skillbook()
    a = add_context(sb)
    b = add_context(sb)
    sb.tag_skill(a, 1)
    sb.update_skill(a, "wider")
    assert sb.active_count == 2
    sb.remove_skill(a, "outdated")
    assert sb.active_count == 1
    sb.purge(a)
    assert sb.active_count == 1
    with pytest.raises(SkillbookError):
        sb.apply_operations([UpdateOperation(type="REMOVE", skill_id=b, reason="x"), UpdateOperation(type="ADD")])
    assert sb.active_count == 1
    sb.purge(b)
    assert sb.active_count == 0
    add_context(sb)
    path = Path(str(tmp_path)) / "s.json"
    sb.save_to_file(path)
    assert Skillbook.load_from_file(path).active_count == len(sb.skills()) == 1


def test_a_new_skill_on_disk_has_its_id_and_timestamps_now() -> None:
    """The whole `to_dict` of a new skill and then an updated one; ids and times compared by shape (dirty-equals)."""
    sb = Skillbook()
    sid = add_context(sb)
    now = IsNow(iso_string=True, delta=60, tz=UTC)
    data = sb.get_skill(sid).to_dict()
    assert data == {
        "id": IsStr(regex=r"context-\d{5}"),
        "section": "context",
        "keywords": ["airline", "cabin_class"],
        "issue": ISSUE,
        "insight": INSIGHT,
        "active": True,
        "used_count": 0,
        "helpful_count": 0,
        "harmful_count": 0,
        "neutral_count": 0,
        "created_at": now,
        "updated_at": data["created_at"],
        "occurrences": [{**SRC.to_dict(), "operation_type": "ADD"}],  # the source's own timestamp: when it was made
    }
    sb.update_skill(sid, ISSUE, ["airline", "cabin_class", "upgrade"], insight_source=SRC)
    updated = sb.get_skill(sid).to_dict()
    assert updated["updated_at"] == now and updated["updated_at"] >= data["updated_at"]
    update = {**SRC.to_dict(), "operation_type": "UPDATE"}
    assert updated["occurrences"] == IsList(data["occurrences"][0], update)
