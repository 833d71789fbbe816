"""`scoreboard.json`: a trial's candidates, their paired dev scores, the winner, the Pareto set, the gate against
the incumbent and the winner's held-out test score. One model reads and writes it."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from ace.core.storage import atomic_write, bytes_writer
from ace_eval.benchmarks.scores import BenchmarkScores, PassHatK, read_score_json
from ace_eval.gate import GateResult

__all__ = ["SCOREBOARD_FILE", "CandidateEntry", "DevScore", "Scoreboard", "TestScore", "read_scoreboard"]

SCOREBOARD_FILE = "scoreboard.json"

Verdict = Literal["won", "lost"]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class DevScore(_Strict):
    """A skillbook's score on the dev tasks: the mean reward, each task's rewards, pass^k with intervals."""

    mean: float
    per_task: dict[str, list[float]]
    pass_hat_k: list[PassHatK]
    tokens: int = 0
    """The scored episodes' tokens."""

    @classmethod
    def of(cls, scores: BenchmarkScores) -> DevScore:
        rewards = scores.rewards()
        means = [sum(r) / len(r) for r in rewards.values() if r]
        return cls(
            mean=sum(means) / len(means) if means else 0.0,
            per_task=rewards,
            pass_hat_k=scores.pass_hat_ks(),
            tokens=sum(t.tokens or 0 for trials in scores.tasks.values() for t in trials),
        )


class CandidateEntry(_Strict):
    """One candidate: what it varied, where its run and skillbook are, its dev score, its learning's usage."""

    name: str
    settings: dict[str, object]
    run_dir: str
    skillbook: str
    dev: DevScore
    tokens: int
    """Tokens its learning used (every role of its run)."""
    cost_usd: float | None = None
    verdict: Verdict = "lost"


class TestScore(_Strict):
    """The winner's score on the held-out test tasks, scored once after selection."""

    candidate: str
    tasks: list[str]
    mean: float
    per_task: dict[str, list[float]]
    pass_hat_k: list[PassHatK]


class Scoreboard(_Strict):
    """`scoreboard.json`."""

    benchmark: str
    dev_tasks: list[str]
    test_tasks: list[str] = Field(default_factory=list)
    num_trials: int
    seeds: list[int] = Field(default_factory=list)
    candidates: list[CandidateEntry]
    winner: str
    pareto: list[str]
    """Candidates best (ties included) on at least one dev task."""
    incumbent: str
    gate: GateResult
    published: str | None = None
    """`STORE version N` when the gate promoted the winner and --publish was given."""
    test: TestScore | None = None

    def write(self, path: Path) -> None:
        atomic_write(path, bytes_writer((self.model_dump_json(indent=1) + "\n").encode("utf-8")))


def read_scoreboard(path: Path) -> Scoreboard:
    """The scoreboard at `path` (a `UserError` naming the file when it is not one)."""
    return Scoreboard.model_validate(read_score_json(path, fix="run the trial again or pass its folder"))
