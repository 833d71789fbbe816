"""The tau2-bench phases of an e2e run (`--benchmark tau2-<domain>`): tau2 runs the agent, ACE learns in between.

collect: the learn split through tau2 into `learn/` (tau2's files), imported by the tau2 importer as `collection/`;
baseline / evaluate: the evaluation split without and with the learned skillbook into `baseline/` and `evaluation/`,
each a tau2 results folder (`results.json`, `episodes.jsonl`, `plan.json`). A kill re-runs only unfinished episodes.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import threading
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

from ace.core.effectiveness import with_quarantined_released
from ace.core.skillbook import Skillbook
from ace.embeddings.base import Embedder
from ace.redaction import Redactor
from ace_eval.collection import MANIFEST_FILE, write_collection
from ace_eval.e2e.config import E2ESettings
from ace_eval.run.folder import RunFolder
from ace_eval.run.phases import BenchmarkRecord, PhaseRecord, task_results
from ace_eval.run.progress import Progress
from ace_eval.run.record import RunRecord
from ace_eval.run.redaction import redact_traces
from ace_eval.run.usage import RoleUsage

__all__ = [
    "LEARN_DIR",
    "Tau2Plan",
    "Tau2Run",
    "evaluation_skillbook",
    "install_learn_collection",
    "load_tau2",
    "plan_tau2",
    "run_phase",
    "tau2_benchmark",
]

LEARN_DIR = "learn"
"""The run folder's tau2 results of the learn split (the collection is imported from its `results.json`)."""
_IDS = frozenset({"id", "task_id", "trial", "seed"})
"""Keys of tau2's files that are ids the files need whole (redacted as ids, never searched for numbers)."""


def load_tau2() -> ModuleType:
    """`ace_eval.benchmarks.tau2`; without the extra, `Tau2NotInstalledError` (exit 2) names the install command."""
    import ace_eval.benchmarks.tau2 as tau2

    return tau2


@dataclass(frozen=True)
class Tau2Plan:
    """The tau2 domain of the run and the task ids of its two splits."""

    domain: str
    learn: tuple[str, ...]
    evaluate: tuple[str, ...]


def plan_tau2(settings: E2ESettings) -> Tau2Plan:
    """The domain and the splits' task ids, checked before anything is written (unknown split or id, `local` as
    the agent or user model, missing credentials: a `UserError`, exit 2), by the registered benchmark."""
    from ace_eval.benchmarks import BenchmarkEnv, load_benchmark
    from ace_eval.benchmarks.tau2_plugin import Tau2Benchmark

    benchmark = load_benchmark(settings.benchmark, settings.benchmark_raw_options())
    assert isinstance(benchmark, Tau2Benchmark), f"{settings.benchmark} is no tau2 benchmark"
    learn, evaluate = tuple(benchmark.tasks("learn")), tuple(benchmark.tasks("evaluate"))
    if settings.runs_agent:
        benchmark.check(BenchmarkEnv(model_names=settings.models))
    return Tau2Plan(benchmark.domain, learn, evaluate)


def run_phase(
    settings: E2ESettings,
    plan: Tau2Plan,
    directory: Path,
    *,
    task_ids: Sequence[str],
    skillbook: Path | None,
    embedder: Embedder,
    redactor: Redactor | None,
    phase: str,
    show_progress: bool | None,
) -> Path:
    """Run the unfinished episodes of `task_ids` x trials through tau2 into `directory` (its files redacted when
    `redactor` is set); returns `results.json`, whose pass^k is checked against `tau2.metrics`."""
    tau2 = load_tau2()
    config = tau2.EpisodeConfig(
        domain=plan.domain,
        agent_model=settings.agent_model,
        user_model=settings.user_model,
        num_trials=settings.num_trials,
        max_steps=settings.max_num_steps,
        max_workers=settings.max_workers,
        skillbook=skillbook,
        injection=settings.skill_injection,
        top_k=settings.top_k,
        provider_limit=settings.provider_limit,
        embedder=embedder,
    )
    journal = directory / tau2.JOURNAL_FILE
    done = sum(1 for line in journal.read_bytes().splitlines() if line.strip()) if journal.is_file() else 0
    total = len(task_ids) * settings.num_trials
    lock = threading.Lock()

    def sanitize(data: dict[str, Any]) -> dict[str, Any]:
        assert redactor is not None
        clean: dict[str, Any] = redactor.redact_data(data, numbered=False, skip_keys=_IDS)[0]
        return clean

    with Progress(phase, total, initial=min(done, total), verbose=settings.verbose, show=show_progress) as bar:

        def on_episode(run: Any) -> None:
            reward = run.reward_info.reward if run.reward_info is not None else 0.0
            with lock:
                bar.advance(line=f"task {run.task_id} trial {run.trial}  reward {reward:g}  {run.termination_reason}")

        results: Path = tau2.run_episodes(
            config,
            list(task_ids),
            directory,
            on_episode=on_episode,
            sanitize=sanitize if redactor is not None else None,
        )
    tau2.check_against_tau2(results)
    return results


