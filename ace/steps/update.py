"""`UpdateStep`: one skill-manager session that turns the context's reflections into skillbook edits."""

from __future__ import annotations

import dataclasses

from ace.implementations.skill_manager import SkillManager
from ace.steps.context import StepContext, source_of

__all__ = ["UpdateStep"]


class UpdateStep:
    """Runs `SkillManager.update_skills_async` with the provenance of the context's trace, epoch and reflection."""

    name = "update"
    requires: frozenset[str] = frozenset({"trace", "skillbook", "epoch", "reflections"})
    provides: frozenset[str] = frozenset({"sm_result"})

    def __init__(self, skill_manager: SkillManager) -> None:
        self.skill_manager = skill_manager

    async def __call__(self, ctx: StepContext) -> StepContext:
        """Apply `ctx.reflections`; every mutation's `InsightSource` names `ctx.trace` and `ctx.epoch`.

        The source carries the trace's `trace_uid`, `source_system`, `trace_id` and `question` (as
        `sample_question`), the epoch, and the first reflection's `error_identification` and `key_insight`.
        """
        if not ctx.reflections:
            raise ValueError("UpdateStep needs at least one reflection: run ReflectStep before it")
        source = source_of(ctx)
        result = await self.skill_manager.update_skills_async(ctx.reflections, ctx.skillbook, source=source)
        return dataclasses.replace(ctx, sm_result=result).with_usage("skill_manager", result.usage)
