"""A benchmark's phases in an e2e run folder through the protocol only (`ace_eval.benchmarks.phases`): what a
benchmark reports besides its collection (`Collected`: the learn split's scores, its redactions), the usage per
role and own results file its scores carry, and one progress line per finished episode, whatever the benchmark."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from _ace_scripts import make_trace

from ace.core.skillbook import Skillbook
from ace_eval.benchmarks import BenchmarkEnv
from ace_eval.benchmarks._protocol import Collected, SplitRole
from ace_eval.benchmarks.phases import SCORES_FILE, collect_phase, evaluate_phases, scores_record
from ace_eval.benchmarks.scores import BenchmarkScores, TrialScore, read_scores
from ace_eval.collection import Trace, write_collection
from ace_eval.run.folder import RunFolder
from ace_eval.run.usage import RoleUsage

TASKS = ("a", "b")
USAGE = {"agent": RoleUsage(requests=2, input_tokens=30, output_tokens=4, cost_usd=0.5)}


@dataclass
class CountingBenchmark:
    """Succeeds on task `a` only with a skillbook; calls `on_episode` after each episode; counts its usage."""

    name: str = "counting"
    calls: list[str] = field(default_factory=list)

    def splits(self) -> Mapping[str, Sequence[str]]:
        return {"test": TASKS}

    def tasks(self, role: SplitRole) -> Sequence[str]:
        return TASKS

    def models(self) -> Mapping[str, str | None]:
        return {}

    def check(self, env: BenchmarkEnv) -> None:
        return None

    def _scores(self, env: BenchmarkEnv, skillbook: Skillbook | None, num_trials: int, phase: str) -> BenchmarkScores:
        tasks: dict[str, list[TrialScore]] = {}
        for task in TASKS:
            for trial in range(num_trials):
                reward = 1.0 if task == "a" and skillbook is not None else 0.0
                tasks.setdefault(task, []).append(TrialScore.of(reward))
                if env.on_episode is not None:
                    env.on_episode(phase, f"task {task} trial {trial} reward {reward:g}")
        return BenchmarkScores(benchmark=self.name, tasks=tasks, num_trials=num_trials, usage=USAGE)

    def collect(
        self,
        env: BenchmarkEnv,
        *,
        skillbook: Skillbook | None,
        task_ids: Sequence[str],
        num_trials: int,
        directory: Path,
    ) -> Collected:
        self.calls.append("collect")
        scores = self._scores(env, skillbook, num_trials, "mine")
        traces = [Trace.model_validate(make_trace(i, "change")) for i in range(2)]
        write_collection(directory, traces, source_system="demo-test")
        return Collected(scores=scores, redactions={"email": 3})

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
        self.calls.append("evaluate")
        directory.mkdir(parents=True, exist_ok=True)
        (directory / "own.json").write_text("{}")
        return self._scores(env, skillbook, num_trials, "mine").model_copy(update={"results": "own.json"})


@contextmanager
def _untimed(phase: str) -> Iterator[None]:
    yield


def test_the_phases_record_the_learn_split_usage_own_results_and_one_line_per_episode(tmp_path: Path) -> None:
    folder = RunFolder.create(tmp_path)
    lines: list[tuple[str, str]] = []
    env = BenchmarkEnv(on_episode=lambda phase, line: lines.append((phase, line)))
    benchmark = CountingBenchmark()

    collected = asyncio.run(collect_phase(benchmark, env, folder, num_trials=2))
    assert collected is not None and dict(collected.redactions) == {"email": 3}
    assert read_scores(folder.learn / SCORES_FILE).usage == USAGE
    asyncio.run(evaluate_phases(benchmark, env, folder, Skillbook(), num_trials=2, timed=_untimed))

    # every episode is a line, under the phase the runner runs (whatever the benchmark calls it)
    assert [phase for phase, _ in lines] == ["collect"] * 4 + ["baseline"] * 4 + ["evaluate"] * 4
    assert lines[4] == ("baseline", "task a trial 0 reward 0")
    record = scores_record(folder)
    assert record is not None and record.learn is not None and record.before is not None and record.after is not None
    assert record.learn.usage == USAGE and record.before.usage == USAGE
    assert record.before.results == "baseline/own.json" and record.learn.results == "learn/scores.json"
    assert record.before.pass_hat_k == [0.0, 0.0] and record.after.pass_hat_k == [0.5, 0.5]

    # a resume collects and scores nothing again
    assert asyncio.run(collect_phase(benchmark, env, folder, num_trials=2)) is None
    asyncio.run(evaluate_phases(benchmark, env, folder, Skillbook(), num_trials=2, timed=_untimed))
    assert benchmark.calls == ["collect", "evaluate", "evaluate"]
