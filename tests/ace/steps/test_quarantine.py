"""Effectiveness gating: a skill the reflections tag harmful on two distinct traces is quarantined by the pipeline's
`quarantine` step (scripted reflector and skill manager), hidden from every prompt and search, kept in the file and
the export with its reason, brought back by a release; every transition is in the operation log."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from _ace_scripts import Script, make_trace, scripted_roles
from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo

from ace import InsightSource, Skillbook
from ace.core.effectiveness import QuarantinePolicy, evidence_ledger, skill_kpis
from ace.core.journal import SkillbookMark, apply_deltas, delta_since
from ace.core.update_operation import UpdateOperation
from ace.embeddings.test import TestEmbedder
from ace.exceptions import SkillbookError, SkillbookFormatError
from ace.pipeline.context import StepContext
from ace.pipeline.phased import StepPipeline, StepRequest, build_pipeline
from ace.pipeline.registry import StepConfigError, StepEnvironment
from ace.reflector.reflection import Reflection
from ace.retrieval.index import search_index
from ace.retrieval.top_k import retrieve_top_k
from ace.skill_manager.manager import SkillManager
from ace.steps.export_markdown import export_markdown
from ace_eval.benchmarks.tau_bench.agent import render_skills
from ace_eval.e2e.config import resolve_settings
from ace_eval.e2e.plan import plan_run_pipeline
from ace_eval.e2e.training import Trainer, TrainingConfig
from ace_eval.run.checkpoint import load_checkpoint

EMBEDDER = TestEmbedder()


def _pipeline(**options: Any) -> StepPipeline:
    reflector, manager = scripted_roles()
    return build_pipeline(
        [StepRequest("reflect"), StepRequest("update"), StepRequest("quarantine", options)],
        StepEnvironment(reflector=reflector, skill_manager=manager, embedder=EMBEDDER),
    )


def _seeded() -> tuple[Skillbook, str]:
    book = Skillbook()
    skill = book.add_skill(
        "context", "The agent refunds without checking the fare rules.", ["refunds", "policy"], "Check the fare rules."
    )
    return book, skill.id


def _sample(pipeline: StepPipeline, book: Skillbook, n: int, skill_id: str, *, reward: float, epoch: int = 0) -> Any:
    trace = make_trace(n, "refunds", reward=reward, skills_in_context=[skill_id])
    return asyncio.run(pipeline.run_sample(StepContext(trace=trace, skillbook=book, epoch=epoch)))


def _source(trace: str) -> InsightSource:
    return InsightSource(trace_uid=trace, source_system="demo-test", trace_id=trace)


def test_harmful_tags_on_two_distinct_traces_quarantine_the_skill_through_the_pipeline(tmp_path: Path) -> None:
    book, sid = _seeded()
    pipeline = _pipeline()
    index = search_index(book, EMBEDDER)
    first = _sample(pipeline, book, 1, sid, reward=0.0)
    assert first.extra("quarantine", "quarantined") == ()
    assert book.require_skill(sid).visible and book.require_skill(sid).harmful_count == 1
    indexed = index.size

    second = _sample(pipeline, book, 2, sid, reward=0.0)
    assert second.extra("quarantine", "quarantined") == (sid,)
    skill = book.require_skill(sid)
    assert skill.active and skill.quarantine is not None
    assert skill.quarantine.evidence == ("demo-test:t01", "demo-test:t02")
    assert "harmful on 2 distinct traces (demo-test:t01, demo-test:t02)" in skill.quarantine.reason
    # the audit: the QUARANTINE operation names the sample that tipped the balance and the evidence
    op = book.operations[-1]
    assert (op.type, op.skill_id, op.trace_uid, op.evidence) == (
        "QUARANTINE",
        sid,
        "demo-test:t02",
        ["demo-test:t01", "demo-test:t02"],
    )
    assert skill.occurrences[-1].operation_type == "QUARANTINE"
    assert skill.occurrences[-1].learning_text == skill.quarantine.reason

    # hidden by the one filter: prompt, retrieval (same index, updated, not rebuilt) and the skill list
    assert sid not in book.as_prompt()
    assert sid not in [s.id for s in retrieve_top_k(book, "refunds fare rules policy", top_k=5, embedder=EMBEDDER)]
    assert search_index(book, EMBEDDER) is index and index.size == indexed - 1
    assert sid not in [s.id for s in book.skills()]
    assert sid in [s.id for s in book.skills(include_inactive=True)]

    # kept in the file (round trip, strict load) and in the export, with its reason
    path = tmp_path / "skillbook.json"
    book.save_to_file(path)
    loaded = Skillbook.load_from_file(path)
    assert loaded.to_dict() == book.to_dict()
    assert loaded.require_skill(sid).quarantine == skill.quarantine
    markdown = export_markdown(loaded)
    assert "## Quarantined skills (1)" in markdown
    assert f"### `{sid}` (context, quarantined)" in markdown
    assert "harmful on 2 distinct traces" in markdown
    assert "harmful traces 2" in markdown

    # release: visible again everywhere; the evidence before it does not quarantine it again
    book.release_skill(sid, "the fare rules changed; the skill is right again")
    assert sid in book.as_prompt()
    assert sid in [s.id for s in retrieve_top_k(book, "refunds fare rules policy", top_k=5, embedder=EMBEDDER)]
    assert index.size == indexed
    assert QuarantinePolicy().due(book) == []
    assert [o.type for o in book.operations if o.skill_id == sid][-2:] == ["QUARANTINE", "RELEASE"]
    assert book.require_skill(sid).occurrences[-1].operation_type == "RELEASE"


def test_two_harmful_tags_from_one_trace_do_not_quarantine() -> None:
    book, sid = _seeded()
    pipeline = _pipeline()
    _sample(pipeline, book, 1, sid, reward=0.0, epoch=0)
    last = _sample(pipeline, book, 1, sid, reward=0.0, epoch=1)  # the same trace in the next epoch
    skill = book.require_skill(sid)
    assert skill.harmful_count == 2 and skill.visible
    assert last.extra("quarantine", "quarantined") == ()
    (kpis,) = skill_kpis(book)
    assert (kpis.uses, kpis.harmful, kpis.harmful_traces, kpis.status) == (2, 2, 1, "active")
    assert not [o for o in book.operations if o.type == "QUARANTINE"]


def test_only_more_harmful_than_helpful_evidence_quarantines() -> None:
    book, sid = _seeded()
    pipeline = _pipeline()
    for n, reward in ((1, 1.0), (2, 1.0), (3, 0.0), (4, 0.0)):  # two helpful traces, then two harmful ones
        _sample(pipeline, book, n, sid, reward=reward)
    assert book.require_skill(sid).visible
    assert _sample(pipeline, book, 5, sid, reward=0.0).extra("quarantine", "quarantined") == (sid,)


def test_the_thresholds_are_step_options_and_never_below_two_traces() -> None:
    book, sid = _seeded()
    pipeline = _pipeline(min_harmful_traces=3)
    for n in (1, 2):
        _sample(pipeline, book, n, sid, reward=0.0)
    assert book.require_skill(sid).visible
    _sample(pipeline, book, 3, sid, reward=0.0)
    assert book.require_skill(sid).quarantine is not None
    with pytest.raises(StepConfigError, match="min_harmful_traces"):
        _pipeline(min_harmful_traces=1)
    with pytest.raises(SkillbookError, match="transient"):
        QuarantinePolicy(min_harmful_traces=1)


def test_tags_made_by_hand_are_no_trace_evidence() -> None:
    book, sid = _seeded()
    for _ in range(3):
        book.tag_skill(sid, -1)  # InsightSource.manual(): trace "manual"
    assert QuarantinePolicy().due(book) == []
    assert skill_kpis(book)[0].harmful == 3 and skill_kpis(book)[0].harmful_traces == 0


def test_the_skill_managers_search_does_not_see_a_quarantined_skill() -> None:
    book, sid = _seeded()
    other = book.add_skill("context", "Refunds to a gift card need the card id.", ["refunds"], "Ask for the card id.")
    book.quarantine_skill(sid, "kept out by a reviewer")

    def search(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        return ModelResponse(parts=[ToolCallPart("search_skills", {"query": "refunds fare rules", "top_k": 5})])

    def finish(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        return ModelResponse(parts=[TextPart("done")])

    script = Script(search, finish)
    manager = SkillManager(script.model, embedder=EMBEDDER)
    reflection = Reflection(
        error_identification="Refunded without the fare rules.",
        root_cause_analysis="Skipped the policy.",
        correct_approach="Check the fare rules.",
        key_insight="Check the fare rules before refunding.",
    )
    manager.update_skills([reflection], book, source=_source("demo-test:t09"))
    returns = [p for m in script.seen[1] if isinstance(m, ModelRequest) for p in m.parts]
    found = next(p for p in returns if isinstance(p, ToolReturnPart) and p.tool_name == "search_skills")
    assert isinstance(found.content, list)
    assert [s["id"] for s in found.content] == [other.id]
    prompt = str(script.seen[0][0])
    assert sid not in prompt  # nor among the skills retrieved for the session's own prompt


def test_person_quarantine_and_release_are_audited_and_refused_when_they_make_no_sense() -> None:
    book, sid = _seeded()
    with pytest.raises(SkillbookError, match="not quarantined"):
        book.release_skill(sid, "nothing to release")
    with pytest.raises(SkillbookError, match="reason is required"):
        book.quarantine_skill(sid, "  ")
    book.quarantine_skill(sid, "misleads on partial refunds", insight_source=InsightSource.manual("reviewer"))
    with pytest.raises(SkillbookError, match="already quarantined"):
        book.quarantine_skill(sid, "again")
    book.tag_skill(sid, 1)  # a quarantined skill still takes evidence and edits
    book.update_skill(sid, "The agent refunds without checking the fare rules of the booking class.")
    assert book.require_skill(sid).quarantine is not None
    book.remove_skill(sid, "obsolete")
    with pytest.raises(SkillbookError, match="was removed"):
        book.release_skill(sid, "back")
    assert [o.type for o in book.operations] == ["ADD", "QUARANTINE", "TAG", "UPDATE", "REMOVE"]


def test_loading_stays_strict_and_the_journal_carries_the_quarantine(tmp_path: Path) -> None:
    book, sid = _seeded()
    mark = SkillbookMark.of(book)
    saved = book.to_dict()
    book.tag_skill(sid, -1, insight_source=_source("a"))
    book.tag_skill(sid, -1, insight_source=_source("b"))
    book.quarantine_skill(sid, "harmful twice", evidence=["a", "b"])
    rebuilt = Skillbook.from_dict(apply_deltas(saved, [delta_since(book, mark)], source="test"))
    assert rebuilt.to_dict() == book.to_dict()
    assert rebuilt.require_skill(sid).quarantine == book.require_skill(sid).quarantine
    doc = book.to_dict()
    doc["skills"][0]["quarantine"]["by"] = "someone"
    with pytest.raises(SkillbookFormatError, match="quarantine"):
        Skillbook.from_dict(doc)
    doc = book.to_dict()
    doc["operations"][-1]["evidence"] = "a"
    with pytest.raises(SkillbookFormatError, match="evidence"):
        Skillbook.from_dict(doc)
    untouched = Skillbook()
    untouched.add_skill("harness", "Rate limits stall the runner.", ["runtime"])
    assert "quarantine" not in untouched.to_dict()["skills"][0]  # files without quarantines are unchanged
    assert "evidence" not in untouched.to_dict()["operations"][0]


def test_the_ledger_reads_only_new_operations_and_survives_a_rolled_back_batch() -> None:
    book, sid = _seeded()
    book.tag_skill(sid, -1, insight_source=_source("a"))
    ledger = evidence_ledger(book)
    assert list(ledger.evidence(sid).harmful) == ["a"]
    with pytest.raises(SkillbookError):
        book.apply_operations(
            [
                UpdateOperation(type="TAG", skill_id=sid, delta=-1),
                UpdateOperation(type="TAG", skill_id="nope", delta=1),
            ],
            insight_source=_source("b"),
        )
    book.tag_skill(sid, 1, insight_source=_source("c"))
    assert evidence_ledger(book) is ledger
    assert list(ledger.evidence(sid).harmful) == ["a"] and list(ledger.evidence(sid).helpful) == ["c"]


def test_the_thresholds_come_from_ace_eval_toml_and_flags(tmp_path: Path) -> None:
    config = tmp_path / "ace-eval.toml"
    config.write_text("[e2e.steps]\nquarantine = { min_harmful_traces = 3 }\n", encoding="utf-8")
    flags = {"traces": tmp_path, "no_benchmark": True}
    planned = {p.registered.name: p for p in plan_run_pipeline(resolve_settings(flags, config=config))}
    assert planned["quarantine"].record()["options"] == {"min_harmful_traces": 3, "min_margin": 1}
    flagged = resolve_settings({**flags, "steps": {"quarantine": {"min_margin": "2"}}}, config=config)
    options = {p.registered.name: p for p in plan_run_pipeline(flagged)}["quarantine"].record()["options"]
    assert options == {"min_harmful_traces": 3, "min_margin": 2}
    off = resolve_settings({**flags, "no_steps": ("quarantine",)}, config=config)
    assert "quarantine" not in [p.registered.name for p in plan_run_pipeline(off)]
    config.write_text("[e2e.steps]\nquarantine = { min_harmful_traces = 1 }\n", encoding="utf-8")
    with pytest.raises(StepConfigError, match="min_harmful_traces"):
        plan_run_pipeline(resolve_settings(flags, config=config))


@pytest.mark.parametrize("sm_sessions", ["concurrent", "ordered"])
def test_parallel_samples_quarantine_a_skill_once_and_the_journal_resumes_it(tmp_path: Path, sm_sessions: str) -> None:
    book, sid = _seeded()
    reflector, manager = scripted_roles()
    config = TrainingConfig(max_workers=3, sm_sessions=sm_sessions, checkpoint_dir=tmp_path)  # type: ignore[arg-type]
    traces = [make_trace(n, "refunds", skills_in_context=[sid]) for n in range(1, 6)]
    result = Trainer(reflector=reflector, skill_manager=manager, config=config).run(traces, book)
    assert not result.errors
    held = [o for o in result.skillbook.operations if o.type == "QUARANTINE"]
    assert len(held) == 1 and held[0].skill_id == sid and len(held[0].evidence or []) >= 2
    assert [op["type"] for s in result.samples for op in s.operations].count("QUARANTINE") == 1
    resumed, _ = load_checkpoint(tmp_path) or (None, None)
    assert (
        resumed is not None and resumed.require_skill(sid).quarantine == result.skillbook.require_skill(sid).quarantine
    )


@pytest.mark.parametrize("injection", ["prompt", "top-k"])
def test_the_agent_never_sees_a_quarantined_skill(injection: str) -> None:
    book, sid = _seeded()
    other = book.add_skill("context", "Refunds to a gift card need the card id.", ["refunds"], "Ask for the card id.")
    query = "I want a refund, the fare rules say I can"
    shown = render_skills(book, injection, query=query, top_k=5, embedder=EMBEDDER)  # type: ignore[arg-type]
    assert sid in shown.skill_ids and sid in shown.text
    book.quarantine_skill(sid, "harmful on two traces")
    shown = render_skills(book, injection, query=query, top_k=5, embedder=EMBEDDER)  # type: ignore[arg-type]
    assert shown.skill_ids == (other.id,) and sid not in shown.text


def test_a_new_insight_starts_the_evidence_over_and_a_widening_does_not() -> None:
    """Issue #24: tags before an UPDATE of the insight judged another action, so they no longer count."""
    book, sid = _seeded()
    book.tag_skill(sid, -1, insight_source=_source("t:1"))
    book.tag_skill(sid, -1, insight_source=_source("t:2"))
    skill = book.require_skill(sid)
    book.update_skill(sid, skill.issue + " Also for vouchers.", ["refunds", "vouchers"], insight_source=_source("t:3"))
    assert list(evidence_ledger(book).evidence(sid).harmful) == ["t:1", "t:2"]  # a widening keeps the evidence
    book.update_skill(sid, skill.issue, insight="Read the fare rules aloud first.", insight_source=_source("t:4"))
    evidence = evidence_ledger(book).evidence(sid)
    assert (list(evidence.harmful), list(evidence.harmful_ever)) == ([], ["t:1", "t:2"])
    book.tag_skill(sid, -1, insight_source=_source("t:5"))
    (kpis,) = skill_kpis(book)
    assert (kpis.harmful_traces, kpis.window_harmful_traces, kpis.status) == (3, ("t:5",), "active")
