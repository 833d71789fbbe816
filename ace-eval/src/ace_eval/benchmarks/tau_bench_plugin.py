"""tau-bench v1 airline as a registered benchmark (`tau-bench-airline`): ACE's own port of Sierra's environment,
its 50 test tasks scored by the gold actions' data hash and the required outputs."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from ace.core.skillbook import Skillbook
from ace.exceptions import UserError
from ace.llm import infer_model
from ace_eval.benchmarks._protocol import (
    BenchmarkConfigError,
    BenchmarkEnv,
    BenchmarkFactory,
    DataSource,
    SplitRole,
    resolve_tasks,
)
from ace_eval.benchmarks.injection import SkillInjection
from ace_eval.benchmarks.scores import BenchmarkScores, TrialScore
from ace_eval.benchmarks.tau_bench import SOURCE_SYSTEM, AirlineData, EpisodeConfig, load_airline_data
from ace_eval.benchmarks.tau_bench.episodes import benchmark_summary, drop_errored_episodes, first_error, run_episodes
from ace_eval.benchmarks.tau_bench.fetch import DEFAULT_REF, UPSTREAM_REPO, fetch_airline_data
from ace_eval.collection import MANIFEST_FILE, CollectionWriter, Trace, read_collection
from ace_eval.run.abort import RunFailedError
from ace_eval.run.phases import PhaseRecord
from ace_eval.run.progress import Progress

__all__ = ["TauBenchAirline", "TauBenchOptions", "scores_of_episodes", "tau_bench_airline"]

DATA_DIR_ENV = "ACE_TAU_BENCH_DATA"


class TauBenchOptions(BaseModel):
    """The options of tau-bench airline."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    data_dir: Path | None = Field(None, description=f"The airline data folder (default ${DATA_DIR_ENV}).")
    train_split: str = Field("test", description="The tasks learned on: `test` (all 50) or comma-separated ids.")
    eval_split: str = Field("test", description="The tasks scored: `test` or comma-separated task ids.")
    limit: int | None = Field(None, ge=1, description="Only the first N tasks of each split.")
    max_num_steps: int = Field(30, ge=1, description="Agent model requests per episode.")
    skill_injection: SkillInjection = Field("prompt", description="How the agent sees skills.")
    top_k: int = Field(5, ge=1, description="Skills retrieved per episode with skill_injection=top-k.")
    skill_tokens: int | None = Field(None, ge=1, description="With top-k: as many skills as fit this many tokens.")


@dataclass
class TauBenchAirline:
    """tau-bench airline: ACE's agent against a simulated user, scored by tau-bench's reward. Every phase keeps its
    episodes as a trace collection in its folder (`EpisodeFolders`): a resumed phase runs only the missing ones."""

    name: str
    options: TauBenchOptions
    _data: AirlineData | None = field(default=None, repr=False)

    def data(self) -> AirlineData:
        """The airline data (loaded once); a missing folder names how to get it."""
        if self._data is None:
            self._data = load_airline_data(self.data_folder())
        return self._data

    def _given_folder(self) -> Path | None:
        return self.options.data_dir or (Path(os.environ[DATA_DIR_ENV]) if os.environ.get(DATA_DIR_ENV) else None)

    def resolved_options(self, model_names: Mapping[str, str]) -> dict[str, object]:
        """The options with `data_dir` as used: the option, else `$ACE_TAU_BENCH_DATA`, absolute (`None`: neither)."""
        del model_names  # no option depends on the models
        folder = self._given_folder()
        return {**self.options.model_dump(mode="json"), "data_dir": str(folder.absolute()) if folder else None}

    def data_folder(self) -> Path:
        """`data_dir`, else `$ACE_TAU_BENCH_DATA`; refused with the fix when neither is set."""
        folder = self._given_folder()
        if folder is None:
            raise BenchmarkConfigError(
                f"{self.name} needs the airline data: pass --data-dir DIR or set {DATA_DIR_ENV} (or "
                "--benchmark-option data_dir=DIR); get it with `ace-eval data fetch tau-bench`; to replay traces "
                "without running the agent, pass --traces DIR (without --benchmark)"
            )
        return folder

    def splits(self) -> Mapping[str, Sequence[str]]:
        return {"test": [str(i) for i in range(len(self.data().tasks))]}

    def tasks(self, role: SplitRole) -> Sequence[str]:
        selection = self.options.train_split if role == "learn" else self.options.eval_split
        return resolve_tasks(self.name, self.splits(), selection)[: self.options.limit]

    def models(self) -> Mapping[str, str | None]:
        return {"agent": None, "user": None}

    def check(self, env: BenchmarkEnv) -> None:
        self.data()

    def check_gold(
        self, *, recorded: Path | None, progress: bool, out: Callable[[str], None], err: Callable[[str], None]
    ) -> bool:
        """Every task's gold hash, or the runs of a tau-bench results file re-executed and re-scored."""
        from ace_eval.benchmarks.tau_bench_gold import check_airline_gold

        return check_airline_gold(self.data(), recorded, progress=progress, out=out, err=err)

    def collect_is_baseline(self) -> bool:
        return self.options.train_split == self.options.eval_split

    def replayed_tasks(self, traces: Sequence[Trace]) -> Sequence[str]:
        tasks = len(self.data().tasks)
        ids: set[int] = set()
        for trace in traces:
            task = trace.task_id
            if task is None or not task.isdigit() or int(task) >= tasks:
                raise BenchmarkConfigError(
                    f"trace {trace.trace_uid!r} has task_id {task!r}, which is not a task of the tau-bench airline "
                    f"data (0-{tasks - 1}): the agent cannot be evaluated on these traces; pass --no-benchmark"
                )
            ids.add(int(task))
        return [str(task) for task in sorted(ids)]

    def phase_record(self, name: str, directory: Path, *, num_trials: int) -> PhaseRecord | None:
        if not (directory / MANIFEST_FILE).is_file():
            return None
        _, episodes = read_collection(directory)
        task_ids = list(dict.fromkeys(str(t.task_id) for t in episodes))
        return benchmark_summary(
            episodes, name=name, benchmark=self.name, task_ids=task_ids, num_trials=num_trials, path=directory.name
        )

    def _run(
        self, env: BenchmarkEnv, skillbook: Skillbook | None, task_ids: Sequence[str], num_trials: int, directory: Path
    ) -> list[Trace]:
        """Run the episodes of `task_ids` x `num_trials` missing from `directory` (with `env.retry_errored`, the
        errored ones too); every episode errored is a failed run (there is no pass^k to report)."""
        data = self.data()
        if env.retry_errored:
            drop_errored_episodes(directory)
        agent, user = infer_model(env.model("agent"), role="agent"), infer_model(env.model("user"), role="user")
        jobs = [(int(task), trial) for task in task_ids for trial in range(num_trials)]
        models = {"agent": f"{agent.system}:{agent.model_name}", "user": f"{user.system}:{user.model_name}"}
        phase = env.phase or "episodes"
        with (
            CollectionWriter(
                directory,
                source_system=SOURCE_SYSTEM,
                benchmark=self.name,
                models=models,
                mode="auto",
                redactor=env.redactor,
            ) as writer,
            Progress(
                phase, len(jobs), initial=len(writer.trace_uids), verbose=env.verbose, show=env.show_progress
            ) as bar,
        ):
            asyncio.run(
                run_episodes(
                    data,
                    jobs,
                    writer=writer,
                    agent_model=agent,
                    user_model=user,
                    skillbook=skillbook,
                    config=EpisodeConfig(
                        max_num_steps=self.options.max_num_steps,
                        skill_injection=self.options.skill_injection,
                        top_k=self.options.top_k,
                        skill_tokens=self.options.skill_tokens,
                        embedder=env.embedder,
                    ),
                    max_workers=env.max_workers,
                    progress=bar,
                    redactor=env.redactor,
                    abort_after=env.abort_after,
                )
            )
        episodes = read_collection(directory)[1]
        if episodes and all(t.metadata.get("error") for t in episodes):
            raise RunFailedError(
                f"every episode of the {phase} phase errored ({len(episodes)} of {len(episodes)}), so there is no "
                f"pass^k to report; the first error: {first_error(episodes)}"
            )
        return episodes

    def collect(
        self,
        env: BenchmarkEnv,
        *,
        skillbook: Skillbook | None,
        task_ids: Sequence[str],
        num_trials: int,
        directory: Path,
    ) -> None:
        self._run(env, skillbook, task_ids, num_trials, directory)

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
        if seeds is not None:
            raise UserError(f"{self.name} runs its trials at temperature 0 and takes no seeds: pass none")
        traces = self._run(env, skillbook, task_ids, num_trials, directory)
        return scores_of_episodes(self.name, traces, models=dict(env.model_names))


