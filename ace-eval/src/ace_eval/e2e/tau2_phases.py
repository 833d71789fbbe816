"""The tau2-bench phases of an e2e run (`--benchmark tau2-<domain>`): tau2 runs the agent, ACE learns in between.

collect: the learn split through tau2 into `learn/` (tau2's files), imported by the tau2 importer as `collection/`;
baseline / evaluate: the evaluation split without and with the learned skillbook into `baseline/` and `evaluation/`,
each a tau2 results folder (`results.json`, `episodes.jsonl`, `plan.json`). A kill re-runs only unfinished episodes.
"""

from __future__ import annotations

import json
import os
import shutil
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

from ace.core.skillbook import Skillbook
from ace.embeddings.base import Embedder
from ace.llm import ModelConfigError
from ace.llm.credentials import missing_credentials
from ace.redaction import Redactor
from ace_eval.collection import write_collection
from ace_eval.e2e.config import DEFAULT_MODEL, E2ESettings
from ace_eval.e2e.preflight import PreflightError
from ace_eval.e2e.progress import Progress
from ace_eval.run.folder import RunFolder
from ace_eval.run.redaction import redact_traces
from ace_eval.run.usage import total_cost

__all__ = [
    "LEARN_DIR",
    "Tau2Plan",
    "evaluation_skillbook",
    "install_learn_collection",
    "load_tau2",
    "plan_tau2",
    "run_phase",
    "tau2_record",
    "tau2_table",
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
    the agent or user model, missing credentials: a `UserError`, exit 2)."""
    tau2 = load_tau2()
    domain = tau2.benchmark_domain(settings.benchmark)
    splits: dict[str, list[str]] = tau2.task_splits(domain)
    learn = _select(tau2, domain, splits, settings.train_split, tau2.DEFAULT_TRAIN_SPLIT, settings.limit)
    evaluate = _select(tau2, domain, splits, settings.eval_split, tau2.DEFAULT_EVAL_SPLIT, settings.limit)
    if settings.runs_agent:
        from ace_eval.benchmarks.tau2.scripted import PROVIDER

        _check_models(settings, scripted=f"{PROVIDER}/")
    return Tau2Plan(domain, learn, evaluate)


def _select(
    tau2: ModuleType,
    domain: str,
    splits: Mapping[str, Sequence[str]],
    value: str | None,
    default: str,
    limit: int | None,
) -> tuple[str, ...]:
    """A split name (`train`, `test`, `base`, ...) or comma-separated task ids; the domain's default split, else
    `base` (mock has only `base`)."""
    name = value if value is not None else (default if default in splits else "base")
    if name in splits:
        tasks = tau2.load_tasks(domain, name)
    else:
        ids = [part.strip() for part in name.split(",") if part.strip()]
        try:
            tasks = tau2.load_tasks(domain, ids)
        except tau2.TaskSelectionError:
            if "," in name:
                raise
            tasks = tau2.load_tasks(domain, name)  # one word that is no task id: the error lists the splits
    return tuple(str(task.id) for task in tasks[:limit])


def _check_models(settings: E2ESettings, *, scripted: str) -> None:
    problems: list[str] = []
    for role in ("agent", "user"):
        model = settings.model_for(role)
        where = f"{role} model {model!r} ({settings.source_of(f'{role}_model')}; change it with --{role}-model)"
        if model == DEFAULT_MODEL:
            problems.append(
                f"{where}: tau2 calls its models through litellm and the embedded offline model is not one; pass a "
                "litellm model string, e.g. anthropic/claude-haiku-4-5-20251001"
            )
            continue
        if model.startswith(scripted):  # registered in this process (tests)
            continue
        try:
            missing = missing_credentials(model)
        except ModelConfigError as e:
            problems.append(f"{where}: {e}")
            continue
        if missing:
            problems.append(f"{where}: set {' and '.join(missing)} in the environment (e.g. `export {missing[0]}=...`)")
    if problems:
        raise PreflightError(problems)


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


def _phase_record(results: Path, root: Path) -> dict[str, Any]:
    tau2 = load_tau2()
    data = json.loads(results.read_text(encoding="utf-8"))
    rows = tau2.pass_hat_k(tau2.task_outcomes(data))
    episodes = len(data["simulations"])
    usage = {
        role: {
            "requests": int(u["requests"]),
            "input_tokens": int(u["prompt_tokens"]),
            "output_tokens": int(u["completion_tokens"]),
            "cost_usd": float(u["cost"]),
        }
        for role, u in tau2.usage_by_role(data).items()
    }
    return {
        "results": str(results.relative_to(root)),
        "episodes": episodes,
        "tasks": len({sim["task_id"] for sim in data["simulations"]}),
        "scored": episodes,
        "errors": 0,
        "pass_hat_k": {str(row.k): row.value for row in rows},
        "pass_hat_k_95": {str(row.k): [row.low, row.high] for row in rows},
        "usage": usage,
    }


def tau2_record(record: dict[str, Any], folder: RunFolder) -> None:
    """Put the tau2 results in `run.json`: pass^k with 95 % intervals before / after, per-task deltas, and the
    agent's and user's tokens and cost (from tau2's files of every phase) in `usage`."""
    tau2 = load_tau2()
    phases = {
        "collect": folder.path / LEARN_DIR,
        "before": folder.baseline,
        "after": folder.evaluation,
        "after_with_quarantined": folder.evaluation_with_quarantined,
    }
    found = {
        name: _phase_record(path / tau2.RESULTS_FILE, folder.path)
        for name, path in phases.items()
        if (path / tau2.RESULTS_FILE).is_file()
    }
    benchmark: dict[str, Any] = {k: found.get(k) for k in ("before", "after")}
    if "after_with_quarantined" in found:
        benchmark["after_with_quarantined"] = found["after_with_quarantined"]
    if "collect" in found:
        benchmark["learn"] = found["collect"]
    if "before" in found and "after" in found:
        deltas = tau2.task_deltas(folder.baseline / tau2.RESULTS_FILE, folder.evaluation / tau2.RESULTS_FILE)
        benchmark["task_deltas"] = [
            {"task_id": d.task_id, "baseline": d.baseline, "with_ace": d.candidate, "delta": d.delta} for d in deltas
        ]
    record["benchmark"] = benchmark if found else None
    usage = dict(record.get("usage") or {})
    for role in ("agent", "user"):
        items = [phase["usage"][role] for phase in found.values()]
        if items:
            usage[role] = {
                key: sum(item[key] for item in items) for key in ("requests", "input_tokens", "output_tokens")
            } | {"cost_usd": sum(item["cost_usd"] for item in items)}
    record["usage"] = usage
    record["cost_usd"] = total_cost(usage)


def tau2_table(record: Mapping[str, Any]) -> str | None:
    """The peer's table shape from `run.json`: pass^k baseline -> with ACE, each with its 95 % interval."""
    benchmark = record.get("benchmark") or {}
    before = benchmark.get("before")
    if not before:
        return None
    tau2 = load_tau2()

    def rows(phase: Mapping[str, Any] | None) -> list[Any]:
        if not phase:
            return []
        return [
            tau2.PassHatK(int(k), float(v), *map(float, phase["pass_hat_k_95"][k]))
            for k, v in phase["pass_hat_k"].items()
        ]

    after = rows(benchmark.get("after"))
    table: str = tau2.format_table(rows(before), after or None)
    return table
