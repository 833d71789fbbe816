"""Run tau2 episodes (tau2's `run_task`: its orchestrator, user simulator and evaluator) concurrently, resumably.

Each finished episode is appended to `episodes.jsonl` (one fsynced line), so a killed run re-runs only the
unfinished ones. When every episode is done, `results.json` is written: a tau2 `Results` file that tau2's own
tools (`tau2 view`, `tau2.metrics`) and ace-eval's tau2 importer read.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import threading
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import nullcontext
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from pydantic_ai.models import Model

from ace.embeddings.base import Embedder
from ace.exceptions import RunError, UserError
from ace_eval.benchmarks.tau2._tau2 import Results, SimulationRun, run_info, run_task, tau2_version
from ace_eval.benchmarks.tau2.agent import (
    EMBEDDER_ARG,
    LOADED_ARG,
    SKILLBOOK_ARG,
    load_agent_skillbook,
    register_ace_agent,
    skill_args,
)
from ace_eval.benchmarks.tau2.domains import load_tasks
from ace_eval.benchmarks.tau2.limits import provider_limit
from ace_eval.benchmarks.tau2.served import Route, served_roles
from ace_eval.benchmarks.tau_bench.agent import SkillInjection

__all__ = [
    "JOURNAL_FILE",
    "PLAN_FILE",
    "RESULTS_FILE",
    "EpisodeConfig",
    "EpisodesFailedError",
    "PlanMismatchError",
    "run_episodes",
    "trial_seeds",
]

JOURNAL_FILE = "episodes.jsonl"
RESULTS_FILE = "results.json"
PLAN_FILE = "plan.json"
_SECRET_ARGS = ("api_key", "key", "token", "password", "secret")


class PlanMismatchError(UserError, ValueError):
    """The output folder holds episodes of a different plan."""


class EpisodesFailedError(RunError):
    """Some episodes raised; the finished ones are kept and a re-run retries only the failed ones."""


@dataclass(frozen=True, kw_only=True)
class EpisodeConfig:
    """Everything that decides a tau2 run besides its tasks; tau2's defaults where it has them."""

    domain: str
    agent_model: str
    user_model: str
    agent_llm_args: Mapping[str, Any] = field(default_factory=lambda: {"temperature": 0.0})
    user_llm_args: Mapping[str, Any] = field(default_factory=lambda: {"temperature": 0.0})
    num_trials: int = 1
    max_steps: int = 200
    max_errors: int = 10
    max_workers: int = 1
    seed: int = 300
    skillbook: Path | None = None
    injection: SkillInjection = "prompt"
    """How `skillbook` reaches the agent (ignored without one)."""
    top_k: int = 5
    provider_limit: int | None = None
    """At most this many model requests in flight per provider (`None`: only `max_workers` bounds them)."""
    user: str = "user_simulator"
    """The tau2 user implementation (a registered name)."""
    embedder: Embedder | None = None
    """The embedder the agent's `top-k` retrieval uses (`None`: the skillbook's default); not part of the plan."""
    models: Mapping[str, Model] = field(default_factory=dict)
    """pydantic-ai models by role (`agent`, `user`) served to tau2 over a loopback endpoint instead of the model
    string (tests' scripted ones); a role named `local` is served the embedded model. Not part of the plan."""

    def __post_init__(self) -> None:
        for name in ("num_trials", "max_steps", "max_errors", "max_workers", "top_k"):
            if getattr(self, name) < 1:
                raise UserError(f"{name} must be at least 1, got {getattr(self, name)}")
        for role, args in (("agent", self.agent_llm_args), ("user", self.user_llm_args)):
            secret = [k for k in args if any(word in k.lower() for word in _SECRET_ARGS)]
            if secret:
                raise UserError(
                    f"{role} LLM arguments {secret} look like credentials: tau2 writes LLM arguments into "
                    "results.json; set the provider's key in the environment (e.g. OPENAI_API_KEY) instead"
                )


def trial_seeds(seed: int, num_trials: int) -> list[int]:
    """One seed per trial, drawn exactly as `tau2.run.run_tasks` draws them."""
    rng = random.Random(seed)
    return [rng.randint(0, 1000000) for _ in range(num_trials)]


def _file_digest(path: Path | None) -> str | None:
    return hashlib.sha256(path.read_bytes()).hexdigest() if path is not None else None


_NOT_PLANNED = ("max_workers", "skillbook", "embedder", "models")


def _plan(config: EpisodeConfig, task_ids: list[str]) -> dict[str, Any]:
    """What must not change between a run and its resume (the worker count may)."""
    settings = {f.name: getattr(config, f.name) for f in fields(config) if f.name not in _NOT_PLANNED}
    settings["agent_llm_args"] = dict(config.agent_llm_args)
    settings["user_llm_args"] = dict(config.user_llm_args)
    return {
        **settings,
        "skillbook_sha256": _file_digest(config.skillbook),
        "task_ids": task_ids,
        "tau2_version": tau2_version(),
    }


def _read_journal(path: Path) -> list[Any]:
    """The finished episodes; a torn last line (a kill mid-write) is dropped and the file rewritten without it."""
    if not path.exists():
        return []
    raw = path.read_bytes()
    lines = raw.split(b"\n")
    runs: list[Any] = []
    kept: list[bytes] = []
    for line in lines:
        if not line.strip():
            continue
        try:
            runs.append(SimulationRun.model_validate_json(line))
            kept.append(line)
        except ValueError:
            continue
    clean = b"".join(line + b"\n" for line in kept)
    if clean != raw:
        _atomic_write(path, clean)
    return runs


