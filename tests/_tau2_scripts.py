"""A scripted agent and user that act out tau2 tasks' gold actions through tau2's real orchestrator (no network)."""

from __future__ import annotations

import re
import threading
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from ace_eval.benchmarks.tau2.scripted import Reply, ScriptInfo, call, say, scripted_model

STOP = "###STOP###"
_TICKET = re.compile(r"ticket (\S+?)\.")


@dataclass
class GoldPlayer:
    """The agent replays the gold actions of the task the user names, then says what it must communicate.

    `needs_skill`: unless this text is in the agent's system prompt, it skips the last gold action (and fails).
    `fail_seeds`: on a trial with one of these seeds the agent refuses to act (and fails).
    """

    tasks: list[Any]
    needs_skill: str | None = None
    fail_seeds: frozenset[int] = frozenset()
    calls: Counter[str] = field(default_factory=Counter)
    prompts: list[str] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def models(self, name: str) -> tuple[str, str]:
        """Register both scripts; returns the (agent, user) model strings."""
        return scripted_model(f"{name}-agent", self.agent), scripted_model(f"{name}-user", self.user)

    def _task(self, task_id: str) -> Any:
        return next(task for task in self.tasks if task.id == task_id)

    def agent(self, messages: list[dict[str, Any]], info: ScriptInfo) -> Reply:
        system = str(messages[0]["content"])
        opening = next(str(m["content"]) for m in messages if m["role"] == "user")
        with self._lock:
            self.calls["agent"] += 1
            if messages[-1]["role"] == "user" and messages[-1]["content"] == opening:
                self.prompts.append(system)
        match = _TICKET.search(opening)
        assert match is not None, opening
        task = self._task(match.group(1))
        if info.seed in self.fail_seeds:
            return say("Sorry, I cannot help with that.")
        criteria = task.evaluation_criteria
        actions = [a for a in criteria.actions or [] if a.requestor == "assistant"]
        if self.needs_skill is not None and self.needs_skill not in system:
            actions = actions[:-1]
        done = sum(1 for m in messages if m["role"] == "tool")
        if done < len(actions):
            return call(actions[done].name, **actions[done].arguments)
        return say(" ".join(criteria.communicate_info or []) + " Done. Anything else?")

    def user(self, messages: list[dict[str, Any]], info: ScriptInfo) -> Reply:
        with self._lock:
            self.calls["user"] += 1
        system = str(messages[0]["content"])
        if not any(m["role"] == "assistant" for m in messages):  # the user's own turns come back as `assistant`
            task = next(t for t in self.tasks if str(t.user_scenario) in system)
            return say(f"Hello, this is about ticket {task.id}.")
        return say(f"Thanks, that is all. {STOP}")
