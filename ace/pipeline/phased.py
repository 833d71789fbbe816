"""`StepPipeline`: the steps of a training run, built from the registry and grouped by phase.

Per sample: `before_reflect` -> `reflect` -> `after_reflect` (the part that runs concurrently across samples),
then `update` -> `after_update` (the skill-manager phase, serialised or concurrent as the trainer says). Per
epoch: `end_of_epoch`; per run: `end_of_run`. `build_pipeline` is the one way to get one, for `ace-eval` and for
a harness of your own alike:

```python
pipeline = build_pipeline(
    [StepRequest("reflect"), StepRequest("update"), StepRequest("deduplicate", {"threshold": 0.9})],
    StepEnvironment(reflector=reflector, skill_manager=manager, embedder=embedder, output_dir=Path("out")),
)
ctx = await pipeline.run_sample(StepContext(trace=trace, skillbook=book, epoch=0))
await pipeline.run_end_of_epoch(book, epoch=0)
await pipeline.run_end_of_run(book, epoch=0)
```
"""

from __future__ import annotations

import json
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel

from ace.core.skillbook import Skillbook
from ace.pipeline.context import INITIAL_FIELDS, Step, StepContext
from ace.pipeline.pipeline import Pipeline, PipelineError, StepTiming, check_order
from ace.pipeline.registry import PHASES, Phase, RegisteredStep, StepConfigError, StepEnvironment, StepRegistry

__all__ = [
    "DEFAULT_STEPS",
    "PlannedStep",
    "StepPipeline",
    "StepRequest",
    "build_pipeline",
    "pipeline_differences",
    "pipeline_requests",
    "plan_pipeline",
]

DEFAULT_STEPS: tuple[str, ...] = ("redact", "reflect", "update", "quarantine", "export_markdown", "persist")
"""The pipeline of a run that asks for nothing else (`redact` first, so no later step sees a raw secret; the
`quarantine` gate after every session)."""
_RUN_FIELDS = frozenset({"skillbook", "epoch"})
_SAMPLE_PHASES = frozenset(PHASES[:5])
"""What an end-of-epoch / end-of-run context provides (it has no trace)."""


@dataclass(frozen=True)
class StepRequest:
    """A step asked for by name, with its options (strings from `--step`, or typed values from TOML)."""

    name: str
    options: Mapping[str, Any] = field(default_factory=dict)


def pipeline_requests(
    requested: Iterable[StepRequest] = (),
    *,
    without: Collection[str] = (),
    defaults: Sequence[str] = DEFAULT_STEPS,
    registry: StepRegistry | None = None,
) -> list[StepRequest]:
    """The default steps, then the requested ones (a requested default only gets its options), minus `without`.

    Raises:
        StepConfigError: a `without` name no registered step has (a typo would otherwise leave the step in); the
            message lists the available steps. `registry` defaults to the installed `ace.steps` entry points.
    """
    if without:
        reg = registry if registry is not None else StepRegistry.from_entry_points()
        for name in without:
            try:
                reg.get(name)
            except StepConfigError as e:
                raise StepConfigError(f"cannot leave out the step {name!r}: {e}") from None
    out: dict[str, StepRequest] = {name: StepRequest(name) for name in defaults}
    for request in requested:
        out[request.name] = request
    return [r for name, r in out.items() if name not in without]


@dataclass(frozen=True)
class PlannedStep:
    """A requested step found in the registry, its options validated (nothing built yet)."""

    registered: RegisteredStep
    options: BaseModel

    def models(self, default: str) -> dict[str, str]:
        """The model string of every role the step will ask its environment for (`default` where none is named)."""
        declared = self.registered.factory.models
        return {} if declared is None else {role: name or default for role, name in declared(self.options).items()}

    def record(self) -> dict[str, Any]:
        """Name, phase, effective options, and the distribution and version that registered it."""
        return {
            "name": self.registered.name,
            "phase": self.registered.phase,
            "options": self.options.model_dump(mode="json"),
            "distribution": self.registered.distribution,
            "version": self.registered.version,
        }


@dataclass(frozen=True)
class _Declared:
    """A step as its factory declares it, for checking the order before anything is built."""

    name: str
    requires: frozenset[str]
    provides: frozenset[str]

    async def __call__(self, ctx: StepContext) -> StepContext:
        return ctx


def plan_pipeline(requests: Iterable[StepRequest], *, registry: StepRegistry | None = None) -> list[PlannedStep]:
    """Look every requested step up and validate its options and the declared order, building nothing: what a
    run checks before it writes anything. Steps come out in the order they run (phase, then request order).

    Raises:
        StepConfigError: an unknown step (the message lists the available ones), a bad option, or a step whose
            requirements no earlier step provides.
        PluginError: an installed plugin that fails to import.
    """
    reg = registry if registry is not None else StepRegistry.from_entry_points()
    planned: list[PlannedStep] = []
    for request in requests:
        registered = reg.get(request.name)
        planned.append(PlannedStep(registered, registered.factory.parse_options(request.name, request.options)))
    planned.sort(key=lambda p: PHASES.index(p.registered.phase))
    declared = {
        p.registered.name: _Declared(p.registered.name, p.registered.factory.requires, p.registered.factory.provides)
        for p in planned
    }
    sample = [declared[p.registered.name] for p in planned if p.registered.phase in _SAMPLE_PHASES]
    commit = [declared[p.registered.name] for p in planned if p.registered.phase == "commit"]
    run = [declared[p.registered.name] for p in planned if p.registered.phase in ("end_of_epoch", "end_of_run")]
    try:
        check_order(sample, INITIAL_FIELDS)
        check_order(commit, _RUN_FIELDS | {"checkpoint.line"})
        check_order(run, _RUN_FIELDS)
    except PipelineError as e:
        raise StepConfigError(str(e)) from None
    return planned


