"""`infer_model`: a model string (or nothing) to a pydantic-ai `Model`, with the role's settings applied."""

from __future__ import annotations

from pydantic_ai.models import Model
from pydantic_ai.models.test import TestModel
from pydantic_ai.settings import ModelSettings

from ace.llm._errors import ModelConfigError
from ace.llm.litellm_model import LiteLLMModel
from ace.llm.local import DEFAULT_LOCAL_MAX_TOKENS, LocalModel
from ace.llm.retry import RetryPolicy
from ace.llm.settings import Role, RoleSettings

__all__ = ["KNOWN_PROVIDERS", "LOCAL_ALIASES", "infer_model", "suggest_model", "to_litellm_string"]

LOCAL_ALIASES = frozenset({"local", "default", "smollm2"})
"""Model strings that name the embedded offline model."""

# pydantic-ai spells models `provider:name`; litellm spells them `provider/name`. Only these prefixes are rewritten,
# and only when the string has no `/` (a `bedrock/...:0` id keeps its colon).
_PYDANTIC_AI_PREFIXES = frozenset({"openai", "anthropic", "bedrock", "groq", "mistral", "ollama", "gemini"})
KNOWN_PROVIDERS = frozenset(
    {*_PYDANTIC_AI_PREFIXES, "azure", "vertex_ai", "openrouter", "deepseek", "together_ai", "xai", "cohere"}
)
"""Provider prefixes a misspelt one is compared with (`suggest_model`); litellm knows many more."""


def _one_edit(a: str, b: str) -> bool:
    """True when `a` and `b` differ by one insertion, deletion, substitution or swap of neighbours."""
    if a == b or abs(len(a) - len(b)) > 1:
        return False
    if len(a) == len(b):
        diff = [i for i, (x, y) in enumerate(zip(a, b, strict=True)) if x != y]
        return len(diff) == 1 or (
            len(diff) == 2 and diff[1] == diff[0] + 1 and a[diff[0]] == b[diff[1]] and a[diff[1]] == b[diff[0]]
        )
    short, long = sorted((a, b), key=len)
    return any(long[:i] + long[i + 1 :] == short for i in range(len(long)))


def suggest_model(model: str) -> str | None:
    """The model string `model` was likely meant to be: a local alias or `test` one edit away, or the same model
    under a known provider one edit away (`opnai/gpt-4o` -> `openai/gpt-4o`); None when nothing is that close."""
    name = model.strip().lower()
    prefix, slash, _ = name.partition("/")
    if slash:
        close = sorted(p for p in KNOWN_PROVIDERS if _one_edit(prefix, p))
        return f"{close[0]}/{model.strip().partition('/')[2]}" if close and prefix not in KNOWN_PROVIDERS else None
    close = sorted(a for a in (*LOCAL_ALIASES, "test") if _one_edit(name, a))
    return close[0] if close else None


def to_litellm_string(model: str) -> str:
    """`model` as litellm expects it: unchanged, except a pydantic-ai `provider:name` becomes `provider/name`."""
    if "/" in model:
        return model
    prefix, colon, rest = model.partition(":")
    if colon and rest and prefix.lower() in _PYDANTIC_AI_PREFIXES:
        return f"{prefix.lower()}/{rest}"
    return model


_TOOL_FIRST_ROLES: frozenset[str] = frozenset({"skill_manager", "reflector", "dedup"})


def infer_model(
    model: Model | str | None = None,
    *,
    role: Role | None = None,
    settings: RoleSettings | None = None,
) -> Model:
    """The pydantic-ai model for `model`, configured with the role's settings. Nothing is called or imported yet.

    - a `Model` instance is returned as it is;
    - `None` takes the role's configured model (`ACE_<ROLE>_MODEL`, then `ACE_MODEL`), else the embedded model;
    - `"local"`, `"default"` or `"smollm2"` is the embedded offline model (`LocalModel`);
    - `"test"` is pydantic-ai's `TestModel`;
    - `"rules"` is the rule-based skill-manager policy (`ace.llm.rules`) for grounded reflections;
    - anything else is a litellm model string (`LiteLLMModel`), passed through untouched.

    Args:
        model: A model, a model string, or `None`.
        role: Whose settings apply (`RoleSettings.from_env(role)`), when `settings` is not given.
        settings: Explicit settings; they win over `role`.
    """
    if isinstance(model, Model):
        return model
    if settings is None:
        settings = RoleSettings.from_env(role) if role is not None else RoleSettings()
    name = settings.model if model is None else model
    if name is not None:
        name = name.strip()
        if not name:
            raise ModelConfigError(
                "Empty model string: pass a litellm model string such as 'openai/gpt-4.1-mini', or 'local'"
            )
    if name is None or name.lower() in LOCAL_ALIASES:
        local_settings = ModelSettings(max_tokens=min(settings.max_tokens or DEFAULT_LOCAL_MAX_TOKENS, 1024))
        if settings.temperature is not None:
            local_settings["temperature"] = settings.temperature
        # Agents that act through tools must call one before they may answer: SmolLM2 otherwise ends in prose.
        return LocalModel(settings=local_settings, tool_first=role in _TOOL_FIRST_ROLES)
    if name == "test":
        return TestModel()
    if name == "rules":  # the deterministic skill-manager policy: no key, no request leaves the process
        from ace.llm.rules import rules_model

        return rules_model()
    if "/" not in name and ":" not in name and (guess := suggest_model(name)) is not None:
        raise ModelConfigError(f"unknown model {name!r}: did you mean {guess!r}?")
    if name.startswith("function:"):
        raise ModelConfigError(
            f"{name!r}: a function model cannot be named by a string; pass a pydantic-ai FunctionModel instance"
        )
    return LiteLLMModel(
        to_litellm_string(name),
        settings=settings.to_model_settings(),
        retry=RetryPolicy(max_retries=settings.max_retries),
        prompt_caching=settings.prompt_caching,
    )
