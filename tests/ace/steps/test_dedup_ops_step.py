"""`DeduplicateStep` with a scripted judge: retries a decision that does not fit, applies it, never asks twice."""

from __future__ import annotations

import asyncio
import re
from typing import Any

import pytest
from _ace_scripts import first_prompt, make_trace
from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.usage import RunUsage

from ace import Skillbook
from ace.embeddings.test import TestEmbedder
from ace.pipeline.context import StepContext
from ace.pipeline.pipeline import Pipeline, PipelineError
from ace.skill_manager.deps import AppliedOperation
from ace.skill_manager.manager import SMResult
from ace.steps.deduplicate import DeduplicateStep, pairs_involving

ISSUE = "In {domain} cancellations the agent cancels the booking before the user explicitly confirms it."


def near_duplicates(*domains: str) -> Skillbook:
    book = Skillbook()
    for domain in domains:
        book.add_skill("context", ISSUE.format(domain=domain), [domain, "cancel"], "Wait for an explicit yes.")
    book.add_skill("harness", "The benchmark runner times out after sixty seconds.", ["runner"])
    return book


def changed(*skill_ids: str) -> SMResult:
    ops = tuple(AppliedOperation(tool="add_skill", operation_type="ADD", skill_id=i) for i in skill_ids)
    return SMResult(
        operations=ops, refusals=(), summary="ok", completed=True, stop_reason=None, usage=RunUsage(requests=1)
    )


