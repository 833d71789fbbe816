"""The step registry: every step, built-in or third-party, is an `ace.steps` entry point naming a `StepFactory`.

Discovery uses the standard library's `importlib.metadata` (no plugin framework: a step needs no hooks, only a
factory, and entry points are how every Python packaging tool already declares them). ACE's own steps register
in its `pyproject.toml` exactly as a plugin does in its own:

```toml
[project.entry-points."ace.steps"]
domain_filter = "ace_domain_filter:domain_filter"
```

Every entry point is loaded when the registry is built; one that fails to import stops everything with its
distribution, version and exception (as pytest does with a broken plugin), before a run writes anything.
"""

from __future__ import annotations

import difflib
import types
import typing
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from importlib.metadata import EntryPoint, entry_points
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, Literal, TypeVar, get_args

from pydantic import BaseModel, ConfigDict, ValidationError

from ace.exceptions import UserError
from ace.pipeline.context import Step

if TYPE_CHECKING:
    from pydantic_ai.models import Model

    from ace.embeddings.base import Embedder
    from ace.redaction import Redactor
    from ace.reflector.base import Reflector
    from ace.skill_manager.manager import SkillManager

__all__ = [
    "ENTRY_POINT_GROUP",
    "PHASES",
    "NoOptions",
    "Phase",
    "PluginError",
    "RegisteredStep",
    "StepConfigError",
    "StepEnvironment",
    "StepFactory",
    "StepRegistry",
    "listed_options",
    "load_plugin",
    "parse_step_spec",
    "validate_options",
]

ENTRY_POINT_GROUP = "ace.steps"
Phase = Literal[
    "before_reflect", "reflect", "after_reflect", "update", "after_update", "commit", "end_of_epoch", "end_of_run"
]
PHASES: tuple[Phase, ...] = get_args(Phase)
"""In the order they run: five per sample, `commit` once per sample in commit order (the run's checkpoint, with
the sample's journal line as plugin data `checkpoint.line`), then one per epoch and one per run."""

OptionsT = TypeVar("OptionsT", bound=BaseModel)
T = TypeVar("T")


class StepConfigError(UserError, ValueError):
    """A step that cannot be used as asked: unknown name, bad option, missing resource. Names the step and fix."""


class PluginError(UserError, RuntimeError):
    """An `ace.steps` entry point that cannot be loaded; names the distribution, its version and the exception."""


class NoOptions(BaseModel):
    """The options of a step that takes none."""

    model_config = ConfigDict(extra="forbid", frozen=True)


@dataclass(frozen=True, kw_only=True)
class StepEnvironment:
    """What the harness hands every step factory: the run's roles, embedder, redactor, output folder and models."""

    output_dir: Path | None = None
    """Where end-of-run files go (the run folder); relative path options are resolved against it."""
    reflector: Reflector | None = None
    skill_manager: SkillManager | None = None
    embedder: Embedder | None = None
    redactor: Redactor | None = None
    """The run's detectors and allow-list (`[redaction]` in ace-eval.toml); `None`: the built-in detectors."""
    models: Mapping[str, Model] = field(default_factory=dict)
    """pydantic-ai models by role (e.g. a scripted `dedup` judge); they win over model strings."""
    default_model: str = "local"
    """The model string of a role a step needs when its options name none."""

    def model(self, role: str, name: str | None) -> Model | str:
        """The model of `role`: the injected one, else the model string `name`, else `default_model`."""
        given = self.models.get(role)
        return given if given is not None else (name or self.default_model)

    def path(self, step: str, option: str, value: str) -> Path:
        """`value` as a path; a relative one lives in `output_dir`."""
        path = Path(value)
        if path.is_absolute():
            return path
        if self.output_dir is None:
            raise StepConfigError(
                f"step {step!r}: option {option}={value!r} is relative and the pipeline has no output folder: pass "
                "StepEnvironment(output_dir=...) or an absolute path"
            )
        return self.output_dir / path


