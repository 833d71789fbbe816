"""`AirlineEnv`: one episode of one task — the database, the log of actions, the end, the reward."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from ace_eval.benchmarks.tau_bench.data import AirlineData, Task
from ace_eval.benchmarks.tau_bench.db import AirlineDB
from ace_eval.benchmarks.tau_bench.hashing import data_hash
from ace_eval.benchmarks.tau_bench.scoring import RESPOND_ACTION, RewardResult, calculate_reward
from ace_eval.benchmarks.tau_bench.tools import TERMINATING_TOOLS, TOOLS

__all__ = ["STOP_TOKEN", "AirlineEnv", "EnvStep", "EpisodeEnd", "gold_data_hash"]

STOP_TOKEN = "###STOP###"
"""The simulated user says this when its goal is met; the episode then ends."""
EpisodeEnd = Literal["user_stop", "transfer", "max_steps", "error"]


@dataclass(frozen=True)
class EnvStep:
    """One action the agent took: a tool call (with its observation) or a reply to the user."""

    name: str
    kwargs: Any
    observation: str


class AirlineEnv:
    """The environment of one episode: a fresh database over `data`, and what the agent did to it."""

    def __init__(self, data: AirlineData, task: Task) -> None:
        self.data = data
        self.task = task
        self.db = AirlineDB(data)
        self.steps: list[EnvStep] = []
        self.ended: EpisodeEnd | None = None

    @property
    def done(self) -> bool:
        """True once the user stopped or the agent transferred to a human."""
        return self.ended is not None

    @property
    def replies(self) -> list[str]:
        """Everything the agent said to the user, in order."""
        return [s.kwargs["content"] for s in self.steps if s.name == RESPOND_ACTION]

    def step(self, name: str, kwargs: Any) -> str:
        """Run a tool call as upstream does: any exception becomes `"Error: <message>"`.

        The arguments are deep-copied first, so what the database stores is private to this episode.
        """
        kwargs = copy.deepcopy(kwargs)
        tool = TOOLS.get(name)
        if tool is None:
            observation = f"Unknown action {name}"
        else:
            try:
                if not isinstance(kwargs, Mapping):
                    raise TypeError(f"arguments after ** must be a mapping, not {type(kwargs).__name__}")
                result = tool(self.db, **kwargs)
                # upstream passes None through as the message content; a chat message needs text
                observation = "" if result is None else result
            except Exception as e:
                observation = f"Error: {e}"
            if name in TERMINATING_TOOLS:
                self.ended = "transfer"
        self.steps.append(EnvStep(name, kwargs, observation))
        return observation

    def respond(self, content: str, user_reply: str | None = None) -> bool:
        """Log a reply of the agent to the user and the user's answer; return whether the episode ended
        (the answer contains `STOP_TOKEN`)."""
        self.steps.append(EnvStep(RESPOND_ACTION, {"content": content}, user_reply or ""))
        if user_reply is not None and STOP_TOKEN in user_reply:
            self.ended = "user_stop"
        return self.done

    def data_hash(self) -> str:
        """Hash of the database as it stands."""
        return data_hash(self.db)

    def calculate_reward(self, gt_data_hash: str | None = None) -> RewardResult:
        """Score the episode; pass the task's gold hash when it is cached, else it is replayed here."""
        gold = gold_data_hash(self.data, self.task) if gt_data_hash is None else gt_data_hash
        return calculate_reward(task=self.task, data_hash=self.data_hash(), gt_data_hash=gold, replies=self.replies)


def gold_data_hash(data: AirlineData, task: Task) -> str:
    """Hash of a fresh database after the task's gold actions (terminating tools and replies skipped)."""
    env = AirlineEnv(data, task)
    for action in task.actions:
        if action.name not in TERMINATING_TOOLS and action.name != RESPOND_ACTION:
            env.step(action.name, action.kwargs)
    return env.data_hash()
