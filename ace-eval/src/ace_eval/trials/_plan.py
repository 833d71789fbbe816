"""A trial's plan (what `ace-eval trials` checked before writing anything) and its budget."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from ace.exceptions import RunError
from ace_eval.benchmarks import Benchmark, BenchmarkEnv
from ace_eval.gate import Side
from ace_eval.trials._vary import Candidate

__all__ = ["SCORES", "Budget", "BudgetExceeded", "TrialPlan"]

SCORES = "scores.json"


class BudgetExceeded(RunError):
    """The next candidate would take the trial past `--max-episodes` / `--max-cost`; says what ran."""


@dataclass(frozen=True, kw_only=True)
class Budget:
    """`--max-episodes` and `--max-cost` (`None`: no limit): checked before each candidate starts, against what the
    trial has spent plus the first candidate's actual usage as the estimate."""

    max_episodes: int | None = None
    max_cost: float | None = None

    def check(self, name: str, done: Sequence[str], spent: tuple[int, float], estimate: tuple[int, float]) -> None:
        episodes, cost = spent
        per_episodes, per_cost = estimate
        over = []
        if self.max_episodes is not None and episodes + per_episodes > self.max_episodes:
            over.append(f"--max-episodes {self.max_episodes} ({episodes} spent + about {per_episodes} for it)")
        if self.max_cost is not None and cost + per_cost > self.max_cost:
            over.append(f"--max-cost {self.max_cost:g} (${cost:.4f} spent + about ${per_cost:.4f} for it)")
        if over:
            ran = ", ".join(done) or "none"
            raise BudgetExceeded(f"stopped before candidate {name}: it would exceed {' and '.join(over)}; "
                                 f"finished candidates: {ran}")  # fmt: skip


@dataclass(frozen=True, kw_only=True)
class TrialPlan:
    """Everything a trial needs, checked before anything is written."""

    directory: Path
    benchmark: Benchmark
    """What scores the candidates (a benchmark or a `--scorer`)."""
    learner: Benchmark | None
    """What collects the learn split when no `traces` are given."""
    env: BenchmarkEnv
    base: dict[str, object]
    """The e2e settings every candidate shares (`E2ESettings.to_dict` keys)."""
    candidates: Sequence[Candidate]
    traces: Path | None
    """A given collection (`--traces`); `None`: the benchmark's learn split is collected once."""
    dev_tasks: tuple[str, ...]
    test_tasks: tuple[str, ...]
    num_trials: int
    incumbent: Side
    publish: Path | None = None
    command: str = ""
    budget: Budget = Budget()
    say: Callable[[str], None] = print
    max_parallel: int = 1
    """Candidates learning (and waiting for the one dev scoring slot) at once, each in a process of its own."""

    def label(self, candidate: Candidate) -> str:
        """`candidate i of N (name)`, as the progress names it."""
        return f"candidate {self.candidates.index(candidate) + 1} of {len(self.candidates)} ({candidate.name})"

    def scored_already(self, candidate: Candidate) -> bool:
        """The candidate's dev scores are on disk (finished: no budget is checked for it again)."""
        return (self.directory / "candidates" / candidate.name / "dev" / SCORES).is_file()
