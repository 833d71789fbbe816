"""Per-role model settings (agent, reflector, skill manager, user simulator, dedup) and their environment variables."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Literal, TypeVar, assert_never, get_args

from pydantic_ai.settings import ModelSettings

from ace.llm._errors import ModelConfigError

__all__ = ["ROLES", "Role", "RoleSettings", "role_settings"]

Role = Literal["agent", "reflector", "skill_manager", "user", "dedup"]
"""Who is calling the model: the task agent, the reflector, the skill manager, the simulated user, the deduplicator."""

ROLES: tuple[Role, ...] = get_args(Role)

_T = TypeVar("_T")
_TRUE = frozenset({"1", "true", "yes", "on"})
_FALSE = frozenset({"0", "false", "no", "off"})


@dataclass(frozen=True, kw_only=True)
class RoleSettings:
    """How one role calls its model. `None` leaves a value to the provider's default."""

    model: str | None = None
    """Model string (`openai/gpt-4.1-mini`, `bedrock/...`, `local`, `test`); `None` is the embedded local model."""
    temperature: float | None = None
    """Sampling temperature."""
    max_tokens: int | None = None
    """Upper bound on the tokens of one response."""
    timeout: float = 120.0
    """Seconds one attempt may take before it counts as a timeout (and is retried)."""
    max_retries: int = 4
    """Retries after the first attempt on rate limits, timeouts, connection errors and 5xx responses."""
    prompt_caching: bool = True
    """Mark the system prompt cacheable where the provider supports it (Anthropic, Bedrock Anthropic)."""

    def __post_init__(self) -> None:
        if self.temperature is not None and not 0.0 <= self.temperature <= 2.0:
            raise ModelConfigError(f"temperature must be between 0 and 2, got {self.temperature}")
        if self.max_tokens is not None and self.max_tokens < 1:
            raise ModelConfigError(f"max_tokens must be at least 1, got {self.max_tokens}")
        if self.timeout <= 0:
            raise ModelConfigError(f"timeout must be a positive number of seconds, got {self.timeout}")
        if self.max_retries < 0:
            raise ModelConfigError(f"max_retries must be 0 or more, got {self.max_retries}")

    @classmethod
    def for_role(cls, role: Role) -> RoleSettings:
        """The built-in defaults of a role, before any environment variable."""
        match role:
            case "agent":
                return cls(temperature=0.0, max_tokens=4096)
            case "reflector":
                return cls(temperature=0.2, max_tokens=8192, timeout=300.0)
            case "skill_manager":
                return cls(temperature=0.0, max_tokens=4096, timeout=300.0)
            case "user":
                return cls(temperature=1.0, max_tokens=1024, prompt_caching=False)
            case "dedup":
                return cls(temperature=0.0, max_tokens=2048)
            case _:
                assert_never(role)

    @classmethod
    def from_env(cls, role: Role, environ: Mapping[str, str] | None = None) -> RoleSettings:
        """The role's defaults overridden by `ACE_<ROLE>_<FIELD>` variables (model falls back to `ACE_MODEL`).

        Fields: `MODEL`, `TEMPERATURE`, `MAX_TOKENS`, `TIMEOUT`, `MAX_RETRIES`, `PROMPT_CACHING`; for example
        `ACE_SKILL_MANAGER_MODEL=bedrock/us.anthropic.claude-haiku-4-5-20251001-v1:0`.
        """
        if role not in ROLES:
            raise ModelConfigError(f"Unknown role {role!r}: use one of {', '.join(ROLES)}")
        env = os.environ if environ is None else environ
        base = cls.for_role(role)
        prefix = f"ACE_{role.upper()}_"

        def read(field: str, parse: Callable[[str], _T], expected: str, default: _T) -> _T:
            name = prefix + field
            raw = env.get(name)
            if raw is None or not raw.strip():
                return default
            try:
                return parse(raw.strip())
            except ValueError:
                raise ModelConfigError(f"{name}={raw!r} is not {expected}: fix or unset the variable") from None

        model = env.get(prefix + "MODEL") or env.get("ACE_MODEL") or base.model
        return dataclasses.replace(
            base,
            model=model.strip() if model else None,
            temperature=read("TEMPERATURE", float, "a number such as 0.2", base.temperature),
            max_tokens=read("MAX_TOKENS", int, "an integer such as 4096", base.max_tokens),
            timeout=read("TIMEOUT", float, "a number of seconds such as 120", base.timeout),
            max_retries=read("MAX_RETRIES", int, "an integer such as 4", base.max_retries),
            prompt_caching=read("PROMPT_CACHING", _parse_bool, "a boolean (true/false)", base.prompt_caching),
        )

    def to_model_settings(self) -> ModelSettings:
        """The pydantic-ai `ModelSettings` these values stand for (unset values are left out)."""
        settings = ModelSettings(timeout=self.timeout, max_retries=self.max_retries)
        if self.temperature is not None:
            settings["temperature"] = self.temperature
        if self.max_tokens is not None:
            settings["max_tokens"] = self.max_tokens
        return settings


def role_settings(role: Role, environ: Mapping[str, str] | None = None) -> RoleSettings:
    """The settings of `role`: its defaults overridden by the environment (see `RoleSettings.from_env`)."""
    return RoleSettings.from_env(role, environ)


def _parse_bool(raw: str) -> bool:
    lowered = raw.lower()
    if lowered in _TRUE:
        return True
    if lowered in _FALSE:
        return False
    raise ValueError(raw)
