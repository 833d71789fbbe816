"""The reflectors read the grader's comparison with the gold (`<grader_diff>`), and `grader_feedback=False`
takes it away: scripted models, assertions on the messages they received."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from _ace_scripts import Script
from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo

from ace import Skillbook
from ace.embeddings.test import TestEmbedder
from ace.reflector.recursive import RecursiveConfig, RecursiveReflector
from ace.reflector.simple import make_reflector
from ace.reflector.trace_view import render_trace, without_grader
from ace.sandbox.runner import SandboxLimits
from ace_eval.collection import read_collection
from ace_eval.collection.importers.tau_bench import import_tau_bench

DEMO = Path(__file__).resolve().parents[3] / "examples" / "demo-collection"
DIFF = 'update_reservation_flights.payment_id: gave "credit_card_7781204", gold "gift_card_2290446"'
ANALYSIS: dict[str, Any] = {
    "error_identification": "Message 12 refunded to credit_card_7781204; the gold uses gift_card_2290446.",
    "root_cause_analysis": "The agent never asked which payment method to use.",
    "correct_approach": "Ask which gift card or card to refund, then update_reservation_flights.",
    "key_insight": "Ask which payment_id to use before update_reservation_flights.",
    "skill_tags": [],
}


def demo_trace(trace_id: str = "change-flight-gift-card-trial-0") -> dict[str, Any]:
    _, traces = read_collection(DEMO)
    return next(t.model_dump() for t in traces if t.trace_id == trace_id)


def first_prompt(messages: list[ModelMessage]) -> str:
    first = messages[0]
    assert isinstance(first, ModelRequest)
    return "\n".join(str(getattr(p, "content", "")) for p in first.parts)


def answer(_messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    [output] = info.output_tools
    return ModelResponse(parts=[ToolCallPart(output.name, ANALYSIS)])


def simple_prompt(trace: dict[str, Any], **options: Any) -> str:
    script = Script(answer, name="scripted-reflector")
    reflector = make_reflector("simple", script.model, **options)
    asyncio.run(reflector.reflect(trace, Skillbook()))
    [messages] = script.seen
    return first_prompt(messages)


def test_the_simple_reflector_receives_the_differing_argument_with_both_values() -> None:
    trace = demo_trace()
    prompt = simple_prompt(trace)
    block = prompt[prompt.index("<grader_diff>") : prompt.index("</grader_diff>")]
    assert DIFF in block
    assert "different write update_reservation_flights (message [12])" in block
    assert "final database: differs from the one the gold actions produce" in block
    # the comparison comes last in the trace, after the ground truth, so a trimmed prompt keeps it
    assert prompt.index("</ground_truth>") < prompt.index("<grader_diff>") < prompt.index("<skills_in_context>")


def test_without_grader_feedback_the_simple_reflector_sees_only_outcome_and_ground_truth() -> None:
    trace = demo_trace()
    prompt = simple_prompt(trace, grader_feedback=False)
    assert "<grader_diff>" not in prompt and "gave " not in prompt
    assert trace["feedback"] in prompt and "<ground_truth>" in prompt
    assert render_trace(without_grader(trace)) in prompt
    assert without_grader(trace) == {k: v for k, v in trace.items() if k != "grader"}


def test_without_the_conversation_a_small_model_reads_the_task_outcome_and_comparison_only() -> None:
    trace = demo_trace()
    full, short = simple_prompt(trace), simple_prompt(trace, conversation=False)
    assert "<conversation" in full and "<conversation" not in short and "[12] assistant" not in short
    for part in ("<task>", trace["feedback"], "<ground_truth>", DIFF):
        assert part in short, part
    assert "<skills_in_context>" in full and "<skills_in_context>" not in short  # none were in context
    listed = simple_prompt({**trace, "skills_in_context": ["context-00009"]}, conversation=False)
    assert "<skills_in_context>" in listed and "context-00009" in listed
    assert len(short) < len(full) // 2
    assert short.index("<task>") < short.index("<outcome>") < short.index("<grader_diff>")


def test_a_trace_without_grader_has_no_block() -> None:
    trace = {**demo_trace(), "grader": None}
    assert "<grader_diff>" not in simple_prompt(trace)


def rr_session(trace: dict[str, Any], *, grader_feedback: bool = True) -> Script:
    code = "print('grader' in trace, trace.get('grader', {}).get('actions', [{}])[0].get('tool'))"
    script = Script(
        lambda _m, _i: ModelResponse(parts=[ToolCallPart("execute_code", {"code": code})]),
        lambda _m, _i: ModelResponse(parts=[ToolCallPart("final_result", ANALYSIS)]),
        name="scripted-rr",
    )
    reflector = RecursiveReflector(
        script.model,
        config=RecursiveConfig(sandbox=SandboxLimits(timeout_s=5.0, memory_mb=128)),
        embedder=TestEmbedder(),
        grader_feedback=grader_feedback,
    )
    asyncio.run(reflector.reflect(trace, Skillbook()))
    return script


def code_output(script: Script) -> str:
    last = script.seen[1][-1]
    assert isinstance(last, ModelRequest)
    [result] = [p.model_response_str() for p in last.parts if isinstance(p, ToolReturnPart)]
    return result


def test_the_recursive_reflector_gets_the_comparison_in_its_prompt_and_its_code() -> None:
    script = rr_session(demo_trace())
    prompt = first_prompt(script.seen[0])
    assert DIFF in prompt[prompt.index("<grader_diff>") : prompt.index("</grader_diff>")]
    assert prompt.index("<grader_diff>") < prompt.index("<outline")
    assert "True update_reservation_flights" in code_output(script)


def test_the_recursive_reflector_without_grader_feedback() -> None:
    script = rr_session(demo_trace(), grader_feedback=False)
    assert "<grader_diff>" not in first_prompt(script.seen[0])
    assert "False None" in code_output(script)


def test_a_real_failed_run_reaches_the_reflector_with_its_wrong_argument(airline_data: Path) -> None:
    imported = import_tau_bench(airline_data / "trajectories-gpt-4o-tasks-0-29.json")
    trace = next(t for t in imported.traces if t.trace_id == "task-3-trial-0").model_dump()
    prompt = simple_prompt(trace)
    assert 'update_reservation_flights.cabin: gave "business", gold "economy"' in prompt
    assert "missing write update_reservation_baggages(" in prompt