def need(value: T | None, step: str, what: str) -> T:
    """`value`, or a `StepConfigError` saying the step needs `what` in its `StepEnvironment`."""
    if value is None:
        raise StepConfigError(f"step {step!r} needs a {what}: pass StepEnvironment({what}=...) when building it")
    return value


@dataclass(frozen=True, kw_only=True)
class StepFactory(Generic[OptionsT]):
    """What an `ace.steps` entry point names: the step class, its phase, description, options model and builder.

    The step class is the one place its contract lives: `requires` / `provides` are read from its class
    attributes, so the registry (and `ace-eval steps list`) can never disagree with the step it builds.
    """

    step: type[Step]
    """The step class `build` returns; its class attributes `requires` and `provides` are the step's contract."""
    phase: Phase
    description: str
    """One line, shown by `ace-eval steps list`."""
    options: type[OptionsT]
    """A pydantic model of the step's settings (`extra="forbid"`, so a typo is refused by name)."""
    build: Callable[[OptionsT, StepEnvironment], Step]
    models: Callable[[OptionsT], Mapping[str, str | None]] | None = None
    """The roles the step will ask `StepEnvironment.model(role, name)` for, with the model string its options
    name (`None`: the run's default), so a harness checks and records them before the run (ace-eval's preflight)."""

    @property
    def requires(self) -> frozenset[str]:
        """What the step reads (context fields, or `<step>.<key>` plugin data), from the step class."""
        return _contract(self.step, "requires")

    @property
    def provides(self) -> frozenset[str]:
        """What the step sets, from the step class."""
        return _contract(self.step, "provides")

    def parse_options(self, name: str, raw: Mapping[str, Any]) -> OptionsT:
        """Validate `raw` (strings from the command line, or typed TOML values) against `options`."""
        return validate_options(self.options, raw, f"step {name!r}", "`ace-eval steps list`", StepConfigError)

    def __call__(self, name: str, raw: Mapping[str, Any], env: StepEnvironment) -> Step:
        """Build the step from its settings; the step must carry the registered `name`."""
        return self.create(name, self.parse_options(name, raw), env)

    def create(self, name: str, options: OptionsT, env: StepEnvironment) -> Step:
        """Build the step from validated options."""
        step: Step = self.build(options, env)
        if not isinstance(step, self.step):
            raise StepConfigError(
                f"the factory of step {name!r} built a {type(step).__qualname__}, not its {self.step.__qualname__}"
            )
        if step.name != name:
            raise StepConfigError(f"the factory of step {name!r} built a step named {step.name!r}: they must match")
        return step


def _contract(step: type[Step], name: str) -> frozenset[str]:
    value = getattr(step, name, None)
    if not isinstance(value, frozenset):
        raise PluginError(f"step class {step.__qualname__} must declare `{name}` as a frozenset class attribute")
    return frozenset(str(v) for v in value)


def validate_options(
    options: type[OptionsT], raw: Mapping[str, Any], what: str, lister: str, error: type[UserError]
) -> OptionsT:
    """`raw` validated by `options`; the first problem raised as `error`, naming `what`, the option, the known
    options and the command (`lister`) that describes them."""
    try:
        return options.model_validate(listed_options(options, raw))
    except ValidationError as e:
        first = e.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        known = ", ".join(options.model_fields) or "none"
        raise error(
            f"{what}: option {where!r}: {first['msg']} (its options: {known}; {lister} describes them)"
        ) from None


def listed_options(options: type[BaseModel], raw: Mapping[str, Any]) -> dict[str, Any]:
    """`raw` with a single string given to a list option as a one-item list (`key=value` once on the command line)."""
    values = dict(raw)
    for key, value in raw.items():
        info = options.model_fields.get(key)
        if info is not None and isinstance(value, str) and _is_sequence(info.annotation):
            values[key] = [value]
    return values


def _is_sequence(annotation: Any) -> bool:
    if isinstance(annotation, types.UnionType) or typing.get_origin(annotation) is typing.Union:
        return any(_is_sequence(a) for a in get_args(annotation))
    return typing.get_origin(annotation) in (list, tuple, set, frozenset)


