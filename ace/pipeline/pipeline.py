"""`Pipeline`: steps run in order, their `requires` / `provides` checked once, when the pipeline is built.

Each step runs in a span `step.<name>` and its wall time is added to `Pipeline.timings` (one `perf_counter` pair
per step: the bookkeeping is cheap enough for every sample). An exception in a step is re-raised as
`StepFailed`, which names the step; the original is its `cause`.
"""

from __future__ import annotations

import time
from collections.abc import Collection, Sequence
from dataclasses import dataclass

from pydantic import ConfigDict

from ace.exceptions import RunError, UserError
from ace.observability import ace_span
from ace.pipeline.context import CONTEXT_FIELDS, INITIAL_FIELDS, Step, StepContext

__all__ = ["Pipeline", "PipelineError", "StepFailed", "StepTiming", "check_order"]


class PipelineError(UserError, ValueError):
    """Steps that cannot run in this order: a requirement nobody provides, or an unknown field name."""


class StepFailed(RunError):
    """A step raised: `step` is its name, `cause` what it raised (also `__cause__`), `ctx` the context the step
    was given (what the earlier steps produced: a reflection, model usage), so a harness records it."""

    def __init__(self, step: str, cause: Exception, ctx: StepContext | None = None) -> None:
        super().__init__(f"step {step!r}: {type(cause).__name__}: {cause}")
        self.step = step
        self.cause = cause
        self.ctx = ctx


@dataclass
class StepTiming:
    """How often a step ran and its total wall time (in `run.json` too: a segment's steps and their sums)."""

    __pydantic_config__ = ConfigDict(extra="forbid")

    calls: int = 0
    seconds: float = 0.0

    def to_dict(self) -> dict[str, float]:
        """`{"calls": n, "seconds": s}` for `run.json`."""
        return {"calls": self.calls, "seconds": round(self.seconds, 6)}


class Pipeline:
    """Steps run one after the other on an immutable `StepContext`."""

    def __init__(self, steps: Sequence[Step], *, initial: Collection[str] = INITIAL_FIELDS) -> None:
        """Check that every step's requirements are met by `initial` or by an earlier step.

        Raises:
            PipelineError: naming the step, the missing field and the step that would provide it.
        """
        self.steps: tuple[Step, ...] = tuple(steps)
        check_order(self.steps, initial)
        self.timings: dict[str, StepTiming] = {s.name: StepTiming() for s in self.steps}

    @property
    def provides(self) -> frozenset[str]:
        """Every field some step of the pipeline sets."""
        return frozenset().union(*(s.provides for s in self.steps))

    async def run(self, ctx: StepContext) -> StepContext:
        """Run every step on `ctx`, in order, until one marks the sample `skipped`.

        Raises:
            StepFailed: a step raised (the pipeline stops there); its `ctx` is the last good context.
        """
        for step in self.steps:
            if ctx.skipped is not None:
                break
            timing = self.timings[step.name]
            start = time.perf_counter()
            try:
                with ace_span(f"step.{step.name}", {"ace.step": step.name}):
                    out = await step(ctx)
            except Exception as e:
                raise StepFailed(step.name, e, ctx) from e
            finally:
                timing.calls += 1
                timing.seconds += time.perf_counter() - start
            if not isinstance(out, StepContext):
                raise StepFailed(step.name, TypeError(f"returned {type(out).__name__}, not a StepContext"), ctx)
            ctx = out
        return ctx


def _check_names(step: Step, kind: str, names: frozenset[str]) -> None:
    """Plain names must be `StepContext` fields; plugin data is `<step>.<key>`, and a step provides only its own."""
    for name in sorted(names):
        owner, dot, key = name.partition(".")
        if dot:
            if not owner or not key:
                raise PipelineError(f"step {step.name!r} {kind} {name!r}: plugin data is named '<step name>.<key>'")
            if kind == "provides" and owner != step.name:
                raise PipelineError(
                    f"step {step.name!r} provides {name!r}, data of step {owner!r}: a step provides only its own "
                    f"plugin data, named '{step.name}.<key>'"
                )
        elif name not in CONTEXT_FIELDS:
            raise PipelineError(
                f"step {step.name!r} {kind} [{name!r}], which are not StepContext fields (known: "
                f"{sorted(CONTEXT_FIELDS)}); plugin data of its own is named '{step.name}.{name}'"
            )


def check_order(steps: Sequence[Step], initial: Collection[str] = INITIAL_FIELDS) -> None:
    """Raise `PipelineError` unless every step's `requires` is provided before it runs."""
    available = set(initial)
    unknown_initial = {n for n in available if "." not in n} - CONTEXT_FIELDS
    if unknown_initial:
        raise PipelineError(f"initial fields {sorted(unknown_initial)} are not StepContext fields")
    for position, step in enumerate(steps):
        _check_names(step, "requires", frozenset(step.requires))
        _check_names(step, "provides", frozenset(step.provides))
        missing = set(step.requires) - available
        if missing:
            later = [s.name for s in steps[position + 1 :] if set(s.provides) & missing]
            hint = (
                f": move it after {', '.join(repr(n) for n in later)}"
                if later
                else ": add a step that provides it" + _plugin_hint(missing)
            )
            raise PipelineError(f"step {step.name!r} (position {position}) requires {sorted(missing)}{hint}")
        available |= set(step.provides)


def _plugin_hint(missing: set[str]) -> str:
    owners = sorted({n.partition(".")[0] for n in missing if "." in n})
    return f" (e.g. `--step {owners[0]}`, earlier in the pipeline)" if owners else ""
