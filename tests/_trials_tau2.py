"""The scripted parts of the trials tests on tau2-mock (no network): tau2's real orchestrator, environment and
evaluator run every episode; the agent and the user are scripts registered as litellm models, the reflector and
the skill manager are pydantic-ai `FunctionModel`s.

The agent plays a task's gold actions, and what is in its system prompt changes how:
- the helpful skill (`INSIGHTS["helpful"]`): all of them (it passes);
- no skill, or the useless one: the last change of a record is done sloppily (a create gets a wrong title, an
  update is left out), so the six dev tasks that end in a change fail and `impossible_task_1` (a transfer to a
  human) passes, with or without the useless skill;
- the harmful skill: it follows it and opens a follow-up task first, which puts a task in the database that the
  gold does not have: every dev task fails, `impossible_task_1` too.
Each episode's first agent turn appends `<pid> <kind> <ticket> <seed>` to the log (kind: which skill it saw; ticket:
the task the user named, found by its scenario: tasks with the same scenario, as `create_task_1` and
`create_task_1_with_env_assertions`, are named alike and their gold actions are the same).
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from _trials_support import KindSkillManager
from _trials_support import injections as toy_injections

from ace_eval.benchmarks.tau2 import load_tasks
from ace_eval.benchmarks.tau2.scripted import Reply, ScriptInfo, call, say, scripted_model
from ace_eval.e2e.config import E2ESettings
from ace_eval.e2e.runner import RunInjections

INSIGHTS = {
    "helpful": "Make the change the user asked for before summarising it.",
    "harmful": "Open a follow-up task for the user before anything else.",
    "useless": "Mention the weather when you greet the user.",
}
LEARN = "create_task_1,update_task_1"  # dev tasks too: the learn split need not be held out
# tau2-mock's tasks the gold actions solve: six the helpful skill decides (the gate's sign-flip test needs six
# changed tasks for p < 0.05) and one the agent passes without a skill; held out, the one task with no action
# (tau2 scores it 1 whatever the agent does)
DEV = ("create_task_1,create_task_1_with_env_assertions,update_task_1,update_task_with_initialization_data,"
       "update_task_with_initialization_actions,update_task_with_message_history,impossible_task_1")  # fmt: skip
TEST = "create_task_1_nl_eval"
_CHANGES = ("create_task", "update_task_status")
AGENT, USER = "ace-scripted/trials-agent", "ace-scripted/trials-user"
_TICKET = re.compile(r"ticket (\S+?)\.")


def _kind(system: str) -> str:
    return next((kind for kind, insight in INSIGHTS.items() if insight in system), "none")


def _ticket(messages: list[dict[str, Any]]) -> int:
    """The index of the user's message that names the ticket (after any history the task starts with)."""
    return max(i for i, m in enumerate(messages) if m["role"] == "user" and _TICKET.search(str(m["content"])))


class TrialAgent:
    """The scripted tau2 agent of the module doc; `log` gets a line per episode."""

    def __init__(self, log: Path | None) -> None:
        self.tasks = {t.id: t for t in load_tasks("mock", [*DEV.split(","), TEST])}
        self.log = log

    def __call__(self, messages: list[dict[str, Any]], info: ScriptInfo) -> Reply:
        kind, start = _kind(str(messages[0]["content"])), _ticket(messages)
        match = _TICKET.search(str(messages[start]["content"]))
        assert match is not None
        task = self.tasks[match.group(1)]
        if start == len(messages) - 1 and self.log is not None:  # the episode's first agent turn
            with open(self.log, "a", encoding="utf-8") as handle:
                handle.write(f"{os.getpid()} {kind} {task.id} {info.seed}\n")
        actions = [(a.name, dict(a.arguments)) for a in task.evaluation_criteria.actions or [] if
                   a.requestor == "assistant"]  # fmt: skip
        if kind != "helpful" and actions and actions[-1][0] in _CHANGES:
            name, arguments = actions.pop()
            if name == "create_task":  # the record is made, wrong (a missing one would break env assertions)
                actions.append((name, {**arguments, "title": f"{arguments['title']} (draft)"}))
        if kind == "harmful":
            actions.insert(0, ("create_task", {"user_id": "user_1", "title": "Follow-up"}))
        done = sum(1 for m in messages[start:] if m["role"] == "tool")
        if done < len(actions):
            name, arguments = actions[done]
            return call(name, **arguments)
        return say(" ".join(task.evaluation_criteria.communicate_info or []) + " Done. Anything else?")


def user(messages: list[dict[str, Any]], info: ScriptInfo) -> Reply:
    """Names the ticket once (its own turns come back as `assistant`), then ends the conversation."""
    system = str(messages[0]["content"])
    if not any(m["role"] == "assistant" and "ticket" in str(m["content"]) for m in messages):
        task = next(t for t in load_tasks("mock", [*DEV.split(","), TEST]) if str(t.user_scenario) in system)
        return say(f"Hello, this is about ticket {task.id}.")
    return say("Thanks, that is all. ###STOP###")


def register(log: Path | None) -> None:
    """The agent (logging to `log`) and the user as `AGENT` and `USER`."""
    scripted_model(AGENT.split("/", 1)[1], TrialAgent(log))
    scripted_model(USER.split("/", 1)[1], user)


class Tau2SkillManager(KindSkillManager):
    """Adds the candidate's one skill (helpful, harmful or useless) for each trace, then says it is done."""

    def skill(self, prompt: str) -> dict[str, Any]:
        return {"section": "context", "issue": "Task requests are answered before the record is right.",
                "keywords": ["task", self.kind], "insight": INSIGHTS[self.kind]}  # fmt: skip


def injections(settings: E2ESettings, *, die_in: str | None = None) -> RunInjections:
    """The scripted reflector and the skill manager `settings.skill_manager_model` names (`test:helpful`, ...)."""
    return toy_injections(settings, die_in=die_in, manager=Tau2SkillManager)


def trial_args(*extra: str) -> list[str]:
    """`ace-eval trials` on tau2-mock with the three candidates and the scripted agent and user."""
    return ["trials", "--vary", "skill_manager_model=test:helpful,test:harmful,test:useless",
            "--benchmark", "tau2-mock", "--benchmark-option", f"train_split={LEARN}",
            "--benchmark-option", "max_num_steps=30", "--agent-model", AGENT, "--user-model", USER,
            "--dev-tasks", DEV, "--test-tasks", TEST, *extra]  # fmt: skip