def install_learn_collection(
    folder: RunFolder, results: Path, settings: E2ESettings, redactor: Redactor | None
) -> dict[str, int]:
    """The learn split's `results.json` through the tau2 importer as the run's `collection/` (swapped in whole);
    returns the values redacted per kind."""
    from ace_eval.collection.importers import import_tau2

    imported = import_tau2(results)
    traces, totals = redact_traces(imported.traces, redactor)
    fresh = folder.collection.with_name(f".{folder.collection.name}.tau2")
    shutil.rmtree(fresh, ignore_errors=True)
    write_collection(
        fresh,
        traces,
        source_system=imported.source_system,
        benchmark=imported.benchmark,
        models={"agent": settings.agent_model, "user": settings.user_model},
        metadata={
            "importer": "tau2",
            "results": f"{LEARN_DIR}/{results.name}",
            **({"redacted": True} if redactor is not None else {}),
        },
        redactor=redactor,
    )
    os.replace(fresh, folder.collection)
    return dict(sorted(totals.items()))


def evaluation_skillbook(skillbook: Skillbook, directory: Path) -> Path:
    """The file the agent reads the learned skillbook from; written once, so a resume evaluates the same file."""
    path = directory / "skillbook.json"
    if not path.is_file():
        directory.mkdir(parents=True, exist_ok=True)
        skillbook.save_to_file(path)
    return path


def _phase_record(
    results: Path, root: Path, *, name: str, settings: E2ESettings, task_ids: Sequence[str]
) -> PhaseRecord:
    tau2 = load_tau2()
    data = json.loads(results.read_text(encoding="utf-8"))
    rows = tau2.pass_hat_k(tau2.task_outcomes(data))
    episodes = len(data["simulations"])
    usage = {
        role: RoleUsage(
            requests=int(u["requests"]),
            input_tokens=int(u["prompt_tokens"]),
            output_tokens=int(u["completion_tokens"]),
            cost_usd=float(u["cost"]),
        )
        for role, u in tau2.usage_by_role(data).items()
    }
    tasks = task_results((str(sim["task_id"]), sim.get("trial"), _reward(sim)) for sim in data["simulations"])
    return PhaseRecord(
        name=name,
        benchmark=settings.benchmark,
        task_ids=list(task_ids),
        num_trials=settings.num_trials,
        path=str(results.parent.relative_to(root)),
        results=str(results.relative_to(root)),
        episodes=episodes,
        tasks=len(tasks),
        scored=episodes,
        errors=0,
        pass_hat_k=[row.value for row in rows],
        pass_hat_k_95=[(row.low, row.high) for row in rows],
        task_results=tasks,
        usage=usage,
    )


def _reward(simulation: Mapping[str, Any]) -> float:
    reward = (simulation.get("reward_info") or {}).get("reward")
    return float(reward) if isinstance(reward, int | float) else 0.0


def tau2_benchmark(folder: RunFolder, settings: E2ESettings, plan: Tau2Plan) -> BenchmarkRecord | None:
    """The tau2 phases of the run from tau2's files: pass^k with 95 % intervals before / after, each task's
    rewards, per-task deltas, and the agent's and user's tokens and cost (`RunRecord.set_benchmark` adds them to
    the run's usage)."""
    tau2 = load_tau2()
    phases = {
        "collect": (folder.path / LEARN_DIR, plan.learn),
        "baseline": (folder.baseline, plan.evaluate),
        "evaluate": (folder.evaluation, plan.evaluate),
        "evaluate_with_quarantined": (folder.evaluation_with_quarantined, plan.evaluate),
    }
    found = {
        name: _phase_record(path / tau2.RESULTS_FILE, folder.path, name=name, settings=settings, task_ids=ids)
        for name, (path, ids) in phases.items()
        if (path / tau2.RESULTS_FILE).is_file()
    }
    return BenchmarkRecord.of(found, collect_is_before=False)


@dataclass(frozen=True, kw_only=True)
class Tau2Run:
    """What the tau2 phases need of the segment that runs them."""

    settings: E2ESettings
    plan: Tau2Plan
    folder: RunFolder
    record: RunRecord
    embedder: Embedder
    redactor: Redactor | None
    show_progress: bool | None
    timed: Callable[[str], AbstractContextManager[None]]

    async def phase(self, directory: Path, phase: str, task_ids: tuple[str, ...], skillbook: Path | None) -> Path:
        results: Path = await asyncio.to_thread(
            run_phase,
            self.settings,
            self.plan,
            directory,
            task_ids=task_ids,
            skillbook=skillbook,
            embedder=self.embedder,
            redactor=self.redactor,
            phase=phase,
            show_progress=self.show_progress,
        )
        return results

    async def collect(self) -> None:
        """The learn split through tau2, imported as the collection (once: a resume after it keeps it)."""
        if (self.folder.collection / MANIFEST_FILE).is_file():
            return
        results = await self.phase(self.folder.path / LEARN_DIR, "collect", self.plan.learn, None)
        counts = install_learn_collection(self.folder, results, self.settings, self.redactor)
        self.record.set_collection_redactions(counts)

    async def evaluate(self, skillbook: Skillbook) -> None:
        """The evaluation split without the skillbook, with it, and with its quarantined skills back (if any)."""
        evaluate = self.plan.evaluate
        with self.timed("baseline"):
            await self.phase(self.folder.baseline, "baseline", evaluate, None)
        with self.timed("evaluate"):
            path = evaluation_skillbook(skillbook, self.folder.evaluation)
            await self.phase(self.folder.evaluation, "evaluate", evaluate, path)
        unquarantined = with_quarantined_released(skillbook)
        if unquarantined is not None:
            with self.timed("evaluate_with_quarantined"):
                directory = self.folder.evaluation_with_quarantined
                path = evaluation_skillbook(unquarantined, directory)
                await self.phase(directory, "evaluate_with_quarantined", evaluate, path)
