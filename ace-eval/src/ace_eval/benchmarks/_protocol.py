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
    from ace_eval.collection import Trace
    from ace_eval.run.phases import PhaseRecord

__all__ = [
    "SPLIT_ROLES",
    "Benchmark",
    "BenchmarkConfigError",
    "BenchmarkEnv",
    "BenchmarkFactory",
    "Collected",
    "DataFetcher",
    "DataSource",
    "EpisodeFolders",
    "GoldCheck",
    "ResolvesOptions",
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
    phase: str = ""
    """The harness's name of the phase being run (`collect`, `baseline`, `evaluate`, ...), for a benchmark that
    shows its own progress (`EpisodeFolders`)."""
    check_names: bool = False
    """`check` refuses a model string one typo away from a name of litellm's offline list, as e2e's preflight does
    for the models it calls itself (set by e2e unless `--no-preflight`)."""
    retry_errored: bool = False
    """Run again the episodes a resumed phase left errored (`--retry-failed`), for a benchmark that keeps its
    episodes in the phase's folder (`EpisodeFolders`); the others redo what is missing only."""

    def model(self, role: str) -> Model | str:
        """The model of `role`: the injected pydantic-ai model, else its model string."""
        given = self.models.get(role)
        if given is not None:
            return given
        name = self.model_names.get(role)
        if name is None:
            raise BenchmarkConfigError(f"the benchmark asked for a {role!r} model the harness was not given")
        return name


@dataclass(frozen=True, kw_only=True)
class Collected:
    """What `Benchmark.collect` may report besides the collection it wrote."""

    scores: BenchmarkScores | None = None
    """The learn split's scores, when the benchmark scores the episodes it collects (recorded as the run's `learn`
    phase in `run.json`, with its usage per role)."""
    redactions: Mapping[str, int] = field(default_factory=dict)
    """Values redacted per kind in the traces, when the benchmark redacted them itself (`run.json`'s
    `redaction.collection`)."""


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
    ) -> Collected | None:
        """Run the agent on `task_ids` x `num_trials` with `skillbook` (`None`: without one) and leave a trace
        collection in `directory` (`ace_eval.collection`): the traces a skillbook learns from. It may return what
        else it knows of the episodes (`Collected`: their scores, the values it redacted)."""
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
        reward, success, tokens and cost (and the usage per model role, when the benchmark counts it). `seeds`
        (one per trial, `None`: the benchmark's) make two skillbooks comparable on the same draws. `directory`
        holds the benchmark's own files of the phase (`BenchmarkScores.results` names its results file)."""
        ...


@runtime_checkable
class EpisodeFolders(Protocol):
    """What a benchmark may add to `Benchmark` when every phase leaves its episodes as a trace collection in the
    phase's folder (`collection/`, `baseline/`, `evaluation/`, ...: tau-bench airline). The harness then calls
    `collect` and `evaluate` on every segment of a run (each resumes the episodes it is missing, and with
    `BenchmarkEnv.retry_errored` runs the errored ones again), records each phase from its folder, also one
    stopped halfway (`phase_record`), and lets the benchmark show its own progress (`BenchmarkEnv.phase`).
    """

    def collect_is_baseline(self) -> bool:
        """Whether the learn split is the evaluation split: the collected episodes (the agent without a skillbook)
        are then the baseline, and no baseline phase runs."""
        ...

    def replayed_tasks(self, traces: Sequence[Trace]) -> Sequence[str]:
        """The task ids a run that replays `traces` (`--traces`) evaluates: the tasks the traces are of.

        Raises:
            BenchmarkConfigError: a trace of no task of the benchmark (the agent cannot be evaluated on it).
        """
        ...

    def phase_record(self, name: str, directory: Path, *, num_trials: int) -> PhaseRecord | None:
        """`run.json`'s record of the phase `name` from the episodes in `directory` (`None`: no episode yet)."""
        ...


@runtime_checkable
class ResolvesOptions(Protocol):
    """What a benchmark may add to `Benchmark` when it fills options in itself (from the environment, a default
    folder): `run.json` records them as resolved and a resume keeps them (tau-bench's `data_dir` from
    `$ACE_TAU_BENCH_DATA`; tau2's message cap, lower with the embedded model). A benchmark without it is recorded
    with its options model's values."""

    def resolved_options(self, model_names: Mapping[str, str]) -> Mapping[str, Any]:
        """Every option as the benchmark uses it, as JSON values its options model reads back (a path absolute), for
        a run whose roles use `model_names` (role -> model string: a default may depend on them)."""
        ...


class DataFetcher(Protocol):
    """Downloads a benchmark's data files into `dest` at `ref`, checking each (`verify`); a file already there
    and intact is kept unless `force`. `on_file(file name, status)` reports each (`kept`, `written`)."""

    def __call__(
        self, dest: Path, *, ref: str, force: bool, verify: bool, on_file: Callable[[str, str], None]
    ) -> object: ...


@dataclass(frozen=True, kw_only=True)
class DataSource:
    """A benchmark's public data that `ace-eval data fetch NAME` downloads, for a benchmark that does not ship it."""

    name: str
    """What `ace-eval data fetch NAME` calls it (the benchmark's own name works too)."""
    description: str
    """One line: what the files are and whose (their licence)."""
    dest: Path
    """The folder the files go to unless `--dest` says otherwise."""
    upstream: str
    """Where the files come from (a repository), for messages."""
    default_ref: str
    """The branch, tag or commit of `upstream` fetched unless `--ref` says otherwise."""
    fetch: DataFetcher


@runtime_checkable
class GoldCheck(Protocol):
    """What a benchmark may add to `Benchmark` to check its own data offline (`ace-eval benchmark check NAME`)."""

    def check_gold(
        self, *, recorded: Path | None, progress: bool, out: Callable[[str], None], err: Callable[[str], None]
    ) -> bool:
        """Replay every task's gold actions (or re-score the runs of the `recorded` results file, for a benchmark
        that reads one: others refuse it) and print one line per task or run to `out`, notes and the summary to
        `err`; False when one does not reach what it should (exit status 1)."""
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
    own_clients: bool = False
    """The benchmark calls its models through its own client from `BenchmarkEnv.model_names` (model strings): the
    harness builds no pydantic-ai model of its roles and leaves checking the strings to `Benchmark.check`."""
    data: DataSource | None = None
    """The public data `ace-eval data fetch NAME` downloads for it (`None`: it ships its data, or has none)."""
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
