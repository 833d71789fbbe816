"""What a benchmark is to ace-eval: the `Benchmark` protocol, the `BenchmarkFactory` an entry point names, and the
`BenchmarkEnv` the harness hands a benchmark when it runs.

A benchmark knows its tasks (named splits of task ids), the model roles it needs, how to collect traces for a learn
split and how to score a skillbook on task ids with k trials. The e2e runner and the gate know benchmarks only by
this protocol; the built-ins (tau-bench, tau2-bench) implement it exactly as a third party's plugin does.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, Literal, Protocol, TypeVar, get_args, runtime_checkable

from pydantic import BaseModel

from ace.exceptions import UserError
from ace.pipeline.registry import validate_options

if TYPE_CHECKING:
    from pydantic_ai.models import Model

    from ace.core.skillbook import Skillbook
    from ace.embeddings.base import Embedder
    from ace.redaction import Redactor
    from ace_eval.benchmarks.scores import BenchmarkScores

__all__ = [
    "SPLIT_ROLES",
    "Benchmark",
    "BenchmarkConfigError",
    "BenchmarkEnv",
    "BenchmarkFactory",
    "SplitRole",
    "resolve_tasks",
]

OptionsT = TypeVar("OptionsT", bound=BaseModel)

SplitRole = Literal["learn", "evaluate"]
"""What a run does with a split: learn from its traces, or score a skillbook on it."""
SPLIT_ROLES: tuple[SplitRole, ...] = get_args(SplitRole)


class BenchmarkConfigError(UserError, ValueError):
    """A benchmark that cannot be used as asked: unknown name, bad option, unknown task id. Names the fix."""


@dataclass(frozen=True, kw_only=True)
class BenchmarkEnv:
    """What the harness hands a benchmark when it runs: models by role, the embedder, the redactor, concurrency."""

    models: Mapping[str, Model] = field(default_factory=dict)
    """pydantic-ai models by role (the run's, or scripted ones in tests); they win over `model_names`."""
    model_names: Mapping[str, str] = field(default_factory=dict)
    """Model strings by role, for benchmarks that call their models themselves (tau2 through litellm)."""
    embedder: Embedder | None = None
    redactor: Redactor | None = None
    """Every file a benchmark writes from an agent's conversation goes through it (`None`: redaction is off)."""
    max_workers: int = 1
    abort_after: int = 3
    """Stop after this many episodes in a row fail with the same error (0: never)."""
    verbose: bool = False
    show_progress: bool | None = False
    """Show a progress bar (`None`: only on a terminal)."""
    on_episode: Callable[[str, str], None] | None = None
    """Called with (phase, one line) after each finished episode, for the harness's progress."""

    def model(self, role: str) -> Model | str:
        """The model of `role`: the injected pydantic-ai model, else its model string."""
        given = self.models.get(role)
        if given is not None:
            return given
        name = self.model_names.get(role)
        if name is None:
            raise BenchmarkConfigError(f"the benchmark asked for a {role!r} model the harness was not given")
        return name


@runtime_checkable
class Benchmark(Protocol):
    """A benchmark built from its options: what `ace-eval e2e --benchmark NAME` and `ace-eval gate run` run.

    `collect` and `evaluate` may be called in a worker thread; they run their own event loop if they need one.
    Both resume: given a `directory` that holds finished work of the same call, they redo only what is missing.
    """

    @property
    def name(self) -> str:
        """The registered name (`tau2-airline`, `toy-support`, ...)."""
        ...

    def splits(self) -> Mapping[str, Sequence[str]]:
        """Named task lists (`train`, `test`, ...) -> task ids."""
        ...

    def tasks(self, role: SplitRole) -> Sequence[str]:
        """The task ids a run learns on (`learn`) or scores on (`evaluate`), as the options chose them."""
        ...

    def models(self) -> Mapping[str, str | None]:
        """The model roles the benchmark calls (e.g. `agent`, `user`) with the model string its options name
        (`None`: the harness's setting of that role); the harness checks and records them before the run."""
        ...

    def check(self, env: BenchmarkEnv) -> None:
        """Refuse (a `UserError` naming the fix) what would fail later: missing data, unusable models. Runs
        before the harness writes anything."""
        ...

    def collect(
        self,
        env: BenchmarkEnv,
        *,
        skillbook: Skillbook | None,
        task_ids: Sequence[str],
        num_trials: int,
        directory: Path,
    ) -> None:
        """Run the agent on `task_ids` x `num_trials` with `skillbook` (`None`: without one) and leave a trace
        collection in `directory` (`ace_eval.collection`): the traces a skillbook learns from."""
        ...

    def evaluate(
        self,
        env: BenchmarkEnv,
        *,
        skillbook: Skillbook | None,
        task_ids: Sequence[str],
        num_trials: int,
        seeds: Sequence[int] | None,
        directory: Path,
    ) -> BenchmarkScores:
        """Score `skillbook` (`None`: the agent without one) on `task_ids` x `num_trials`: per task, per trial the
        reward, success, tokens and cost. `seeds` (one per trial, `None`: the benchmark's) make two skillbooks
        comparable on the same draws. `directory` holds the benchmark's own files of the phase."""
        ...


@dataclass(frozen=True, kw_only=True)
class BenchmarkFactory(Generic[OptionsT]):
    """What an `ace_eval.benchmarks` entry point names: a description, an options model and a builder."""

    description: str
    """One line, shown by `ace-eval benchmarks list`."""
    options: type[OptionsT]
    """A pydantic model of the benchmark's settings (`extra="forbid"`, so a typo is refused by name)."""
    build: Callable[[str, OptionsT], Benchmark]
    """Builds the benchmark called `name` (one factory may serve several names, e.g. tau2's domains)."""
    harness_settings: frozenset[str] = frozenset()
    """Options the harness fills from its own settings of the same name (`--num-trials`, `--train-split`, ...)
    unless the options are given explicitly; `ace-eval e2e` takes them from its flags."""
    runner_phases: bool = False
    """ace-eval's own tau-bench and tau2 only: the e2e runner still runs their phases itself (their run folders
    keep their own files); every other benchmark runs through `collect` / `evaluate`."""
    notes: Mapping[str, str] = field(default_factory=dict)
    """Why a harness setting the benchmark does not take has no effect (e.g. `data_dir`: it ships its data)."""

    def parse_options(self, name: str, raw: Mapping[str, Any]) -> OptionsT:
        """Validate `raw` (strings from the command line, or typed TOML values) against `options`."""
        lister = "`ace-eval benchmarks list`"
        return validate_options(self.options, raw, f"benchmark {name!r}", lister, BenchmarkConfigError)

    def create(self, name: str, raw: Mapping[str, Any]) -> Benchmark:
        """The benchmark `name` built from its raw options; it must carry the registered name."""
        benchmark = self.build(name, self.parse_options(name, raw))
        if not isinstance(benchmark, Benchmark):
            raise BenchmarkConfigError(
                f"the factory of benchmark {name!r} built a {type(benchmark).__qualname__}, which lacks the Benchmark "
                "protocol's methods (splits, tasks, models, check, collect, evaluate)"
            )
        if benchmark.name != name:
            raise BenchmarkConfigError(
                f"the factory of benchmark {name!r} built one named {benchmark.name!r}: they must match"
            )
        return benchmark


def resolve_tasks(benchmark: str, splits: Mapping[str, Sequence[str]], selection: str) -> tuple[str, ...]:
    """`selection` as task ids: a split's name, or comma-separated task ids of the benchmark's splits.

    Raises:
        BenchmarkConfigError: an unknown split or task id (the message lists the splits).
    """
    if selection in splits:
        return tuple(splits[selection])
    known = {task for tasks in splits.values() for task in tasks}
    ids = [part.strip() for part in selection.split(",") if part.strip()]
    unknown = [task for task in ids if task not in known]
    if not ids or unknown:
        raise BenchmarkConfigError(
            f"benchmark {benchmark!r}: {', '.join(unknown) or repr(selection)} is neither a split nor a task id; "
            f"its splits: {', '.join(f'{n} ({len(t)} tasks)' for n, t in splits.items())}"
        )
    return tuple(ids)
