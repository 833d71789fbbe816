"""`ReflectStep`: the reflector's analysis of the context's trace."""

from __future__ import annotations

import dataclasses

from ace.core.trace import TraceIdentity
from ace.pipeline.context import StepContext
from ace.pipeline.registry import NoOptions, StepEnvironment, StepFactory, need
from ace.reflector.base import Reflector

__all__ = ["ReflectStep"]


class ReflectStep:
    """Runs `reflector.reflect(ctx.trace, ctx.skillbook)` and stores its reflection and usage on the context."""

    name = "reflect"
    requires: frozenset[str] = frozenset({"trace", "skillbook"})
    provides: frozenset[str] = frozenset({"reflections"})

    def __init__(self, reflector: Reflector) -> None:
        self.reflector = reflector

    async def __call__(self, ctx: StepContext) -> StepContext:
        """Reflect on `ctx.trace`; the reflection is appended to `ctx.reflections`, usage added under `reflector`."""
        if ctx.identity is None:  # fail before spending a model call on a trace that cannot be attributed
            TraceIdentity.of(ctx.trace)
        result = await self.reflector.reflect(ctx.trace, ctx.skillbook)
        return dataclasses.replace(ctx, reflections=(*ctx.reflections, result.reflection)).with_usage(
            "reflector", result.usage
        )


def _build(_: NoOptions, env: StepEnvironment) -> ReflectStep:
    return ReflectStep(need(env.reflector, "reflect", "reflector"))


factory = StepFactory(
    step=ReflectStep,
    phase="reflect",
    description="The reflector reads the trace and says what went wrong and which skills helped.",
    options=NoOptions,
    build=_build,
)