@dataclass(frozen=True)
class RegisteredStep:
    """A step as the registry knows it: its factory and the distribution that registered it."""

    name: str
    factory: StepFactory[Any]
    distribution: str
    version: str

    @property
    def phase(self) -> Phase:
        return self.factory.phase


class StepRegistry:
    """Every available step by name."""

    def __init__(self, steps: Iterable[RegisteredStep]) -> None:
        self._steps: dict[str, RegisteredStep] = {}
        for step in steps:
            other = self._steps.get(step.name)
            if other is not None and other.distribution != step.distribution:
                raise PluginError(
                    f"two distributions register the step {step.name!r}: {other.distribution} {other.version} and "
                    f"{step.distribution} {step.version}; uninstall one of them"
                )
            self._steps[step.name] = step

    @classmethod
    def from_entry_points(cls, group: str = ENTRY_POINT_GROUP) -> StepRegistry:
        """Load every entry point of `group` (ACE's built-ins included).

        Raises:
            PluginError: an entry point fails to import or is not a `StepFactory`.
        """
        return cls(_load(ep) for ep in entry_points(group=group))

    def __contains__(self, name: object) -> bool:
        return name in self._steps

    def __iter__(self) -> typing.Iterator[RegisteredStep]:
        return iter(sorted(self._steps.values(), key=lambda s: (PHASES.index(s.phase), s.name)))

    def get(self, name: str) -> RegisteredStep:
        """The step called `name`; an unknown name lists the available ones."""
        found = self._steps.get(name)
        if found is None:
            close = difflib.get_close_matches(name, list(self._steps), n=1)
            hint = f" Did you mean {close[0]!r}?" if close else ""
            raise StepConfigError(
                f"unknown step {name!r}.{hint} Available steps: {', '.join(sorted(self._steps))} "
                "(`ace-eval steps list`; a plugin's step appears once its distribution is installed)"
            )
        return found


def _load(ep: EntryPoint) -> RegisteredStep:
    factory, name, version = load_plugin(ep, "step", StepFactory, "ace.steps.StepFactory")
    return RegisteredStep(ep.name, factory, name, version)


def load_plugin(ep: EntryPoint, kind: str, expected: type[T], qualified: str) -> tuple[T, str, str]:
    """What the entry point `ep` names, checked to be an `expected` (`qualified`: its public name), with the name and
    version of the distribution that registered it.

    Raises:
        PluginError: it fails to import (naming the distribution, its version and the exception), or is no `expected`.
    """
    dist = ep.dist
    name, version = (dist.metadata["Name"], dist.version) if dist is not None else ("unknown distribution", "?")
    try:
        loaded = ep.load()
    except Exception as e:
        raise PluginError(
            f"the {kind} plugin {ep.name!r} ({ep.value}) of {name} {version} failed to import: "
            f"{type(e).__name__}: {e}. Fix or uninstall {name} (pip uninstall {name})"
        ) from e
    if not isinstance(loaded, expected):
        raise PluginError(
            f"the {kind} plugin {ep.name!r} of {name} {version} names {ep.value}, a {type(loaded).__name__}, not an "
            f"{qualified}: point the entry point at a {expected.__name__}"
        )
    return loaded, name, version


def parse_step_spec(text: str) -> tuple[str, dict[str, str | list[str]]]:
    """`NAME[:key=value,...]` -> the name and its options (a key given twice collects a list).

    Raises:
        StepConfigError: an empty name or a pair without `=`.
    """
    name, _, rest = text.strip().partition(":")
    name = name.strip()
    if not name:
        raise StepConfigError(f"--step {text!r}: give a step name, e.g. --step deduplicate:threshold=0.9")
    options: dict[str, str | list[str]] = {}
    for pair in filter(None, (p.strip() for p in rest.split(","))):
        key, eq, value = pair.partition("=")
        if not eq or not key.strip():
            raise StepConfigError(f"--step {text!r}: {pair!r} is not key=value (e.g. --step {name}:key=value)")
        key = key.strip()
        previous = options.get(key)
        if previous is None:
            options[key] = value.strip()
        else:
            options[key] = [*(previous if isinstance(previous, list) else [previous]), value.strip()]
    return name, options
