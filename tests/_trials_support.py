"""The scripted parts of the trials tests on the toy benchmark: a skill manager per candidate, picked by the
candidate's `skill_manager_model` (`test:helpful`, `test:harmful`, `test:useless`)."""

from __future__ import annotations

import multiprocessing
import os
import re
import signal
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from _e2e_support import ScriptedReflector, prompt_text, responses
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from ace.embeddings.test import TestEmbedder
from ace_eval.e2e import runner
from ace_eval.e2e.config import E2ESettings
from ace_eval.e2e.runner import E2EResult, RunInjections
from ace_eval.run.folder import RunFolder

INSIGHTS = {
    "helpful": "Before processing it, do the step the customer's complaint names.",
    "harmful": "Escalate every such request to a human colleague.",
    "useless": "Mention the weather.",
}
# every hard request: the empty skillbook fails all
DEV = "refund-1,address-1,refund-2,refund-3,address-2,refund-4"
TEST = "cancel-2,password-2,upgrade-2"


class KindSkillManager:
    """Adds one skill per trace on the trace's topic (helpful, harmful) or on a topic no request has (useless)."""

    def __init__(self, kind: str, *, die: bool = False) -> None:
        self.kind = kind
        self.die = die

    def __call__(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if self.die:  # a kill -9 of the trial in the middle of this candidate's learning (the worker's)
            os.kill(os.getppid() if multiprocessing.parent_process() else os.getpid(), signal.SIGKILL)
        if responses(messages) > 0:
            return ModelResponse(parts=[TextPart("Updated the skillbook.")])
        return ModelResponse(parts=[ToolCallPart("add_skill", self.skill(prompt_text(messages)))])

    def skill(self, prompt: str) -> dict[str, Any]:
        """The `add_skill` arguments for the trace in `prompt`."""
        from ace_toy_benchmark import TASKS

        topic = next(task.topic for task in TASKS if task.request[:50] in prompt)
        keyword = "weather" if self.kind == "useless" else topic
        return {"section": "context", "issue": f"{topic} requests fail when the agent skips a step.",
                "keywords": [keyword], "insight": INSIGHTS[self.kind]}  # fmt: skip


def injections(
    settings: E2ESettings, *, die_in: str | None = None, manager: type[KindSkillManager] = KindSkillManager
) -> RunInjections:
    """The scripted models of the candidate `settings` describes (`die_in`: that candidate's process kills the
    trial's; `manager`: the skill manager's script, the toy's by default)."""
    kind = settings.skill_manager_model.split(":", 1)[1]
    models: dict[Any, Any] = {
        "reflector": FunctionModel(ScriptedReflector(), model_name="scripted-reflector"),
        "skill_manager": FunctionModel(manager(kind, die=kind == die_in), model_name=f"scripted-sm-{kind}"),
    }
    return RunInjections(models=models, embedder=TestEmbedder(), show_progress=False)


def script_candidates(
    monkeypatch: pytest.MonkeyPatch, scripted: Callable[[E2ESettings], RunInjections] = injections
) -> list[str]:
    """Trials' candidates learn with the `scripted` models (default: the toy's); returns the list each run (and
    resume) is appended to."""
    runs: list[str] = []

    def run(settings: E2ESettings) -> E2EResult:
        runs.append(settings.skill_manager_model)
        return runner.run_e2e(settings, injections=scripted(settings))

    def resume(run_dir: Path) -> E2EResult:
        settings = E2ESettings.from_dict(RunFolder.open(run_dir).read_record().config.as_dict())
        runs.append(f"resume {settings.skill_manager_model}")
        return runner.resume_e2e(run_dir, injections=scripted(settings))

    monkeypatch.setattr("ace_eval.trials._run.run_e2e", run)
    monkeypatch.setattr("ace_eval.trials._run.resume_e2e", resume)
    return runs


def comparable(board_file: Path, trial: Path, store: Path) -> str:
    """The scoreboard with its folders and run ids named alike (two trials' runs live in different folders)."""
    text = board_file.read_text(encoding="utf-8").replace(str(store), "STORE").replace(str(trial), "TRIAL")
    return re.sub(r"run_[0-9a-f]{6,}", "RUN", text)
