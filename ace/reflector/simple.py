"""Reflectors: turn one trace into a `Reflection`. `SimpleReflector` is one structured-output call over the trace.

Every reflector implements `Reflector.reflect(trace, skillbook)`. Skill tags are checked against the skills the
trace had in context (`trace["skills_in_context"]`, still active in the skillbook): a tag naming another skill
is sent back to the model once with the valid ids, and dropped (recorded in `ReflectorResult.dropped_tags`)
if the model insists, so a reflection never tags a skill the agent could not have used.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Literal

from pydantic_ai import Agent, RunContext
from pydantic_ai.capabilities import AbstractCapability
from pydantic_ai.exceptions import UnexpectedModelBehavior, UsageLimitExceeded
from pydantic_ai.models import Model
from pydantic_ai.settings import ModelSettings

from ace.agents.instrumentation import Instrument, instrumentation
from ace.core.skillbook import Skillbook
from ace.llm import infer_model
from ace.observability import ace_span
from ace.reflector.base import (
    Reflector,
    ReflectorError,
    ReflectorResult,
    TagCheck,
    check_skill_tags,
    split_skill_tags,
    trace_attributes,
)
from ace.reflector.prompts import REFLECTOR_PROMPT, reflector_task_prompt
from ace.reflector.reflection import Reflection
from ace.reflector.trace_view import TraceView, skills_in_context, without_grader

__all__ = [
    "Reflector",
    "ReflectorError",
    "ReflectorKind",
    "ReflectorResult",
    "SimpleReflector",
    "TagCheck",
    "check_skill_tags",
    "make_reflector",
    "split_skill_tags",
    "trace_attributes",
]

ReflectorKind = Literal["simple", "rr", "grounded"]


# ---------------------------------------------------------------------------------------- simple reflector
class SimpleReflector:
    """One structured-output model call over the rendered trace and the skills that were in context."""

    def __init__(
        self,
        model: Model | str | None = None,
        *,
        model_settings: ModelSettings | None = None,
        max_tool_result_chars: int = 3_000,
        max_system_chars: int = 8_000,
        output_retries: int = 2,
        instructions: str = REFLECTOR_PROMPT,
        instrument: Instrument = None,
        record_content: bool = False,
        grader_feedback: bool = True,
        conversation: bool = True,
    ) -> None:
        """Build the reflector.

        Args:
            model: A pydantic-ai model, or a model string routed by `ace.llm.infer_model` (role `reflector`).
            model_settings: Temperature, max tokens and the like.
            max_tool_result_chars: Longer tool results are shown head and tail around a truncation marker.
            max_system_chars: Same for the trace's system prompt (the agent's policy); a small model reads a short
                prompt faster and loses less of it.
            output_retries: How often a malformed reflection (or unknown skill tags) is sent back for a fix.
            instructions: The system prompt.
            instrument: pydantic-ai instrumentation for these calls only (default: the global setting).
            record_content: Put the prompt and the reflection on the `reflect` span.
            grader_feedback: Show the trace's `grader` comparison with the gold (`<grader_diff>`); `False`
                reflects on the outcome and ground truth alone (to measure what the comparison adds).
            conversation: `False` leaves the conversation out of the prompt (the task, the outcome, the ground
                truth and the grader's comparison remain): for a small model, which copies the transcript's ids
                and JSON into its reflection and reads a shorter prompt several times faster.
        """
        if output_retries < 0:
            raise ValueError(f"output_retries must be 0 or more, got {output_retries}")
        self.model = infer_model(model, role="reflector")
        self.max_tool_result_chars = max_tool_result_chars
        self.max_system_chars = max_system_chars
        self.record_content = record_content
        self.grader_feedback = grader_feedback
        self.conversation = conversation
        self._capabilities: tuple[AbstractCapability[TagCheck], ...] = instrumentation(instrument)
        self.agent: Agent[TagCheck, Reflection] = Agent(
            self.model,
            output_type=Reflection,
            instructions=instructions,
            deps_type=TagCheck,
            model_settings=model_settings,
            retries={"output": output_retries},
            name="reflector",
        )

        @self.agent.output_validator
        def _valid_tags(ctx: RunContext[TagCheck], reflection: Reflection) -> Reflection:
            return check_skill_tags(reflection, ctx.deps, retry=ctx.retry, max_retries=ctx.max_retries)

    async def reflect(self, trace: Mapping[str, Any], skillbook: Skillbook) -> ReflectorResult:
        """Reflect on `trace` in one structured-output call (plus retries for an invalid reflection)."""
        if not self.grader_feedback:
            trace = without_grader(trace)
        view = TraceView.from_trace(trace)
        in_context = skills_in_context(trace, skillbook)
        prompt = reflector_task_prompt(
            trace,
            in_context,
            max_tool_result_chars=self.max_tool_result_chars,
            max_system_chars=self.max_system_chars,
            conversation=self.conversation,
        )
        check = TagCheck(allowed=in_context.ids)
        attributes = {"ace.reflector": "simple", **trace_attributes(trace, view, len(in_context.skills))}
        if self.record_content:
            attributes["ace.prompt"] = prompt
        with ace_span("reflect", attributes) as span:
            try:
                result = await self.agent.run(prompt, deps=check, capabilities=self._capabilities)
            except (UnexpectedModelBehavior, UsageLimitExceeded) as e:
                raise ReflectorError(
                    f"the reflector model did not return a valid reflection ({e}); use a stronger reflector model "
                    "or raise SimpleReflector(output_retries=...)"
                ) from e
            usage = result.usage
            reflection = result.output
            for key, value in {
                "ace.requests": usage.requests,
                "ace.input_tokens": usage.input_tokens,
                "ace.output_tokens": usage.output_tokens,
                "ace.tags_count": len(reflection.skill_tags),
                "ace.dropped_tags_count": len(check.dropped),
            }.items():
                span.set_attribute(key, value)
            if self.record_content:
                span.set_attribute("ace.output", json.dumps(reflection.model_dump(), ensure_ascii=False))
        return ReflectorResult(
            reflection=reflection,
            usage=usage,
            model_name=self.model.model_name,
            dropped_tags=tuple(check.dropped),
        )


# ---------------------------------------------------------------------------------------------- factory
def make_reflector(kind: ReflectorKind, model: Model | str | None = None, **kwargs: Any) -> Reflector:
    """The reflector `--reflector-type` names: `"simple"` (`SimpleReflector`), `"rr"` (`RecursiveReflector`) or
    `"grounded"` (`GroundedReflector`: from the grader's verdict, no model; `model` is unused).

    Keyword arguments go to the reflector's constructor (e.g. `config=RecursiveConfig(...)` for `"rr"`).
    """
    if kind == "simple":
        return SimpleReflector(model, **kwargs)
    if kind == "rr":
        # Imported here: the recursive reflector's sandbox and tools load only when it is asked for.
        from ace.reflector.recursive import RecursiveReflector

        return RecursiveReflector(model, **kwargs)
    if kind == "grounded":
        from ace.reflector.grounded import GroundedReflector

        return GroundedReflector()
    raise ValueError(
        f"unknown reflector kind {kind!r}: use 'simple' (one call), 'rr' (recursive, with tools) or 'grounded' "
        "(from the grader's verdict, no model)"
    )
