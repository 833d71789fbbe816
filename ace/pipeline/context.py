"""`StepContext`, the immutable value a pipeline passes from step to step, and the `Step` protocol.

A step takes a context and returns a new one (`dataclasses.replace`), never mutating it; the skillbook it
carries is the one shared mutable object, changed only through its own (locked, audited) methods.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from pydantic_ai.usage import RunUsage

from ace.core.insight_source import InsightSource
from ace.core.skillbook import Skillbook
from ace.core.trace import TraceIdentity, TraceInput, TraceLike, trace_mapping
from ace.reflector.reflection import Reflection

if TYPE_CHECKING:
    from ace.deduplication.operations import AppliedDecision
    from ace.skill_manager.manager import SMResult

__all__ = ["CONTEXT_FIELDS", "INITIAL_FIELDS", "Step", "StepContext", "insight_source", "source_of", "trace_identity"]

_EMPTY_USAGE: Mapping[str, RunUsage] = MappingProxyType({})
_EMPTY_EXTRAS: Mapping[str, Mapping[str, object]] = MappingProxyType({})
_EMPTY_COUNTS: Mapping[str, int] = MappingProxyType({})


@dataclass(frozen=True, kw_only=True)
class StepContext:
    """What one trace's trip through the pipeline has produced so far."""

    trace: Mapping[str, Any]
    """The trace (`trace_uid`, `source_system`, `trace_id`, `question`, `messages`, `reward`, ...); a `TraceLike`
    handed in is replaced by its `as_mapping()` view (`StepContext.for_trace` is the typed way)."""
    identity: TraceIdentity | None = None
    """The trace's ids, read once when the context is built (None for a trace without them, e.g. the empty trace
    of an end-of-epoch context); copied by `dataclasses.replace`, so a step that changes the ids passes the new
    one (as `RedactStep` does)."""
    skillbook: Skillbook
    epoch: int = 0
    """Training epoch (0-based); recorded in every mutation's provenance."""
    reflections: tuple[Reflection, ...] = ()
    """What the reflector concluded (set by `ReflectStep`)."""
    sm_result: SMResult | None = None
    """What the skill-manager session did (set by `UpdateStep`)."""
    dedup_decisions: tuple[AppliedDecision, ...] = ()
    """Near-duplicate decisions applied (set by `DeduplicateStep`)."""
    redactions: Mapping[str, int] = field(default_factory=lambda: _EMPTY_COUNTS)
    """Values replaced in the trace, by kind (`email`: 2); set by `RedactStep`, never the values themselves."""
    usage: Mapping[str, RunUsage] = field(default_factory=lambda: _EMPTY_USAGE)
    """Model usage by role (`reflector`, `skill_manager`, `deduplicator`); each step adds its own."""
    extras: Mapping[str, Mapping[str, object]] = field(default_factory=lambda: _EMPTY_EXTRAS)
    """Plugin data, read-only, keyed by the name of the step that provided it: `extras["domain_filter"]["domain"]`.
    A step declares it as `provides={"domain_filter.domain"}` and a later one as `requires={...}`."""
    skipped: str | None = None
    """Why a step chose to skip this sample (set by a `before_reflect` filter): the remaining per-sample steps do
    not run and the sample is recorded as skipped, not failed."""

    @classmethod
    def for_trace(
        cls, trace: TraceInput, skillbook: Skillbook, *, epoch: int = 0, identity: TraceIdentity | None = None
    ) -> StepContext:
        """The context a trace (a mapping or a `TraceLike`) enters the pipeline with; its identity is checked
        here (`ValueError` naming a missing id) unless `identity` was read already."""
        known = identity if identity is not None else TraceIdentity.of(trace)
        return cls(trace=trace_mapping(trace), identity=known, skillbook=skillbook, epoch=epoch)

    def __post_init__(self) -> None:
        """Mappings handed in as plain dicts (`dataclasses.replace(ctx, extras={...})`) become read-only copies;
        a `TraceLike` trace becomes its mapping view, and the identity is read when none was given."""
        trace: object = self.trace
        if not isinstance(trace, Mapping) and isinstance(trace, TraceLike):
            if self.identity is None:
                object.__setattr__(self, "identity", TraceIdentity.of(trace))
            object.__setattr__(self, "trace", trace.as_mapping())
        elif self.identity is None and self.trace:
            object.__setattr__(self, "identity", TraceIdentity.find(self.trace))
        extras = self.extras
        if not isinstance(extras, MappingProxyType) or any(
            not isinstance(v, MappingProxyType) for v in extras.values()
        ):
            frozen = {step: _read_only(data) for step, data in extras.items()}
            object.__setattr__(self, "extras", MappingProxyType(frozen))
        for name in ("usage", "redactions"):
            value = getattr(self, name)
            if not isinstance(value, MappingProxyType):
                object.__setattr__(self, name, MappingProxyType(dict(value)))

    def with_usage(self, role: str, usage: RunUsage) -> StepContext:
        """A copy with `usage` added to `role`'s total."""
        merged = dict(self.usage)
        previous = merged.get(role)
        merged[role] = usage if previous is None else previous + usage
        return dataclasses.replace(self, usage=MappingProxyType(merged))

    def with_extra(self, step: str, key: str, value: object) -> StepContext:
        """A copy with `extras[step][key] = value` (the step's name: plugin data is namespaced by its provider)."""
        mine = dict(self.extras.get(step, {}))
        mine[key] = value
        merged = dict(self.extras)
        merged[step] = MappingProxyType(mine)
        return dataclasses.replace(self, extras=MappingProxyType(merged))

    def extra(self, step: str, key: str) -> object:
        """`extras[step][key]`; a missing one raises `KeyError` naming the step that should have provided it."""
        try:
            return self.extras[step][key]
        except KeyError:
            raise KeyError(
                f"no plugin data {step}.{key} on the context: the step {step!r} provides it; add it earlier in the "
                "pipeline (`--step " + step + "`) and declare it in `requires`"
            ) from None