def scores_of_episodes(benchmark: str, traces: Sequence[Trace], *, models: Mapping[str, str]) -> BenchmarkScores:
    """A phase's episodes (a trace collection) as typed scores; an errored episode keeps its error, reward 0."""
    tasks: dict[str, list[TrialScore]] = {}
    for trace in sorted(traces, key=lambda t: (int(t.task_id or 0), t.trace_uid)):
        usage = trace.metadata.get("usage") or {}
        tokens = sum(int(u.get("input_tokens") or 0) + int(u.get("output_tokens") or 0) for u in usage.values())
        costs = [float(u["cost_usd"]) for u in usage.values() if u.get("cost_usd") is not None]
        reward = float(trace.reward or 0.0)
        error = trace.metadata.get("error")
        tasks.setdefault(str(trace.task_id), []).append(
            TrialScore(
                reward=reward,
                success=reward >= 1.0 - 1e-6 and not error,
                tokens=tokens,
                cost=sum(costs) if costs else None,
                seed=None,
                error=str(error) if error else None,
            )
        )
    return BenchmarkScores(
        benchmark=benchmark,
        tasks=tasks,
        num_trials=min((len(t) for t in tasks.values()), default=0),
        seeds=[],
        models=dict(models),
        skillbook=None,
    )


def _fetch(dest: Path, *, ref: str, force: bool, verify: bool, on_file: Callable[[str, str], None]) -> list[Path]:
    return fetch_airline_data(
        dest, ref=ref, force=force, verify=verify, on_file=lambda file, status: on_file(file.name, status)
    )


AIRLINE_DATA = DataSource(
    name="tau-bench",
    description="the public tau-bench airline files (MIT, (c) Sierra), each checked against its pinned sha256",
    dest=Path("data") / "tau-bench" / "airline",
    upstream=UPSTREAM_REPO,
    default_ref=DEFAULT_REF,
    fetch=_fetch,
)
"""What `ace-eval data fetch tau-bench` downloads."""


def _build(name: str, options: TauBenchOptions) -> TauBenchAirline:
    return TauBenchAirline(name, options)


tau_bench_airline: BenchmarkFactory[TauBenchOptions] = BenchmarkFactory(
    description="tau-bench v1 airline (Sierra's, ported): ACE's agent serves a simulated customer with the airline's "
    "tools and policy; reward 1 when the database ends as the gold actions leave it and the outputs were said.",
    options=TauBenchOptions,
    build=_build,
    data=AIRLINE_DATA,
    harness_settings=frozenset({"data_dir", "limit", "max_num_steps", "skill_injection", "top_k", "skill_tokens"}),
)