@dataclass(frozen=True)
class _Built:
    planned: PlannedStep
    step: Step


class StepPipeline:
    """A run's steps by phase, each group a `Pipeline` checked once; `record()` is what `run.json` stores."""

    def __init__(self, built: Sequence[_Built]) -> None:
        by_phase: dict[Phase, list[Step]] = {phase: [] for phase in PHASES}
        for b in built:
            by_phase[b.planned.registered.phase].append(b.step)
        self._built = tuple(built)
        self.phases: Mapping[Phase, tuple[Step, ...]] = {p: tuple(s) for p, s in by_phase.items()}
        reflecting = [*by_phase["before_reflect"], *by_phase["reflect"], *by_phase["after_reflect"]]
        updating = [*by_phase["update"], *by_phase["after_update"]]
        check_order([*reflecting, *updating], INITIAL_FIELDS)
        self.reflect = Pipeline(reflecting)
        """The concurrent part of a sample."""
        self.update = Pipeline(updating, initial=INITIAL_FIELDS | self.reflect.provides)
        """The skill-manager part of a sample."""
        self.commit = Pipeline(by_phase["commit"], initial=_RUN_FIELDS | {"checkpoint.line"})
        """Once per sample, in commit order, on a context with no trace (see `Phase`)."""
        self.end_of_epoch = Pipeline(by_phase["end_of_epoch"], initial=_RUN_FIELDS)
        self.end_of_run = Pipeline(by_phase["end_of_run"], initial=_RUN_FIELDS | self.end_of_epoch.provides)

    @property
    def names(self) -> list[str]:
        """Step names in the order they run."""
        return [s.name for phase in PHASES for s in self.phases[phase]]

    async def run_sample(self, ctx: StepContext) -> StepContext:
        """Every per-sample step on one trace's context (stops early when a step marks it skipped)."""
        return await self.update.run(await self.reflect.run(ctx))

    async def run_end_of_epoch(self, skillbook: Skillbook, *, epoch: int) -> StepContext:
        """The `end_of_epoch` steps on a context with no trace."""
        return await self.end_of_epoch.run(StepContext(trace={}, skillbook=skillbook, epoch=epoch))

    async def run_end_of_run(self, skillbook: Skillbook, *, epoch: int) -> StepContext:
        """The `end_of_run` steps on a context with no trace."""
        return await self.end_of_run.run(StepContext(trace={}, skillbook=skillbook, epoch=epoch))

    def timings(self) -> dict[str, StepTiming]:
        """Calls and wall time of every step so far, by name."""
        out: dict[str, StepTiming] = {}
        for group in (self.reflect, self.update, self.commit, self.end_of_epoch, self.end_of_run):
            out.update(group.timings)
        return out

    def record(self) -> list[dict[str, Any]]:
        """Each step's name, phase, effective options and the distribution and version that registered it."""
        return [b.planned.record() for b in self._built]


def build_pipeline(
    requests: Iterable[StepRequest] | Sequence[PlannedStep],
    env: StepEnvironment,
    *,
    registry: StepRegistry | None = None,
) -> StepPipeline:
    """Build every requested step from the registry (default: the installed `ace.steps` entry points), or the
    steps `plan_pipeline` already planned; they run by phase, in request order within a phase.

    Raises:
        StepConfigError: an unknown step (the message lists the available ones), a bad option, a missing
            resource, or a step whose requirements no earlier step provides.
        PluginError: an installed plugin that fails to import.
    """
    items = list(requests)
    planned = (
        [p for p in items if isinstance(p, PlannedStep)]
        if items and all(isinstance(p, PlannedStep) for p in items)
        else plan_pipeline([r for r in items if isinstance(r, StepRequest)], registry=registry)
    )
    built = [_Built(p, p.registered.factory.create(p.registered.name, p.options, env)) for p in planned]
    try:
        return StepPipeline(built)
    except PipelineError as e:
        raise StepConfigError(str(e)) from None


def pipeline_differences(stored: Sequence[Mapping[str, Any]], now: Sequence[Mapping[str, Any]]) -> list[str]:
    """What differs between two `StepPipeline.record()`s, one line per step (empty when they are the same)."""
    before = {s["name"]: s for s in stored}
    after = {s["name"]: s for s in now}
    out: list[str] = []
    for name in dict.fromkeys([*before, *after]):
        old, new = before.get(name), after.get(name)
        if old is None:
            out.append(f"step {name!r}: not in the run, added now")
        elif new is None:
            out.append(f"step {name!r}: in the run, left out now")
        else:
            for key in ("phase", "options", "distribution", "version"):
                if old.get(key) != new.get(key):
                    out.append(f"step {name!r} {key}: {_show(old.get(key))} in the run, {_show(new.get(key))} now")
    if not out and [s["name"] for s in stored] != [s["name"] for s in now]:
        out.append(f"step order: {[s['name'] for s in stored]} in the run, {[s['name'] for s in now]} now")
    return out


def _show(value: Any) -> str:
    return json.dumps(value, sort_keys=True) if isinstance(value, dict) else repr(value)
