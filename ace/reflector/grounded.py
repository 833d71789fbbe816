"""`GroundedReflector` (`--reflector-type grounded`): a reflection from the grader's structured verdict, no LLM.

The verdict (`ace.reflector.verdict`: the gold-action comparison of tau-bench and the demo collection, or tau2's
reward breakdown) says which expected action was missing or made with other arguments, which write should not
have happened, what the user was never told, which policy assertion failed. This reflector writes those items
into the four fields of a `Reflection`, names the tools whose calls errored, and proposes no invented cause. A
trace with reward 1 gets a "nothing went wrong" reflection that tags the skills it had in context as helpful.
A trace without a structured verdict is refused (`ReflectorError`): it needs an LLM reflector.

On a failure no skill is tagged: the verdict says what went wrong, not whether a skill in context caused it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic_ai.usage import RunUsage

from ace.core.skillbook import Skillbook
from ace.observability import ace_span
from ace.reflector.base import ReflectorError, ReflectorResult, trace_attributes
from ace.reflector.reflection import Reflection, SkillTag
from ace.reflector.trace_view import TraceView, skills_in_context
from ace.reflector.verdict import Finding, Verdict, read_verdict

__all__ = ["GROUNDED_MODEL_NAME", "GroundedReflector", "grounded_reflection"]

GROUNDED_MODEL_NAME = "grounded"
"""`ReflectorResult.model_name` of a grounded reflection (no model ran)."""
_MAX_TOOL_ERRORS = 3


class GroundedReflector:
    """Reflects from the grader's verdict in the trace; refuses a trace that has none."""

    def __init__(self, model: object = None, **_: object) -> None:
        """No model: `model` and other options `make_reflector` passes are accepted and unused."""
        self.model = None

    async def reflect(self, trace: Mapping[str, Any], skillbook: Skillbook) -> ReflectorResult:
        """The reflection the verdict implies (see the module docstring)."""
        view = TraceView.from_trace(trace)
        in_context = skills_in_context(trace, skillbook)
        attributes = {"ace.reflector": "grounded", **trace_attributes(trace, view, len(in_context.skills))}
        with ace_span("reflect", attributes) as span:
            verdict = read_verdict(trace)
            if verdict is None:
                raise ReflectorError(
                    f"trace {trace.get('trace_uid') or trace.get('trace_id')!r} carries no structured verdict from a "
                    "grader (no `grader` comparison with the gold, no tau2 `metadata.reward_info`): the grounded "
                    "reflector does not guess; use an LLM reflector (--reflector-type simple)"
                )
            reflection = grounded_reflection(verdict, view, [s.id for s in in_context.skills])
            span.set_attribute("ace.findings_count", 0 if _succeeded(verdict) else len(verdict.findings))
            span.set_attribute("ace.tags_count", len(reflection.skill_tags))
        return ReflectorResult(reflection=reflection, usage=RunUsage(), model_name=GROUNDED_MODEL_NAME)


def grounded_reflection(verdict: Verdict, view: TraceView, in_context: list[str]) -> Reflection:
    """The reflection for `verdict`: success (skills in context tagged helpful) or the findings in words."""
    if _succeeded(verdict):
        return Reflection(
            error_identification="",
            root_cause_analysis="",
            correct_approach="",
            key_insight="Nothing went wrong: the grader found the run equal to the expected outcome.",
            skill_tags=[SkillTag(skill_id=i, tag="helpful") for i in in_context],
        )
    findings = list(verdict.findings)
    errored = _tool_errors(view)
    if not findings:
        reward = f"reward {verdict.reward:g}" if verdict.reward is not None else "no full reward"
        findings = [Finding(kind="database_differs", detail=f"the grader gave {reward} without naming a difference")]
    return Reflection(
        error_identification=" ".join([_what(f) for f in findings] + errored),
        root_cause_analysis=" ".join(dict.fromkeys(_why(f) for f in findings)),
        correct_approach=" ".join(dict.fromkeys(_remedy(f) for f in findings)),
        key_insight=_insight(findings[0]),
        skill_tags=[],
    )


def _succeeded(verdict: Verdict) -> bool:
    return verdict.reward is not None and verdict.reward >= 1.0


def _tool_errors(view: TraceView) -> list[str]:
    failed = [c for c in view.tool_calls if c.error_kind in ("error", "exception")]
    tools = list(dict.fromkeys(c.name for c in failed))
    if not tools:
        return []
    shown = ", ".join(tools[:_MAX_TOOL_ERRORS]) + (" and others" if len(tools) > _MAX_TOOL_ERRORS else "")
    return [f"The agent's calls of {shown} returned errors ({len(failed)} in all)."]


def _what(f: Finding) -> str:
    """`error_identification` sentence: what the grader saw."""
    match f.kind:
        case "wrong_arguments":
            return f"The agent called {f.tool} with arguments that differ from the expected call: {f.detail}."
        case "missing_action":
            return f"The agent never made the expected call {f.detail}."
        case "forbidden_write":
            return f"The agent made the write {f.detail}, which the expected outcome does not include."
        case "not_communicated":
            return f"The agent never told the user {f.detail!r}."
        case "policy_not_met":
            return f"The agent did not meet the policy point: {f.detail}."
        case "database_differs":
            return f"The agent left the database different from the expected one: {f.detail}."


def _why(f: Finding) -> str:
    match f.kind:
        case "wrong_arguments":
            return f"This happened because the {f.tool} call used other values for {', '.join(f.arguments)}."
        case "missing_action" if f.error:
            return f"This happened because the agent's {f.tool} attempt failed and was not corrected."
        case "missing_action":
            return f"This happened because the agent did not carry out the {f.tool} step the task required."
        case "forbidden_write":
            return f"This happened because the agent called {f.tool} where the policy does not allow that change."
        case "not_communicated":
            return "This happened because the agent did not state the required result in a reply."
        case "policy_not_met":
            return "This happened because the agent's conduct departed from the policy."
        case "database_differs":
            return "This happened because the agent's writes did not produce the expected database."


def _remedy(f: Finding) -> str:
    match f.kind:
        case "wrong_arguments":
            return f"The agent should call {f.expected}."
        case "missing_action":
            return f"The agent should make the call {f.expected}."
        case "forbidden_write":
            return f"The agent should not call {f.tool} here: check the policy's conditions for it first."
        case "not_communicated":
            return f"The agent should tell the user {f.detail!r}."
        case "policy_not_met":
            return f"The agent should follow the policy point: {f.detail}."
        case "database_differs":
            return "The agent should make exactly the writes the task requires."


def _insight(f: Finding) -> str:
    """The reusable lesson: named by the tool (or policy point) and the failure kind, without this trace's ids."""
    match f.kind:
        case "wrong_arguments":
            return f"Before calling {f.tool}, check {', '.join(f.arguments)} against the user's request and the policy."
        case "missing_action":
            return f"When the task requires {f.tool}, make that call with the arguments the policy and user specify."
        case "forbidden_write":
            return f"Call {f.tool} only after confirming the policy allows it for this case; otherwise decline."
        case "not_communicated":
            return "Tell the user the concrete result (amounts, ids, outcomes) in a reply, not only in tool calls."
        case "policy_not_met":
            return f"Follow the policy point: {f.detail}."
        case "database_differs":
            return "Make exactly the writes the task requires and no others."
