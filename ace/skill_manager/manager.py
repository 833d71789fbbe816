"""`SkillManager`: turns reflections into atomic skillbook edits through one recursive tool-calling session.

Each `update_skills` call is one `sm.session` span: the model sees the reflections, the skill tags the
reflector proposed and the existing skills most similar to the reflections, and edits the skillbook only
through the tools in `ace.skill_manager.tools` (every edit carries its provenance, derived from `source`).
"""

from __future__ import annotations

import asyncio
import warnings
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from pydantic_ai.capabilities import AbstractCapability
from pydantic_ai.models import Model
from pydantic_ai.settings import ModelSettings
from pydantic_ai.usage import RunUsage

from ace.agents.instrumentation import Instrument, instrumentation
from ace.agents.recursive import RecursiveAgent
from ace.core.insight_source import InsightSource, OperationType
from ace.core.rendering import render_skills_xml
from ace.core.skill import Skill
from ace.core.skillbook import Skillbook
from ace.embeddings.base import Embedder
from ace.llm import infer_model
from ace.observability import AttributeInput
from ace.reflector.reflection import Reflection
from ace.retrieval.top_k import retrieve_top_k
from ace.skill_manager.deps import AppliedOperation, Refusal, SMDeps, SMSettings
from ace.skill_manager.prompts import SKILL_MANAGER_PROMPT, sm_task_prompt
from ace.skill_manager.refusals import ArgumentRefusals
from ace.skill_manager.tools import SM_TOOLS

__all__ = ["SMDeps", "SMResult", "SMSettings", "SkillManager"]


@dataclass(frozen=True, kw_only=True)
class SMResult:
    """What one skill-manager session did to the skillbook."""

    operations: tuple[AppliedOperation, ...]
    """Every mutation applied, in order."""
    refusals: tuple[Refusal, ...]
    """Every call sent back to the model for a retry (none of them touched the skillbook), arguments that did not
    fit the tool's schema included."""
    summary: str | None
    """The model's closing sentence; `None` when the session stopped early."""
    completed: bool
    """`False` when a budget ran out or the model exhausted its retries (applied operations still stand)."""
    stop_reason: str | None
    usage: RunUsage
    compactions: int = 0
    repeated_calls: int = 0
    """Tool calls refused because they repeated an earlier call of the session exactly."""

    @property
    def changed_ids(self) -> list[str]:
        """Ids of every skill the session changed, in first-change order."""
        return list(dict.fromkeys(op.skill_id for op in self.operations))

    def ids(self, operation_type: OperationType) -> list[str]:
        """Ids the session applied `operation_type` to, in order (a skill tagged twice appears twice)."""
        return [op.skill_id for op in self.operations if op.operation_type == operation_type]

    @property
    def counts(self) -> dict[OperationType, int]:
        """Number of applied operations per type (every type present, zeros included)."""
        found = Counter(op.operation_type for op in self.operations)
        return {t: found.get(t, 0) for t in ("ADD", "UPDATE", "TAG", "REMOVE")}


