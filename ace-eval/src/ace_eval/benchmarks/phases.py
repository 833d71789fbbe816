"""A benchmark's phases in an e2e run folder, through the `Benchmark` protocol only: collect the learn split into
`collection/` (the learn split's scores, when the benchmark reports them, in `learn/scores.json`), score the
evaluation split without the skillbook (`baseline/`), with it (`evaluation/`) and with its quarantined skills back
(`evaluation_with_quarantined/`), each phase's scores in its folder's `scores.json`. Every finished episode is a
line of the phase's progress (`BenchmarkEnv.on_episode`).

A phase whose `scores.json` exists is done: a resume scores only the phases it is missing. A benchmark whose phases
keep their episodes in the phase's folder (`EpisodeFolders`) resumes each phase itself and is recorded from it.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path

from ace.core.effectiveness import with_quarantined_released
from ace.core.skillbook import Skillbook
from ace_eval.benchmarks._protocol import Benchmark, BenchmarkEnv, Collected, EpisodeFolders
from ace_eval.benchmarks.scores import BenchmarkScores, PassHatK, read_scores, write_scores
from ace_eval.benchmarks.table import format_table
from ace_eval.collection import MANIFEST_FILE, Trace
from ace_eval.run.folder import RunFolder
from ace_eval.run.phases import BenchmarkRecord, PhaseRecord, TaskResult
from ace_eval.run.progress import Progress

__all__ = [
    "SCORES_FILE",
    "collect_phase",
    "episode_folders",
    "episode_progress",
    "evaluate_phases",
    "scores_record",
    "scores_table",
]

SCORES_FILE = "scores.json"


def episode_folders(benchmark: object) -> EpisodeFolders | None:
    """`benchmark` when its phases keep their episodes in the phase folders (`EpisodeFolders`), else `None`."""
    return benchmark if isinstance(benchmark, EpisodeFolders) else None


@contextmanager
def episode_progress(benchmark: Benchmark, env: BenchmarkEnv, phase: str, total: int) -> Iterator[BenchmarkEnv]:
    """`env` whose `on_episode` advances a bar of `phase` (and calls the harness's own `on_episode`, if any); a
    benchmark that shows its own progress (`EpisodeFolders`) gets the phase's name instead of a bar."""
    if isinstance(benchmark, EpisodeFolders):
        yield dataclasses.replace(env, phase=phase)
        return
    outer = env.on_episode
    with Progress(phase, total, verbose=env.verbose, show=env.show_progress) as bar:

        def on_episode(_: str, line: str) -> None:
            bar.advance(line=line)
            if outer is not None:
                outer(phase, line)

        yield dataclasses.replace(env, on_episode=on_episode, phase=phase)


async def collect_phase(
    benchmark: Benchmark, env: BenchmarkEnv, folder: RunFolder, *, num_trials: int
) -> Collected | None:
    """The learn split's traces into the run's `collection/` (once: a resume after it keeps it, and returns
    `None`, except for a benchmark that resumes its own episode folders, `EpisodeFolders`); the learn split's
    scores, when the benchmark reports them, into `learn/scores.json`."""
    if not isinstance(benchmark, EpisodeFolders) and (folder.collection / MANIFEST_FILE).is_file():
        return None
    task_ids = list(benchmark.tasks("learn"))
    with episode_progress(benchmark, env, "collect", len(task_ids) * num_trials) as shown:
        collected = await asyncio.to_thread(
            benchmark.collect,
            shown,
            skillbook=None,
            task_ids=task_ids,
            num_trials=num_trials,
            directory=folder.collection,
        )
    if collected is not None and collected.scores is not None:
        folder.learn.mkdir(parents=True, exist_ok=True)
        write_scores(folder.learn / SCORES_FILE, collected.scores)
    return collected


async def evaluate_phases(
    benchmark: Benchmark,
    env: BenchmarkEnv,
    folder: RunFolder,
    skillbook: Skillbook,
    *,
    num_trials: int,
    timed: Callable[[str], AbstractContextManager[None]],
    replayed: Sequence[Trace] | None = None,
) -> None:
    """The evaluation split without the skillbook, with it, and with its quarantined skills back (if any), each
    timed as its phase; the same seeds (the benchmark's) for every phase, so the phases are paired. A phase whose
    `scores.json` exists is skipped.

    A benchmark that keeps its episodes in the phase folders (`EpisodeFolders`) resumes every phase itself, is
    evaluated on the tasks of the `replayed` traces when the run replays a collection, and runs no baseline when
    the collected episodes are it (`EpisodeFolders.collect_is_baseline`).
    """
    episodes = episode_folders(benchmark)
    baseline = episodes is None or replayed is not None or not episodes.collect_is_baseline()
    phases: list[tuple[str, Path, Skillbook | None]] = [("baseline", folder.baseline, None)] if baseline else []
    phases.append(("evaluate", folder.evaluation, skillbook))
    unquarantined = with_quarantined_released(skillbook)
    if unquarantined is not None:
        phases.append(("evaluate_with_quarantined", folder.evaluation_with_quarantined, unquarantined))
    if episodes is not None and replayed is not None:
        tasks = list(episodes.replayed_tasks(replayed))
    else:
        tasks = list(benchmark.tasks("evaluate"))
    for phase, directory, book in phases:
        if episodes is None and (directory / SCORES_FILE).is_file():
            continue
        with timed(phase), episode_progress(benchmark, env, phase, len(tasks) * num_trials) as shown:
            scores = await asyncio.to_thread(
                benchmark.evaluate,
                shown,
                skillbook=book,
                task_ids=tasks,
                num_trials=num_trials,
                seeds=None,
                directory=directory,
            )
            directory.mkdir(parents=True, exist_ok=True)
            write_scores(directory / SCORES_FILE, scores)


def _phase_record(name: str, scores: BenchmarkScores, path: Path, root: Path) -> PhaseRecord:
    rows = scores.pass_hat_ks()
    trials = [t for task in scores.tasks.values() for t in task]
    errors = sum(1 for t in trials if t.error is not None)
    scored = [t.reward for t in trials if t.error is None]
    return PhaseRecord(
        name=name,
        benchmark=scores.benchmark,
        task_ids=list(scores.tasks),
        num_trials=scores.num_trials,
        path=str(path.parent.relative_to(root)),
        results=str((path.parent / (scores.results or path.name)).relative_to(root)),
        episodes=len(trials),
        tasks=len(scores.tasks),
        scored=len(scored),
        errors=errors,
        mean_reward=sum(scored) / len(scored) if scored else None,
        pass_hat_k=[row.value for row in rows],
        pass_hat_k_95=[(row.low, row.high) for row in rows],
        task_results=[
            TaskResult(task_id=task, rewards=[None if t.error is not None else t.reward for t in trials])
            for task, trials in scores.tasks.items()
        ],
        usage=scores.usage,
    )


def scores_record(
    folder: RunFolder, benchmark: Benchmark | None = None, *, replayed: bool = False, num_trials: int = 1
) -> BenchmarkRecord | None:
    """`run.json`'s `benchmark` from the phases' `scores.json`: pass^k with 95 % intervals before / after and each
    task's rewards, with the usage per role the benchmark counted (`None` before any phase was scored). A benchmark
    that keeps its episodes in the phase folders (`EpisodeFolders`) records each phase from its folder instead, also
    one stopped halfway (its `collection/` unless the run `replayed` traces)."""
    phases = {
        "collect": folder.learn,
        "baseline": folder.baseline,
        "evaluate": folder.evaluation,
        "evaluate_with_quarantined": folder.evaluation_with_quarantined,
    }
    episodes = episode_folders(benchmark)
    if episodes is not None:
        phases["collect"] = folder.collection
        if replayed:
            del phases["collect"]
        records = {
            name: record
            for name, path in phases.items()
            if (record := episodes.phase_record(name, path, num_trials=num_trials)) is not None
        }
        return BenchmarkRecord.of(records, collect_is_before=episodes.collect_is_baseline())
    return BenchmarkRecord.of(
        {
            name: _phase_record(name, read_scores(path / SCORES_FILE), path / SCORES_FILE, folder.path)
            for name, path in phases.items()
            if (path / SCORES_FILE).is_file()
        },
        collect_is_before=False,
    )


def scores_table(benchmark: BenchmarkRecord | None) -> str | None:
    """pass^k baseline -> with the skillbook, each with its 95 % interval, from `run.json`'s `benchmark` (`None`
    when the benchmark recorded no intervals)."""
    if benchmark is None or benchmark.before is None or not benchmark.before.pass_hat_k_95:
        return None

    def rows(phase: PhaseRecord | None) -> list[PassHatK]:
        if phase is None or not phase.pass_hat_k_95:
            return []
        return [
            PassHatK(k, value, *interval)
            for k, value, interval in zip(phase.ks, phase.pass_hat_k, phase.pass_hat_k_95, strict=False)
            if value is not None and interval is not None
        ]

    after = rows(benchmark.after)
    return format_table(rows(benchmark.before), after or None)
