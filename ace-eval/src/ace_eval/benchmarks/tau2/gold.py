"""Gold replay: each task's expected actions run in a fresh tau2 environment, then scored by tau2's evaluator.

The trajectory is what a perfect agent and user would leave: the task's initial history, every gold action as a
tool call by its requestor (agent or user) with the environment's reply, and one agent message carrying every
`communicate_info` string. A task scoring below 1.0 here cannot be solved as its gold actions are written.
"""

from __future__ import annotations

from collections.abc import Sequence
from copy import deepcopy
from dataclasses import dataclass
from typing import Any

from ace_eval.benchmarks.tau2._tau2 import (
    AssistantMessage,
    EvaluationType,
    SimulationRun,
    TerminationReason,
    ToolCall,
    UserMessage,
    evaluate_simulation,
    registry,
)
from ace_eval.benchmarks.tau2.domains import load_tasks

__all__ = ["KNOWN_GOLD_EXCEPTIONS", "GoldResult", "check_gold", "replay_gold"]

_SUCCESS_TOLERANCE = 1e-6  # tau2.metrics.agent_metrics.is_successful
KNOWN_GOLD_EXCEPTIONS: dict[str, dict[str, str]] = {
    "mock": {
        "update_task_with_history_and_env_assertions": "its gold actions are empty (the task's history already "
        "holds the update) but its environment assertion expects task_2 'completed', which only an action the task "
        "does not list would make: tau2's own data cannot reach 1.0 on it",
    }
}
"""Tasks whose gold replay scores below 1.0 in tau2's own data, per domain, with the reason (`ace-eval benchmark
check` names them and does not count them as failures)."""


@dataclass(frozen=True, kw_only=True)
class GoldResult:
    """One task's gold replay: tau2's reward, what failed below 1.0, and any gold action the environment refused."""

    task_id: str
    reward: float
    reasons: tuple[str, ...] = ()

    @property
    def passed(self) -> bool:
        return abs(self.reward - 1.0) <= _SUCCESS_TOLERANCE

    def line(self) -> str:
        """`<task_id> <reward>`, the check's output line."""
        return f"{self.task_id} {self.reward:g}"


def _trajectory(domain: str, task: Any) -> tuple[list[Any], list[str]]:
    """The gold trajectory of `task` and the errors its gold actions raised in the environment."""
    environment = registry.get_env_constructor(domain)()
    initial = task.initial_state
    history = deepcopy(initial.message_history) if initial is not None and initial.message_history else []
    environment.set_state(
        initialization_data=initial.initialization_data if initial is not None else None,
        initialization_actions=initial.initialization_actions if initial is not None else None,
        message_history=history,
    )
    messages: list[Any] = list(history)
    errors: list[str] = []
    criteria = task.evaluation_criteria
    for index, action in enumerate(criteria.actions or [] if criteria is not None else []):
        call = ToolCall(
            id=f"gold-{index}", name=action.name, arguments=dict(action.arguments), requestor=action.requestor
        )
        if action.requestor == "user":
            messages.append(UserMessage(role="user", content=None, tool_calls=[call]))
        else:
            messages.append(AssistantMessage(role="assistant", content=None, tool_calls=[call]))
        reply = environment.get_response(call)
        if reply.error:
            errors.append(f"gold action {action.get_func_format()} failed: {reply.content}")
        messages.append(reply)
    infos = list(criteria.communicate_info or []) if criteria is not None else []
    if infos:
        messages.append(AssistantMessage(role="assistant", content="\n".join(infos)))
    return messages, errors


def _reasons(reward_info: Any, criteria: Any) -> list[str]:
    """What tau2's evaluator marked as failed."""
    reasons: list[str] = []
    if reward_info.db_check is not None and not reward_info.db_check.db_match:
        reasons.append("the final database differs from the gold database")
    for check in reward_info.env_assertions or []:
        if not check.met:
            assertion = check.env_assertion
            reasons.append(f"environment assertion not met: {assertion.func_name}({assertion.arguments})")
    for check in reward_info.action_checks or []:
        if not check.action_match:
            reasons.append(f"gold action not matched: {check.action.get_func_format()}")
    for check in reward_info.communicate_checks or []:
        if not check.met:
            reasons.append(f"not communicated: {check.info!r}")
    if reasons and criteria is not None and not criteria.actions:
        reasons.append("the task lists no gold actions to replay")
    note = (reward_info.info or {}).get("note") if isinstance(reward_info.info, dict) else None
    if note and not reasons:
        reasons.append(str(note))
    return reasons


def replay_gold(domain: str, task: Any) -> GoldResult:
    """Replay one tau2 `Task`'s gold actions and score the trajectory with tau2's evaluator (all checks)."""
    messages, errors = _trajectory(domain, task)
    simulation = SimulationRun(
        id=f"gold-{task.id}",
        task_id=task.id,
        start_time="",
        end_time="",
        duration=0.0,
        termination_reason=TerminationReason.USER_STOP,
        messages=messages,
    )
    try:
        reward_info = evaluate_simulation(
            simulation=simulation, task=task, evaluation_type=EvaluationType.ALL, solo_mode=False, domain=domain
        )
    except ValueError as error:  # e.g. a reward basis that needs an LLM judge (NL assertions)
        return GoldResult(task_id=task.id, reward=0.0, reasons=(*errors, f"tau2's evaluator refused: {error}"))
    reward = float(reward_info.reward)
    passed = abs(reward - 1.0) <= _SUCCESS_TOLERANCE
    reasons = errors if passed else [*errors, *_reasons(reward_info, task.evaluation_criteria)]
    return GoldResult(task_id=task.id, reward=reward, reasons=tuple(reasons))


def check_gold(domain: str, selection: str | Sequence[str] = "base") -> list[GoldResult]:
    """Every selected task's gold replay (default: the domain's `base` split), in the domain's order."""
    return [replay_gold(domain, task) for task in load_tasks(domain, selection)]
