"""Scripted roles for `ace-eval e2e --benchmark tau2-*` (no network): tau2 runs real episodes with `GoldPlayer`.

The agent leaves out the task's last gold action unless `SKILL` is in its system prompt, and the scripted skill
manager learns exactly that skill, so the baseline fails and the evaluation with the learned skillbook passes.
"""

from __future__ import annotations

import re
from typing import Any

from _e2e_support import ScriptedReflector, prompt_text, responses
from _tau2_scripts import GoldPlayer
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from ace.embeddings.test import TestEmbedder
from ace_eval.benchmarks.tau2 import load_tasks
from ace_eval.e2e.runner import RunInjections

SKILL = "Make the change the user asked for before summarising it."
_TRACE_ID = re.compile(r"trace_id: (\S+)")


def skill_manager(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """search_skills, then add the one context skill the scripted agent needs, then done."""
    step = responses(messages)
    match = _TRACE_ID.search(prompt_text(messages))
    trace_id = match.group(1) if match else "unknown"
    if step == 0:
        return ModelResponse(parts=[ToolCallPart("search_skills", {"query": "change described but not made"})])
    if step == 1:
        args = {
            "section": "context",
            "issue": f"The agent described the change but never made it ({trace_id}).",
            "keywords": ["change", "write"],
            "insight": SKILL,
        }
        return ModelResponse(parts=[ToolCallPart("add_skill", args)])
    return ModelResponse(parts=[TextPart("Updated the skillbook.")])


def tau2_models(domain: str, tasks: list[str], name: str, **player: Any) -> tuple[GoldPlayer, str, str]:
    """A `GoldPlayer` for `tasks` that needs `SKILL`, registered as litellm models; returns it and the two names."""
    gold = GoldPlayer(load_tasks(domain, tasks), needs_skill=SKILL, **player)
    agent, user = gold.models(name)
    return gold, agent, user


def tau2_injections(**kwargs: Any) -> RunInjections:
    """The reflector and skill manager scripted, the test embedder, no progress bar."""
    models = {
        "reflector": FunctionModel(ScriptedReflector(), model_name="scripted-reflector"),
        "skill_manager": FunctionModel(skill_manager, model_name="scripted-sm"),
    }
    return RunInjections(models=models, embedder=TestEmbedder(), show_progress=False, **kwargs)  # type: ignore[arg-type]