def _read_only(data: Mapping[str, object]) -> Mapping[str, object]:
    return data if isinstance(data, MappingProxyType) else MappingProxyType(dict(data))


CONTEXT_FIELDS: frozenset[str] = frozenset(f.name for f in dataclasses.fields(StepContext)) - {"extras"}
"""Every context field a step may require or provide; plugin data is named `<step name>.<key>` instead."""
INITIAL_FIELDS: frozenset[str] = frozenset({"trace", "skillbook", "epoch"})
"""What a freshly built context provides before any step ran."""


@runtime_checkable
class Step(Protocol):
    """One stage of the pipeline: declares the context fields it reads and writes.

    Its phase (when it runs) is declared by the `StepFactory` it is registered with (`ace.pipeline.registry`).
    """

    @property
    def name(self) -> str:
        """Short name for errors and spans, e.g. `reflect`."""
        ...

    @property
    def requires(self) -> frozenset[str]:
        """Context fields this step reads; an earlier step (or the initial context) must provide them."""
        ...

    @property
    def provides(self) -> frozenset[str]:
        """Context fields this step sets."""
        ...

    async def __call__(self, ctx: StepContext) -> StepContext:
        """Run on `ctx` and return the new context."""
        ...


def trace_identity(trace: TraceInput) -> tuple[str, str, str]:
    """`(trace_uid, source_system, trace_id)` of a trace; raises `ValueError` naming a missing key."""
    return TraceIdentity.of(trace).as_tuple()


def insight_source(
    trace: Mapping[str, Any], epoch: int, reflection: Reflection | None, *, identity: TraceIdentity | None = None
) -> InsightSource:
    """The provenance of mutations made from this trace in this epoch, after this reflection.

    Identity comes from `identity` (a context's, read once) or else the trace (`trace_uid`, `source_system`,
    `trace_id`); `question` is the sample question; the texts come from the reflection (`error_identification`,
    `key_insight`); blank texts become `None`.
    """
    trace_uid, source_system, trace_id = (identity or TraceIdentity.of(trace)).as_tuple()
    question = trace.get("question")
    return InsightSource(
        trace_uid=trace_uid,
        source_system=source_system,
        trace_id=trace_id,
        sample_question=question if isinstance(question, str) and question.strip() else None,
        epoch=epoch,
        error_identification=(reflection.error_identification.strip() or None) if reflection else None,
        learning_text=(reflection.key_insight.strip() or None) if reflection else None,
    )


def source_of(ctx: StepContext) -> InsightSource:
    """`insight_source` of a context: its trace, identity, epoch and first reflection."""
    return insight_source(ctx.trace, ctx.epoch, ctx.reflections[0] if ctx.reflections else None, identity=ctx.identity)
