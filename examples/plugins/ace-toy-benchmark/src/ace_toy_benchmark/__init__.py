"""`toy-support`: a scripted customer-service desk whose agent reads the skillbook, as an ace-eval benchmark plugin.

Twelve requests (refunds, cancellations, address changes, password resets, upgrades), six to learn on and six to
score. The agent is a script, not an LLM: it solves the `easy` requests on its own, and a `hard` request only when
the skillbook holds a visible skill with the request's topic among its keywords (the skill tells it the step it
misses). A skill on a topic whose insight says to *escalate* makes it hand every request of that topic to a human,
which fails the request. So a skillbook measurably changes the score: a helpful skill raises success on its topic's
hard requests, a harmful one lowers it on its topic's easy ones. `flakiness` fails a trial at random (drawn from
the trial's seed), so pass^k falls with k as it does on a real benchmark.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from ace import Skillbook
from ace_eval.benchmarks import (
    BenchmarkEnv,
    BenchmarkFactory,
    BenchmarkScores,
    SplitRole,
    TrialScore,
    resolve_tasks,
)
from ace_eval.collection import CollectionWriter, Trace

__all__ = ["TASKS", "ToyOptions", "ToySupport", "ToyTask", "attempt", "toy_support"]

SOURCE_SYSTEM = "toy-support"


@dataclass(frozen=True)
class ToyTask:
    """One customer request: its topic, whether the agent needs a skill for it, and the step a skill teaches."""

    task_id: str
    topic: str
    request: str
    difficulty: Literal["easy", "hard"]
    missing_step: str
    """What the agent forgets on a hard request without a skill (the customer's complaint says it)."""


TASKS: tuple[ToyTask, ...] = (
    ToyTask("refund-1", "refund", "Refund order 1041, it arrived broken.", "hard", "ask for a photo of the damage"),
    ToyTask("cancel-1", "cancel", "Cancel my booking B-77.", "easy", ""),
    ToyTask("address-1", "address", "Ship order 1200 to my new flat.", "hard", "confirm the postcode back"),
    ToyTask("password-1", "password", "I am locked out of my account.", "easy", ""),
    ToyTask("upgrade-1", "upgrade", "Move me to the premium plan.", "easy", ""),
    ToyTask("refund-2", "refund", "I want my money back for order 1077.", "hard", "ask for a photo of the damage"),
    ToyTask("refund-3", "refund", "Order 1302 came smashed, refund it.", "hard", "ask for a photo of the damage"),
    ToyTask("cancel-2", "cancel", "Please cancel booking B-90.", "easy", ""),
    ToyTask("address-2", "address", "Change the delivery address of order 1310.", "hard", "confirm the postcode back"),
    ToyTask("password-2", "password", "Reset my password please.", "easy", ""),
    ToyTask("upgrade-2", "upgrade", "Upgrade me to premium.", "easy", ""),
    ToyTask("refund-4", "refund", "Refund the cracked mug of order 1333.", "hard", "ask for a photo of the damage"),
)
SPLITS: dict[str, list[str]] = {
    "train": [t.task_id for t in TASKS[:6]],
    "test": [t.task_id for t in TASKS[6:]],
}


class ToyOptions(BaseModel):
    """The options of `toy-support` (`--benchmark-option key=value`, or `[e2e.benchmark]` in ace-eval.toml)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    train_split: str = Field("train", description="The requests learned on: train, test, or comma-separated ids.")
    eval_split: str = Field("test", description="The requests scored: train, test, or comma-separated ids.")
    flakiness: float = Field(0.0, ge=0.0, lt=1.0, description="Chance a trial fails at random (seeded).")
    seed: int = Field(0, description="Draws each trial's seed when the harness passes none.")


def attempt(task: ToyTask, skillbook: Skillbook | None, seed: int, flakiness: float) -> tuple[bool, list[str], str]:
    """One trial of the scripted agent: (success, the agent's replies, the customer's feedback)."""
    skills = [
        s for s in (skillbook.skills() if skillbook is not None else []) if s.visible and task.topic in s.keywords
    ]
    replies = [f"[{task.topic}] I can help with that."]
    if any("escalate" in (s.insight or "").lower() for s in skills):
        replies.append("I am handing this to a human colleague.")
        return False, replies, "The agent escalated a request it could have solved."
    if task.difficulty == "hard":
        if not skills:
            replies.append("Done, it is processed.")
            return False, replies, f"Rejected: the agent did not {task.missing_step}."
        replies.append(f"Before I process it, let me {task.missing_step}.")
    if random.Random(seed).random() < flakiness:
        replies.append("Sorry, the system timed out.")
        return False, replies, "The system timed out."
    replies.append("Done, it is processed.")
    return True, replies, "Resolved."


@dataclass(frozen=True)
class ToySupport:
    """The benchmark `toy-support` built from its options."""

    name: str
    options: ToyOptions

    def splits(self) -> Mapping[str, Sequence[str]]:
        return SPLITS

    def tasks(self, role: SplitRole) -> Sequence[str]:
        return resolve_tasks(
            self.name, SPLITS, self.options.train_split if role == "learn" else self.options.eval_split
        )

    def models(self) -> Mapping[str, str | None]:
        return {}  # a script: it calls no model

    def check(self, env: BenchmarkEnv) -> None:
        return None

    def _seeds(self, num_trials: int, seeds: Sequence[int] | None) -> list[int]:
        if seeds is not None:
            return list(seeds)
        rng = random.Random(self.options.seed)
        return [rng.randint(0, 1_000_000) for _ in range(num_trials)]

    def _trace(self, task: ToyTask, trial: int, seed: int, skillbook: Skillbook | None) -> Trace:
        success, replies, feedback = attempt(task, skillbook, seed, self.options.flakiness)
        messages = [{"role": "user", "content": task.request}, *({"role": "assistant", "content": r} for r in replies)]
        return Trace(
            source_system=SOURCE_SYSTEM,
            trace_id=f"{task.task_id}-trial-{trial}",
            task_id=task.task_id,
            question=task.request,
            messages=messages,
            reward=1.0 if success else 0.0,
            feedback=feedback,
            metadata={"trial": trial, "seed": seed, "topic": task.topic},
        )

    def collect(
        self,
        env: BenchmarkEnv,
        *,
        skillbook: Skillbook | None,
        task_ids: Sequence[str],
        num_trials: int,
        directory: Path,
    ) -> None:
        by_id = {t.task_id: t for t in TASKS}
        seeds = self._seeds(num_trials, None)
        with CollectionWriter(directory, source_system=SOURCE_SYSTEM, benchmark=self.name, mode="auto") as writer:
            for task_id in task_ids:
                for trial in range(num_trials):
                    trace = self._trace(by_id[task_id], trial, seeds[trial], skillbook)
                    if trace.trace_uid not in writer:  # a resume writes only what is missing
                        writer.append(trace)
                    if env.on_episode is not None:
                        env.on_episode(env.phase, f"{task_id} trial {trial}  reward {trace.reward:g}")

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
        by_id = {t.task_id: t for t in TASKS}
        drawn = self._seeds(num_trials, seeds)
        tasks: dict[str, list[TrialScore]] = {}
        for task_id in task_ids:
            for trial in range(num_trials):
                success, _, _ = attempt(by_id[task_id], skillbook, drawn[trial], self.options.flakiness)
                reward = 1.0 if success else 0.0
                tasks.setdefault(task_id, []).append(
                    TrialScore(reward=reward, success=success, tokens=0, cost=0.0, seed=drawn[trial])
                )
                if env.on_episode is not None:  # the harness's progress line for each finished episode
                    env.on_episode(env.phase, f"{task_id} trial {trial}  reward {reward:g}")
        return BenchmarkScores(benchmark=self.name, tasks=tasks, num_trials=num_trials, seeds=drawn)


def _build(name: str, options: ToyOptions) -> ToySupport:
    return ToySupport(name, options)


toy_support: BenchmarkFactory[ToyOptions] = BenchmarkFactory(
    description="A scripted customer-service desk (12 requests): the agent solves hard requests only with a skill "
    "on their topic, and escalates (fails) when a skill tells it to.",
    options=ToyOptions,
    build=_build,
    harness_settings=frozenset({"train_split", "eval_split"}),
)
