"""Scripted models for the e2e tests (reflector, skill manager, agent, simulated user), and their own checks.

Each script decides from the messages of its own session only, so it behaves the same in sequential and parallel
runs: the reflector returns a reflection naming the trace's task; the skill manager searches, then adds a skill
(or widens the skill it found, for every third trace), then says it is done.
"""

from __future__ import annotations

import hashlib
import json
import re
import signal
import threading
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from _ace_scripts import applied, conflict_skills
from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models import Model
from pydantic_ai.models.function import AgentInfo, FunctionModel

from ace.embeddings.test import TestEmbedder
from ace_eval.collection import write_collection
from ace_eval.collection.importers import import_tau_bench
from ace_eval.e2e.runner import LLMRole, RunInjections
from ace_eval.e2e.training_results import SampleResult

TRAJECTORIES = "trajectories-gpt-4o-tasks-0-29.json"
_TRACE_ID = re.compile(r"trace_id: (\S+)")


def prompt_text(messages: list[ModelMessage]) -> str:
    first = messages[0]
    assert isinstance(first, ModelRequest)
    return "\n".join(str(getattr(p, "content", "")) for p in first.parts)


def responses(messages: list[ModelMessage]) -> int:
    return sum(isinstance(m, ModelResponse) for m in messages)


def digest(text: str) -> int:
    return int(hashlib.sha256(text.encode()).hexdigest()[:8], 16)


class ScriptedReflector:
    """Returns a reflection through the output tool; with the recursive reflector's tools it first calls one."""

    def __init__(self) -> None:
        self.calls: Counter[str] = Counter()
        self._lock = threading.Lock()

    def __call__(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        task = re.search(r"<task>\n(.*?)\n</task>", prompt_text(messages), re.S)
        question = task.group(1) if task else "unknown task"
        tools = {t.name for t in info.function_tools}
        if responses(messages) == 0:
            with self._lock:
                self.calls[question] += 1
            if "find_errors" in tools:
                return ModelResponse(parts=[ToolCallPart("find_errors", {})])
        reflection = {
            "error_identification": f"The agent mishandled: {question[:60]}",
            "root_cause_analysis": "It did not check the policy before acting.",
            "correct_approach": "Read the policy, confirm with the user, then act.",
            "key_insight": f"Check the policy first (task {digest(question) % 1000}).",
            "skill_tags": [],
        }
        [output] = info.output_tools
        return ModelResponse(parts=[ToolCallPart(output.name, reflection)])


class ScriptedSkillManager:
    """search_skills, then add_skill (or update_skill on the first hit, every third trace), then a summary."""

    def __call__(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        match = _TRACE_ID.search(prompt_text(messages))
        trace_id = match.group(1) if match else "unknown"
        n = digest(trace_id)
        step = responses(messages)
        if step == 0:
            return ModelResponse(parts=[ToolCallPart("search_skills", {"query": "policy check before acting"})])
        if step == 1:
            found = last_search(messages)
            if found and n % 3 == 0:
                args = {
                    "skill_id": found[0]["id"],
                    "issue": f"{found[0]['issue']} Seen again in {trace_id}.",
                    "keywords": [*found[0]["keywords"][:3], f"t{n % 7}"],
                }
                return ModelResponse(parts=[ToolCallPart("update_skill", args)])
            if n % 5 == 4:
                args = {
                    "section": "harness",
                    "issue": f"The airline tools returned an error in {trace_id}.",
                    "keywords": ["airline", "tools"],
                }
            else:
                args = {
                    "section": "context",
                    "issue": f"In tau-airline ({trace_id}) the agent acted before checking the policy.",
                    "keywords": ["airline", f"policy_{n % 4}"],
                    "insight": "Check the policy and get an explicit yes before any write action.",
                }
            return ModelResponse(parts=[ToolCallPart("add_skill", args)])
        last = _last_return(messages)
        if last is not None and not applied(last) and last.outcome == "success":  # another session got there first
            [current, *_] = conflict_skills(last)
            args = {"skill_id": current["id"], "issue": f"{current['issue']} Seen again in {trace_id}."}
            return ModelResponse(parts=[ToolCallPart("update_skill", args)])
        return ModelResponse(parts=[TextPart("Updated the skillbook.")])


def _last_return(messages: list[ModelMessage]) -> ToolReturnPart | None:
    last = messages[-1]
    returns = [p for p in last.parts if isinstance(p, ToolReturnPart)] if isinstance(last, ModelRequest) else []
    return returns[-1] if returns else None


def last_search(messages: list[ModelMessage]) -> list[dict[str, Any]]:
    """The result of the session's latest `search_skills` call (empty before the first)."""
    for message in reversed(messages):
        if isinstance(message, ModelRequest):
            for part in message.parts:
                if isinstance(part, ToolReturnPart) and part.tool_name == "search_skills":
                    content = part.content
                    return list(content) if isinstance(content, list) else json.loads(str(content))
    return []


def scripted_user(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """Asks once, then ends the conversation."""
    return ModelResponse(
        parts=[TextPart("I want to check my reservation." if responses(messages) == 0 else "###STOP###")]
    )


def scripted_agent(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """Looks the user up once, then answers."""
    if responses(messages) == 0:
        return ModelResponse(parts=[ToolCallPart("get_user_details", {"user_id": "mia_li_3668"})])
    return ModelResponse(parts=[TextPart("Your reservation is confirmed.")])


def scripted_models(reflector: ScriptedReflector | None = None) -> dict[LLMRole, Model]:
    return {
        "reflector": FunctionModel(reflector or ScriptedReflector(), model_name="scripted-reflector"),
        "skill_manager": FunctionModel(ScriptedSkillManager(), model_name="scripted-sm"),
        "agent": FunctionModel(scripted_agent, model_name="scripted-agent"),
        "user": FunctionModel(scripted_user, model_name="scripted-user"),
    }


def scripted_injections(reflector: ScriptedReflector | None = None, **kwargs: Any) -> RunInjections:
    kwargs.setdefault("embedder", TestEmbedder())
    return RunInjections(models=scripted_models(reflector), show_progress=False, **kwargs)


class Stop(Exception):
    """Ends a run after a few samples (as a crash would), leaving a folder to resume."""


def stop_after(k: int) -> Callable[[SampleResult], None]:
    """An `on_sample` hook that raises `Stop` once `k` samples have been recorded."""
    seen: list[SampleResult] = []

    def hook(sample: SampleResult) -> None:
        seen.append(sample)
        if len(seen) == k:
            raise Stop

    return hook


def import_trajectories(airline_data: Path, out: Path) -> Path:
    """The 120 real tau-bench trajectories as a collection."""
    imported = import_tau_bench(airline_data / TRAJECTORIES)
    write_collection(out, imported.traces, source_system=imported.source_system, benchmark=imported.benchmark)
    return out


def kill_after(k: int, exc: BaseException | None = None) -> Any:
    """A per-sample hook that stops the run after `k` committed samples: raises `exc`, or (by default) sends the
    process SIGINT, exactly what Ctrl-C does (the run then stops at its next await)."""
    seen: list[str] = []

    def hook(sample: SampleResult) -> None:
        seen.append(sample.trace_uid)
        if len(seen) == k:
            if exc is not None:
                raise exc
            signal.raise_signal(signal.SIGINT)

    return hook