class Judge:
    """Answers with the scripted decisions in turn; records the prompts and retry messages it saw."""

    def __init__(self, *answers: tuple[str, dict[str, Any]]) -> None:
        self.answers = list(answers)
        self.prompts: list[str] = []
        self.retries: list[str] = []

    def __call__(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        last = messages[-1]
        assert isinstance(last, ModelRequest)
        for part in last.parts:
            if isinstance(part, ToolReturnPart) and part.outcome == "retried":
                self.retries.append(str(part.content))
        self.prompts.append(first_prompt(messages))
        assert self.answers, "the judge was asked more often than scripted"
        kind, args = self.answers.pop(0)
        names = {t.name for t in info.output_tools}
        assert f"final_result_{kind}" in names, names
        return ModelResponse(parts=[ToolCallPart(f"final_result_{kind}", args)])


def step(judge: Judge, **kw: Any) -> DeduplicateStep:
    return DeduplicateStep(FunctionModel(judge), threshold=0.8, embedder=TestEmbedder(), **kw)


def test_judge_retries_a_decision_outside_the_pair_then_merges() -> None:
    book = near_duplicates("airline", "retail")
    judge = Judge(
        ("MergeDecision", {"keep_id": "harness-00001", "issue": "x", "keywords": ["cancel"], "reason": "r"}),
        (
            "MergeDecision",
            {
                "keep_id": "context-00001",
                "issue": ISSUE.format(domain="airline and retail"),
                "keywords": ["airline", "retail", "cancel"],
                "reason": "one issue in two domains",
            },
        ),
    )
    ctx = StepContext(trace=make_trace(3, "cancel"), skillbook=book, epoch=1, sm_result=changed("context-00002"))
    out = asyncio.run(step(judge)(ctx))
    [decision] = out.dedup_decisions
    assert (decision.kind, decision.updated_id, decision.removed_id) == ("MERGE", "context-00001", "context-00002")
    assert decision.similarity is not None and decision.similarity >= 0.8
    assert "keep_id must be 'context-00001' or 'context-00002'" in judge.retries[0]
    assert 'id="context-00001"' in judge.prompts[0] and 'id="context-00002"' in judge.prompts[0]
    assert out.usage["dedup"].requests == 2
    assert not book.require_skill("context-00002").active
    occ = book.require_skill("context-00001").occurrences[-1]
    assert (occ.trace_uid, occ.epoch, occ.operation_type) == ("demo-test:t03", 1, "UPDATE")


def test_keep_is_not_asked_again() -> None:
    book = near_duplicates("airline", "retail")
    judge = Judge(("KeepDecision", {"reason": "different policies"}))
    ctx = StepContext(trace=make_trace(1, "cancel"), skillbook=book, sm_result=changed("context-00001"))
    first = asyncio.run(step(judge)(ctx))
    assert [d.kind for d in first.dedup_decisions] == ["KEEP"]
    again = asyncio.run(step(judge)(ctx))  # the judge has no answer left: asking would fail the test
    assert again.dedup_decisions == ()
    assert "dedup" not in again.usage
    assert book.keep_pairs == (("context-00001", "context-00002"),)


def test_scope_changed_only_looks_at_changed_skills() -> None:
    book = near_duplicates("airline", "retail", "hotel")
    embedder = TestEmbedder()
    around_hotel = pairs_involving(book, ["context-00003"], threshold=0.8, embedder=embedder)
    assert {p.key for p in around_hotel} == {
        frozenset({"context-00001", "context-00003"}),
        frozenset({"context-00002", "context-00003"}),
    }
    assert pairs_involving(book, ["harness-00001"], threshold=0.8, embedder=embedder) == []
    assert pairs_involving(book, [], threshold=0.8, embedder=embedder) == []
    judge = Judge()
    ctx = StepContext(trace=make_trace(1, "cancel"), skillbook=book, sm_result=changed("harness-00001"))
    assert asyncio.run(step(judge)(ctx)).dedup_decisions == ()


def test_scope_all_skips_pairs_an_earlier_decision_touched() -> None:
    book = near_duplicates("airline", "retail", "hotel")
    asked: list[tuple[str, str]] = []

    def delete_the_newer(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        pair = re.findall(r'<skill id="([^"]+)"', first_prompt(messages))
        asked.append((pair[0], pair[1]))
        return ModelResponse(
            parts=[ToolCallPart("final_result_DeleteDecision", {"remove_id": max(pair), "reason": "redundant"})]
        )

    judge = DeduplicateStep(FunctionModel(delete_the_newer), threshold=0.8, embedder=TestEmbedder(), scope="all")
    out = asyncio.run(judge(StepContext(trace=make_trace(1, "cancel"), skillbook=book)))
    # three candidate pairs; after two deletions the third pair has a removed skill and is not asked
    assert len(asked) == 2 and [d.kind for d in out.dedup_decisions] == ["DELETE", "DELETE"]
    assert [s.id for s in book.skills(section="context")] == ["context-00001"]


def test_max_pairs_bounds_the_judge_calls() -> None:
    book = near_duplicates("airline", "retail", "hotel")
    judge = Judge(("KeepDecision", {"reason": "distinct"}))
    ctx = StepContext(trace=make_trace(1, "cancel"), skillbook=book)
    out = asyncio.run(step(judge, scope="all", max_pairs=1)(ctx))
    assert len(out.dedup_decisions) == 1 and len(book.keep_pairs) == 1


def test_changed_scope_needs_an_update_step_before_it() -> None:
    with pytest.raises(PipelineError, match=r"requires \['sm_result'\]"):
        Pipeline([step(Judge())])
    Pipeline([step(Judge(), scope="all")])
    with pytest.raises(ValueError, match="max_pairs must be at least 1"):
        step(Judge(), max_pairs=0)


def test_a_decision_on_a_skill_a_concurrent_session_rewrote_meanwhile_is_not_applied() -> None:
    book = near_duplicates("airline", "retail")
    widened = ISSUE.format(domain="retail and hotel")
    merge = {
        "keep_id": "context-00001",
        "issue": ISSUE.format(domain="airline and retail"),
        "keywords": ["airline", "retail", "cancel"],
        "reason": "one issue in two domains",
    }

    def judge(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        book.update_skill("context-00002", widened)  # another session widens it while the judge thinks
        return ModelResponse(parts=[ToolCallPart("final_result_MergeDecision", merge)])

    ctx = StepContext(trace=make_trace(3, "cancel"), skillbook=book, sm_result=changed("context-00002"))
    out = asyncio.run(DeduplicateStep(FunctionModel(judge), threshold=0.8, embedder=TestEmbedder())(ctx))
    assert out.dedup_decisions == ()  # the merge was written from the old text: it would drop the widening
    assert book.require_skill("context-00002").active and book.require_skill("context-00002").issue == widened
    assert book.require_skill("context-00001").issue == ISSUE.format(domain="airline")

    # Unchanged meanwhile (a tag only changes counters): the same decision is applied.
    def judge_after_a_tag(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        book.tag_skill("context-00002", 1)
        return ModelResponse(parts=[ToolCallPart("final_result_MergeDecision", merge)])

    out = asyncio.run(DeduplicateStep(FunctionModel(judge_after_a_tag), threshold=0.5, embedder=TestEmbedder())(ctx))
    assert [d.kind for d in out.dedup_decisions] == ["MERGE"] and not book.require_skill("context-00002").active
