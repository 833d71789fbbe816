"""`Pipeline`: steps run in order, their `requires` / `provides` checked once, when the pipeline is built."""

from __future__ import annotations

from collections.abc import Collection, Sequence

from ace.steps.context import CONTEXT_FIELDS, INITIAL_FIELDS, Step, StepContext

__all__ = ["Pipeline", "PipelineError"]


class PipelineError(ValueError):
    """Steps that cannot run in this order: a requirement nobody provides, or an unknown field name."""


class Pipeline:
    """Steps run one after the other on an immutable `StepContext`."""

    def __init__(self, steps: Sequence[Step], *, initial: Collection[str] = INITIAL_FIELDS) -> None:
        """Check that every step's requirements are met by `initial` or by an earlier step.

        Raises:
            PipelineError: naming the step, the missing field and the step that would provide it.
        """
        self.steps: tuple[Step, ...] = tuple(steps)
        check_order(self.steps, initial)

    @property
    def provides(self) -> frozenset[str]:
        """Every field some step of the pipeline sets."""
        return frozenset().union(*(s.provides for s in self.steps))

    async def run(self, ctx: StepContext) -> StepContext:
        """Run every step on `ctx`, in order; an exception stops the pipeline and propagates unchanged."""
        for step in self.steps:
            out = await step(ctx)
            if not isinstance(out, StepContext):
                raise TypeError(f"step {step.name!r} returned {type(out).__name__}, not a StepContext")
            ctx = out
        return ctx


def check_order(steps: Sequence[Step], initial: Collection[str] = INITIAL_FIELDS) -> None:
    """Raise `PipelineError` unless every step's `requires` is provided before it runs."""
    available = set(initial)
    unknown_initial = available - CONTEXT_FIELDS
    if unknown_initial:
        raise PipelineError(f"initial fields {sorted(unknown_initial)} are not StepContext fields")
    for position, step in enumerate(steps):
        for kind, names in (("requires", step.requires), ("provides", step.provides)):
            unknown = set(names) - CONTEXT_FIELDS
            if unknown:
                raise PipelineError(
                    f"step {step.name!r} {kind} {sorted(unknown)}, which are not StepContext fields "
                    f"(known: {sorted(CONTEXT_FIELDS)})"
                )
        missing = set(step.requires) - available
        if missing:
            later = [s.name for s in steps[position + 1 :] if set(s.provides) & missing]
            hint = f": move it after {', '.join(repr(n) for n in later)}" if later else ": add a step that provides it"
            raise PipelineError(f"step {step.name!r} (position {position}) requires {sorted(missing)}{hint}")
        available |= set(step.provides)
