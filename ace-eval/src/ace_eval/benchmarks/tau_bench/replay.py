"""Re-executing a recorded run: the agent's own tool calls from `traj`, on a fresh database, then scored."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ace_eval.benchmarks.tau_bench.data import AirlineData, Task
from ace_eval.benchmarks.tau_bench.env import AirlineEnv
from ace_eval.benchmarks.tau_bench.scoring import RewardResult

__all__ = ["ReplayOutcome", "replay_messages"]


@dataclass(frozen=True, kw_only=True)
class ReplayOutcome:
    """What re-executing a recorded conversation gives."""

    reward: float
    """0.0 when the conversation never ended (no `###STOP###`, no transfer): upstream scores only ended runs."""
    result: RewardResult | None
    """The scoring of an ended run."""
    tool_calls: int
    observation_mismatches: list[int]
    """Indexes of tool messages whose recorded content differs from what the tool returns now."""


def _first_call(message: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """Upstream acts on the first tool call of an assistant message only; None for a reply."""
    calls = message.get("tool_calls")
    if calls and calls[0].get("function") is not None:
        function: Mapping[str, Any] = calls[0]["function"]
        return function
    return None


def replay_messages(
    data: AirlineData, task: Task, messages: Sequence[Mapping[str, Any]], *, gt_data_hash: str | None = None
) -> ReplayOutcome:
    """Replay a tau-bench trajectory (OpenAI-style messages) and score it as upstream would have."""
    env = AirlineEnv(data, task)
    mismatches: list[int] = []
    calls = 0
    for i, message in enumerate(messages):
        if message.get("role") != "assistant":
            continue
        following = messages[i + 1] if i + 1 < len(messages) else None
        function = _first_call(message)
        if function is not None:
            calls += 1
            arguments = function["arguments"]
            kwargs = json.loads(arguments) if isinstance(arguments, str) else arguments
            observation = env.step(function["name"], kwargs)
            if following is not None and following.get("role") == "tool" and following.get("content") != observation:
                mismatches.append(i + 1)
        else:
            reply = following.get("content") if following is not None and following.get("role") == "user" else None
            env.respond(message.get("content") or "", reply)
        if env.done:
            break
    if not env.done:
        return ReplayOutcome(reward=0.0, result=None, tool_calls=calls, observation_mismatches=mismatches)
    result = env.calculate_reward(gt_data_hash)
    return ReplayOutcome(reward=result.reward, result=result, tool_calls=calls, observation_mismatches=mismatches)
