"""`RecursiveReflector`: a `RecursiveAgent` session (`rr.session`) that investigates a trace with tools.

The model sees the task, the outcome, the ground truth and a one-line-per-message outline; it reads the trace
through the tools of `rr.tools` (slices, tool calls, failures, the skillbook, sandboxed code) and returns a
structured `Reflection`. Its skill tags are checked like the simple reflector's (`check_skill_tags`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from pydantic_ai import RunContext
from pydantic_ai.capabilities import AbstractCapability
from pydantic_ai.models import Model
from pydantic_ai.settings import ModelSettings

from ace.agents.instrumentation import Instrument, instrumentation
from ace.agents.recursive import RecursiveAgent
from ace.core.skillbook import Skillbook
from ace.embeddings.base import Embedder
from ace.llm import infer_model
from ace.observability import AttributeInput
from ace.reflector.base import (
    ReflectorError,
    ReflectorResult,
    TagCheck,
    check_skill_tags,
    trace_attributes,
)
from ace.reflector.prompts import RR_PROMPT, rr_task_prompt
from ace.reflector.recursive.config import RecursiveConfig
from ace.reflector.recursive.tools import RRDeps, rr_tools
from ace.reflector.reflection import Reflection
from ace.reflector.trace_view import TraceView, skills_in_context, without_grader

__all__ = ["RecursiveReflector"]


class RecursiveReflector:
    """Reflects on a trace in a budgeted tool-calling session: reads it by slices and computes over it."""

    def __init__(
        self,
        model: Model | str | None = None,
        *,
        config: RecursiveConfig | None = None,
        embedder: Embedder | None = None,
        model_settings: ModelSettings | None = None,
        instrument: Instrument = None,
        instructions: str = RR_PROMPT,
        grader_feedback: bool = True,
    ) -> None:
        """Build the reflector.

        Args:
            model: A pydantic-ai model, or a model string routed by `ace.llm.infer_model` (role `reflector`).
            config: Budgets, prompt caching, tool sizes, sandbox limits, content recording.
            embedder: Embedder for `search_skillbook` (default: the skillbook index's, else the offline MiniLM).
            model_settings: Temperature, max tokens and the like; `config` adds the prompt-cache setting.
            instrument: pydantic-ai instrumentation for these sessions only (default: the global setting).
            instructions: The system prompt.
            grader_feedback: Show the trace's `grader` comparison with the gold (in the prompt and to
                `execute_code`); `False` investigates from the outcome and ground truth alone.
        """
        self.config = config or RecursiveConfig()
        self.embedder = embedder
        self.grader_feedback = grader_feedback
        self.model = infer_model(model, role="reflector")
        settings = ModelSettings(**(model_settings or {}))
        settings.setdefault("cache", self.config.cache_setting)
        self._capabilities: tuple[AbstractCapability[RRDeps], ...] = instrumentation(instrument)
        self.agent: RecursiveAgent[RRDeps, Reflection] = RecursiveAgent(
            self.model,
            instructions=instructions,
            tools=rr_tools(),
            deps_type=RRDeps,
            output_type=Reflection,
            span_label="rr",
            budget=self.config.budget,
            tool_retries=self.config.tool_retries,
            model_settings=settings,
            record_content=self.config.record_content,
            name="recursive_reflector",
        )

        @self.agent.agent.output_validator
        def _valid_tags(ctx: RunContext[RRDeps], reflection: Reflection) -> Reflection:
            return check_skill_tags(reflection, ctx.deps.tags, retry=ctx.retry, max_retries=ctx.max_retries)

    async def reflect(self, trace: Mapping[str, Any], skillbook: Skillbook) -> ReflectorResult:
        """Investigate `trace` in one `rr.session` and return its reflection.

        Raises:
            ReflectorError: the session ended (budget spent, model misbehaving) without a reflection.
        """
        if not self.grader_feedback:
            trace = without_grader(trace)
        view = TraceView.from_trace(trace)
        in_context = skills_in_context(trace, skillbook)
        deps = RRDeps(
            trace=trace,
            view=view,
            trace_json=json.dumps(dict(trace), ensure_ascii=False, default=str).encode(),
            skillbook=skillbook,
            tags=TagCheck(allowed=in_context.ids),
            config=self.config,
            embedder=self.embedder,
        )
        prompt = rr_task_prompt(
            trace,
            view,
            in_context,
            index_lines=self.config.max_list_messages,
            width=self.config.preview_chars,
            max_requests=self.config.max_requests,
        )

        def end_attributes() -> dict[str, AttributeInput]:
            return {
                "ace.tools_called": sum(deps.calls.values()),
                "ace.code_runs": deps.calls["execute_code"],
                "ace.code_failures": deps.code_failures,
                "ace.dropped_tags_count": len(deps.tags.dropped),
            }

        session = await self.agent.run(
            prompt,
            deps=deps,
            attributes={"ace.reflector": "rr", **trace_attributes(trace, view, len(in_context.skills))},
            end_attributes=end_attributes,
            capabilities=self._capabilities,
        )
        if session.output is None:
            raise ReflectorError(
                f"the recursive reflector stopped without a reflection ({session.stop_reason}) after "
                f"{session.usage.requests} requests: use the simple reflector (ace-eval e2e --reflector-type simple), "
                "or from Python raise RecursiveConfig.max_requests / max_tokens",
                usage=session.usage,
            )
        return ReflectorResult(
            reflection=session.output,
            usage=session.usage,
            model_name=self.model.model_name,
            dropped_tags=tuple(deps.tags.dropped),
            tool_calls=sum(deps.calls.values()),
        )
