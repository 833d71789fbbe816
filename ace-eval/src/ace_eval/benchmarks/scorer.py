"""`--benchmark MODULE:FUNCTION`: a user's own evaluation as a benchmark.

```python
def evaluate(skillbook: ace.Skillbook, task_ids: list[str], num_trials: int) -> Mapping[str, Sequence[float]]:
    ...  # task id -> one reward per trial; success is reward >= 1
```

The function is imported when the benchmark is built (before a run writes anything) and its return value is
checked whole: every task asked for, exactly `num_trials` finite rewards each. A scorer scores; it collects no
traces (an e2e run with it replays `--traces`).
"""

from __future__ import annotations

import importlib
import inspect
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from numbers import Real
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from ace.core.skillbook import Skillbook
from ace_eval.benchmarks._protocol import BenchmarkConfigError, BenchmarkEnv, BenchmarkFactory, SplitRole
from ace_eval.benchmarks.scores import BenchmarkScores, TrialScore

__all__ = ["SCORER", "ScorerBenchmark", "ScorerError", "ScorerOptions", "scorer_benchmark"]

ScoreFn = Callable[[Skillbook, list[str], int], Mapping[str, Sequence[float]]]


class ScorerError(BenchmarkConfigError):
    """A scoring function that cannot be imported, or whose return value is not rewards per task and trial."""


class ScorerOptions(BaseModel):
    """The options of a `MODULE:FUNCTION` benchmark."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    tasks: list[str] = Field(default_factory=list, description="The task ids scored (`--benchmark-option tasks=a`).")


def _load(spec: str) -> ScoreFn:
    module_name, _, attr = spec.partition(":")
    if not module_name or not attr:
        raise ScorerError(f"scorer {spec!r}: a scorer is MODULE:FUNCTION, e.g. my_evals:score")
    try:
        module = importlib.import_module(module_name)
    except ImportError as e:
        raise ScorerError(
            f"scorer {spec!r}: module {module_name!r} cannot be imported ({e}); install it or run from the "
            "folder that holds it (it must be importable by the Python that runs ace-eval)"
        ) from None
    fn = getattr(module, attr, None)
    if not callable(fn):
        raise ScorerError(f"scorer {spec!r}: {module_name} has no function {attr!r}")
    try:
        inspect.signature(fn).bind(Skillbook(), [], 1)
    except TypeError:
        raise ScorerError(
            f"scorer {spec!r}: {attr} must take (skillbook, task_ids, num_trials), it has the signature "
            f"{inspect.signature(fn)}"
        ) from None
    loaded: ScoreFn = fn
    return loaded


def check_rewards(spec: str, result: object, task_ids: Sequence[str], num_trials: int) -> dict[str, list[float]]:
    """`result` as task id -> `num_trials` finite rewards, or a `ScorerError` naming what is wrong and the fix."""
    shape = f"return a mapping task id -> a list of {num_trials} reward(s) (floats; success is reward >= 1)"
    if not isinstance(result, Mapping):
        raise ScorerError(f"scorer {spec} returned a {type(result).__name__}: {shape}")
    missing = [task for task in task_ids if task not in result]
    extra = [str(task) for task in result if task not in task_ids]
    if missing or extra:
        said = "; ".join(
            part
            for part in (
                f"missing task(s) {', '.join(missing)}" if missing else "",
                f"task(s) not asked for {', '.join(extra)}" if extra else "",
            )
            if part
        )
        raise ScorerError(f"scorer {spec}: {said}: {shape} for exactly the task ids it was given")
    out: dict[str, list[float]] = {}
    for task in task_ids:
        rewards = result[task]
        if isinstance(rewards, str | bytes) or not isinstance(rewards, Sequence):
            raise ScorerError(f"scorer {spec}: task {task!r} has {type(rewards).__name__} {rewards!r}: {shape}")
        if len(rewards) != num_trials:
            raise ScorerError(f"scorer {spec}: task {task!r} has {len(rewards)} reward(s) for {num_trials} trial(s)")
        bad = [r for r in rewards if isinstance(r, bool) or not isinstance(r, Real) or not math.isfinite(float(r))]
        if bad:
            raise ScorerError(f"scorer {spec}: task {task!r} has the reward {bad[0]!r}, not a finite number: {shape}")
        out[task] = [float(r) for r in rewards]
    return out


@dataclass(frozen=True)
class ScorerBenchmark:
    """A user's scoring function behind the `Benchmark` protocol."""

    name: str
    fn: ScoreFn
    options: ScorerOptions

    def splits(self) -> Mapping[str, Sequence[str]]:
        return {"tasks": list(self.options.tasks)}

    def tasks(self, role: SplitRole) -> Sequence[str]:
        if role == "learn":
            return ()
        if not self.options.tasks:
            raise ScorerError(
                f"benchmark {self.name}: name the task ids it scores: --benchmark-option tasks=ID (repeatable), "
                "or `tasks = [...]` in [e2e.benchmark]"
            )
        return tuple(self.options.tasks)

    def models(self) -> Mapping[str, str | None]:
        return {}

    def check(self, env: BenchmarkEnv) -> None:
        return None

    def collect(
        self,
        env: BenchmarkEnv,
        *,
        skillbook: Skillbook | None,
        task_ids: Sequence[str],
        num_trials: int,
        directory: Path,
    ) -> None:
        raise ScorerError(
            f"benchmark {self.name} is a scoring function: it collects no traces; replay a collection with --traces DIR"
        )

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
        ids = list(task_ids)
        result = self.fn(skillbook if skillbook is not None else Skillbook(), ids, num_trials)
        rewards = check_rewards(self.name, result, ids, num_trials)
        trial_seeds = list(seeds) if seeds is not None else [None] * num_trials
        return BenchmarkScores(
            benchmark=self.name,
            tasks={
                task: [
                    TrialScore(reward=r, success=r >= 1.0, tokens=0, cost=None, seed=trial_seeds[i], error=None)
                    for i, r in enumerate(values)
                ]
                for task, values in rewards.items()
            },
            num_trials=num_trials,
            seeds=[s for s in trial_seeds if s is not None],
            models={},
            skillbook=None,
        )


def _build(name: str, options: ScorerOptions) -> ScorerBenchmark:
    return ScorerBenchmark(name, _load(name), options)


SCORER: BenchmarkFactory[Any] = BenchmarkFactory(
    description="A user's scoring function: MODULE:FUNCTION(skillbook, task_ids, num_trials) -> rewards per task.",
    options=ScorerOptions,
    build=_build,
    harness_settings=frozenset(),
)


def scorer_benchmark(spec: str, raw: Mapping[str, Any]) -> ScorerBenchmark:
    """`MODULE:FUNCTION` as a benchmark (imported now: a missing module stops before anything is written)."""
    benchmark = SCORER.create(spec, raw)
    assert isinstance(benchmark, ScorerBenchmark)
    return benchmark
