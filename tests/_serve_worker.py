"""`ace-eval serve` in a process of its own, learning with the scripted reflector and skill manager of
`_e2e_support` (and the test embedder), for the acceptance and kill tests.

Usage: `python tests/_serve_worker.py SERVE_ARGS...`. With `ACE_TEST_SM_DELAY=S` every skill-manager request
sleeps S seconds first, so that a batch is still learning when the test kills the process.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from _e2e_support import ScriptedSkillManager, scripted_injections
from pydantic_ai.messages import ModelMessage, ModelResponse
from pydantic_ai.models.function import AgentInfo, FunctionModel

from ace_eval.cli import main
from ace_eval.e2e.runner import RunInjections

if __name__ == "__main__":
    delay = float(os.environ.get("ACE_TEST_SM_DELAY", "0"))
    manager = ScriptedSkillManager()

    def slow_manager(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        time.sleep(delay)
        return manager(messages, info)

    def injections() -> RunInjections:
        injected = scripted_injections()
        models = {**injected.models, "skill_manager": FunctionModel(slow_manager, model_name="scripted-sm")}
        return RunInjections(models=models, embedder=injected.embedder, show_progress=False)

    import ace_eval.commands.serve as command

    command._injections = injections  # type: ignore[assignment]
    main(["serve", *sys.argv[1:]], prog_name="ace-eval")