def _atomic_write(path: Path, data: bytes) -> None:
    temp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with open(temp, "wb") as handle:
        handle.write(data)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(temp, path)


def _check_plan(out_dir: Path, plan: dict[str, Any]) -> None:
    path = out_dir / PLAN_FILE
    text = json.dumps(plan, indent=2, sort_keys=True, default=str)
    if path.exists():
        earlier = json.loads(path.read_text())
        if earlier != json.loads(text):
            changed = sorted(k for k in plan.keys() | earlier.keys() if earlier.get(k) != json.loads(text).get(k))
            raise PlanMismatchError(
                f"{out_dir} holds episodes of another plan (changed: {', '.join(changed)}); "
                "resume with the same settings or write to a new folder"
            )
        return
    _atomic_write(path, text.encode())


def run_episodes(
    config: EpisodeConfig,
    selection: str | Sequence[str],
    out_dir: str | os.PathLike[str],
    *,
    on_episode: Callable[[Any], None] | None = None,
    sanitize: Callable[[dict[str, Any]], dict[str, Any]] | None = None,
) -> Path:
    """Run every (task, trial) of `selection` (a split name or task ids) not yet in `out_dir`; returns `results.json`.

    Episodes run on up to `config.max_workers` threads; `on_episode` sees each finished tau2 `SimulationRun`.
    Raises `EpisodesFailedError` after the others finish if some episode raised (re-run to retry those).
    `sanitize` (e.g. redaction) rewrites each episode's JSON and the results file's before they are written.
    """
    tasks = load_tasks(config.domain, selection)
    folder = Path(out_dir)
    folder.mkdir(parents=True, exist_ok=True)
    _check_plan(folder, _plan(config, [task.id for task in tasks]))
    agent = register_ace_agent()
    agent_args = {**config.agent_llm_args, **skill_args(config.skillbook, config.injection, config.top_k)}
    user_args = dict(config.user_llm_args)
    # Objects tau2 hands to the agent untouched and never records; read once, shared by the run's episodes.
    in_process: dict[str, Any] = {}
    if config.embedder is not None:
        in_process[EMBEDDER_ARG] = config.embedder
    if LOADED_ARG not in agent_args and agent_args.get(SKILLBOOK_ARG):
        in_process[LOADED_ARG] = load_agent_skillbook(agent_args[SKILLBOOK_ARG])
    seeds = trial_seeds(config.seed, config.num_trials)
    journal = folder / JOURNAL_FILE
    done = {(run.task_id, run.trial): run for run in _read_journal(journal)}
    todo = [(task, trial) for trial in range(config.num_trials) for task in tasks if (task.id, trial) not in done]
    lock = threading.Lock()
    failures: list[str] = []

    names = {"agent": config.agent_model, "user": config.user_model}
    routes = {role: Route(name) for role, name in names.items()}

    def episode(task: Any, trial: int) -> None:
        agent_route, user_route = routes["agent"], routes["user"]
        try:
            run = run_task(
                domain=config.domain,
                task=task,
                agent=agent,
                user=config.user,
                llm_agent=agent_route.model,
                llm_args_agent={**agent_args, **in_process, **agent_route.llm_args},
                llm_user=user_route.model,
                llm_args_user={**user_args, **user_route.llm_args},
                max_steps=config.max_steps,
                max_errors=config.max_errors,
                seed=seeds[trial],
            )
        except Exception as error:  # one episode's failure must not lose the others
            with lock:
                failures.append(f"task {task.id} trial {trial}: {type(error).__name__}: {error}")
            return
        run.trial = trial
        line = _dump(run.model_dump(mode="json"), sanitize) + "\n"
        with lock:
            with open(journal, "a", encoding="utf-8") as handle:
                handle.write(line)
                handle.flush()
                os.fsync(handle.fileno())
            done[(run.task_id, trial)] = run
        if on_episode is not None:
            on_episode(run)

    with (
        served_roles(names, config.models, workers=config.max_workers) if todo else nullcontext(routes) as served,
        provider_limit(config.provider_limit),
        ThreadPoolExecutor(max_workers=config.max_workers, thread_name_prefix="tau2-episode") as pool,
    ):
        routes.update(served)  # models of this process: a loopback endpoint for as long as the episodes run
        for future in [pool.submit(episode, task, trial) for task, trial in todo]:
            future.result()
    if failures:
        raise EpisodesFailedError(
            f"{len(failures)} of {len(todo)} episodes failed (the {len(done)} finished are kept in {journal}; "
            "run again to retry only the failed ones):\n" + "\n".join(failures)
        )
    info = run_info(
        domain=config.domain,
        agent=agent,
        user=config.user,
        llm_agent=config.agent_model,
        llm_args_agent=agent_args,
        llm_user=config.user_model,
        llm_args_user=user_args,
        num_trials=config.num_trials,
        max_steps=config.max_steps,
        max_errors=config.max_errors,
        seed=config.seed,
    )
    order = {task.id: index for index, task in enumerate(tasks)}
    simulations = sorted(done.values(), key=lambda run: (run.trial, order[run.task_id]))
    results = Results(info=info, tasks=tasks, simulations=simulations)
    path = folder / RESULTS_FILE
    _atomic_write(path, _dump(results.model_dump(mode="json"), sanitize, indent=2).encode())
    return path


def _dump(data: dict[str, Any], sanitize: Callable[[dict[str, Any]], dict[str, Any]] | None, **kw: Any) -> str:
    return json.dumps(sanitize(data) if sanitize is not None else data, ensure_ascii=False, **kw)
