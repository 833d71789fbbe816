"""`UpdateStep`: one skill-manager session that turns the context's reflections into skillbook edits."""

from __future__ import annotations

import dataclasses

from ace.pipeline.context import StepContext, source_of
from ace.pipeline.registry import NoOptions, StepEnvironment, StepFactory, need
from ace.skill_manager.manager import SkillManager

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


def _build(_: NoOptions, env: StepEnvironment) -> UpdateStep:
    return UpdateStep(need(env.skill_manager, "update", "skill_manager"))


factory = StepFactory(
    step=UpdateStep,
    phase="update",
    description="A skill-manager session turns the reflection into atomic skillbook edits.",
    options=NoOptions,
    build=_build,
)