class SkillManager:
    """Applies reflections to a skillbook with a pydantic-ai agent whose tools are the atomic skill operations."""

    def __init__(
        self,
        model: Model | str | None,
        *,
        settings: SMSettings | None = None,
        embedder: Embedder | None = None,
        model_settings: ModelSettings | None = None,
        instrument: Instrument = None,
        instructions: str = SKILL_MANAGER_PROMPT,
    ) -> None:
        """Build the skill manager.

        Args:
            model: A pydantic-ai model, or a model string routed by `ace.llm.infer_model` (a litellm string
                such as `bedrock/...`, or `local` / `None` for the embedded offline model).
            settings: Budgets, retries, tool limits, content recording.
            embedder: Embedder for search (default: the skillbook index's, else the offline MiniLM).
            model_settings: Temperature, max tokens and the like for every request.
            instrument: pydantic-ai instrumentation for these sessions only (default: the global setting,
                see `ace.observability.configure_observability`).
            instructions: The system prompt; the default covers the spec's rules.
        """
        self.settings = settings or SMSettings()
        self.embedder = embedder
        self._capabilities: tuple[AbstractCapability[SMDeps], ...] = (ArgumentRefusals(), *instrumentation(instrument))
        self.agent: RecursiveAgent[SMDeps, str] = RecursiveAgent(
            infer_model(model, role="skill_manager"),
            instructions=instructions,
            tools=SM_TOOLS,
            deps_type=SMDeps,
            output_type=str,
            span_label="sm",
            budget=self.settings.budget,
            tool_retries=self.settings.tool_retries,
            model_settings=model_settings,
            record_content=self.settings.record_content,
            name="skill_manager",
        )

    def update_skills(
        self, reflections: Sequence[Reflection], skillbook: Skillbook, *, source: InsightSource
    ) -> SMResult:
        """Apply `reflections` to `skillbook` in one session; every mutation's provenance derives from `source`.

        Blocking; inside a running event loop use `update_skills_async`. Like pydantic-ai's `run_sync`, it runs
        on this thread's event loop (created once, then reused), so that async model clients stay usable.
        """
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return _thread_event_loop().run_until_complete(
                self.update_skills_async(reflections, skillbook, source=source)
            )
        raise RuntimeError("update_skills was called inside a running event loop: use `await update_skills_async(...)`")

    async def update_skills_async(
        self, reflections: Sequence[Reflection], skillbook: Skillbook, *, source: InsightSource
    ) -> SMResult:
        """Async `update_skills`."""
        if not isinstance(source, InsightSource):
            raise TypeError(
                f"source must be an InsightSource (the trace the reflections came from), got {type(source).__name__}"
            )
        reflections = list(reflections)
        if not reflections:
            raise ValueError("update_skills needs at least one reflection: run the reflector on the trace first")
        deps = SMDeps(skillbook=skillbook, current_source=source, embedder=self.embedder, settings=self.settings)
        deps.begin()
        shown = self._relevant_skills(reflections, skillbook)
        deps.saw(shown)
        prompt = sm_task_prompt(
            reflections,
            source=source,
            skillbook=skillbook,
            relevant_skills_xml=render_skills_xml(shown) if shown else "",
            show_trace=self.settings.show_trace,
        )
        tags = [t for r in reflections for t in r.skill_tags]
        attributes: dict[str, AttributeInput] = {
            "ace.trace_uid": source.trace_uid,
            "ace.source_system": source.source_system,
            "ace.trace_id": source.trace_id,
            "ace.epoch": source.epoch,
            "ace.reflections_count": len(reflections),
            "ace.proposed_tags_count": len(tags),
            "ace.context_skills_count": len(shown),
            "ace.context_skill_ids": [s.id for s in shown],
            "ace.active_skills_before": skillbook.active_count,
        }

        def end_attributes() -> dict[str, AttributeInput]:
            counts = Counter(op.operation_type for op in deps.applied)
            return {
                "ace.active_skills_after": skillbook.active_count,
                "ace.ops_added": counts["ADD"],
                "ace.ops_updated": counts["UPDATE"],
                "ace.ops_tagged": counts["TAG"],
                "ace.ops_removed": counts["REMOVE"],
                "ace.refused_count": len(deps.refusals),
                "ace.changed_ids": list(dict.fromkeys(op.skill_id for op in deps.applied)),
            }

        session = await self.agent.run(
            prompt, deps=deps, attributes=attributes, end_attributes=end_attributes, capabilities=self._capabilities
        )
        return SMResult(
            operations=tuple(deps.applied),
            refusals=tuple(deps.refusals),
            summary=session.output,
            completed=session.completed,
            stop_reason=session.stop_reason,
            usage=session.usage,
            compactions=session.compactions,
            repeated_calls=session.repeated_calls,
        )

    def _relevant_skills(self, reflections: Sequence[Reflection], skillbook: Skillbook) -> list[Skill]:
        """Active skills most similar to the reflections, then any tagged skill not already among them."""
        shown: dict[str, Skill] = {}
        query = "\n".join(r.as_prompt_text() for r in reflections).strip()
        if self.settings.context_top_k > 0 and query and skillbook.active_count:
            for skill in retrieve_top_k(skillbook, query, top_k=self.settings.context_top_k, embedder=self.embedder):
                shown[skill.id] = skill
        for tag in (t for r in reflections for t in r.skill_tags):
            tagged = skillbook.get_skill(tag.skill_id)
            if tagged is not None and tagged.active:
                shown.setdefault(tagged.id, tagged)
        return list(shown.values())


def _thread_event_loop() -> asyncio.AbstractEventLoop:
    """This thread's event loop, created and set as current when there is none (or it was closed)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            loop = asyncio.get_event_loop()
    except RuntimeError:
        loop = None
    if loop is None or loop.is_closed():
        loop = asyncio.new_event_loop()
        asyncio.set_event_loop(loop)
    return loop
