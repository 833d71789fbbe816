"""Model profiles: the settings a reflector and a skill manager need for the kind of model they run on.

The embedded small model (`local`, SmolLM2-135M) needs short prompts, no conversation in the reflector's prompt,
one tool call per skill-manager session, short outputs and no retries; a hosted model gets the library defaults.
A role's profile follows its model string (`--profile` forces one), and the run's settings override each value:
`--max-output-tokens`, `--reflector-retries`, `--reflector-conversation/--no-reflector-conversation`,
`--sm-request-limit`, `--sm-tool-calls` (or the same keys in `[e2e]` of ace-eval.toml).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Literal, get_args

from pydantic_ai.models import Model
from pydantic_ai.settings import ModelSettings

from ace.llm import LocalModel
from ace.llm.routing import LOCAL_ALIASES
from ace.reflector.prompts import SMALL_MODEL_REFLECTOR_PROMPT
from ace.skill_manager.manager import SMSettings
from ace.skill_manager.prompts import SMALL_MODEL_SKILL_MANAGER_PROMPT
from ace_eval.e2e.config import E2ESettings
from ace_eval.e2e.preflight import roles_used
from ace_eval.e2e.segment import RunInjections

__all__ = ["PROFILES", "SMALL", "ModelProfile", "ProfileName", "profile_of", "small_judge", "with_profiles"]

ProfileName = Literal["auto", "small", "hosted"]
PROFILES: tuple[ProfileName, ...] = get_args(ProfileName)


@dataclass(frozen=True, kw_only=True)
class ModelProfile:
    """What one kind of model is given; `None` keeps the library default."""

    name: str
    max_output_tokens: int | None = None
    reflector_retries: int | None = None
    reflector_conversation: bool | None = None
    reflector_instructions: str | None = None
    sm_request_limit: int | None = None
    sm_tool_calls_limit: int | None = None
    sm_instructions: str | None = None
    sm_small: bool = False
    """Short skill-manager prompts: no trace ids, no existing skills shown, one tool retry."""
    max_workers: int | None = None
    """Samples at once when `--max-workers` is not set."""


SMALL = ModelProfile(
    name="small",
    max_output_tokens=256,
    reflector_retries=0,
    reflector_conversation=False,
    reflector_instructions=SMALL_MODEL_REFLECTOR_PROMPT,
    sm_request_limit=2,
    sm_tool_calls_limit=1,
    sm_instructions=SMALL_MODEL_SKILL_MANAGER_PROMPT,
    sm_small=True,
    max_workers=2,
)
"""The demo's settings, with which SmolLM2-135M writes sentences rather than the ids and JSON of its prompt."""
HOSTED = ModelProfile(name="hosted")

_N_CTX = 4096
_MAX_STRING_CHARS = 120
"""About one sentence per reflection field and skill argument: fewer tokens to decode, and SmolLM2 stays on topic."""
_FREQUENCY_PENALTY = 0.5
_LOCAL_CAP = 1024
_LEARNING: tuple[Literal["reflector", "skill_manager"], ...] = ("reflector", "skill_manager")
"""The most the embedded model writes per request (`ace.llm.routing`)."""


def profile_of(
    settings: E2ESettings, role: Literal["reflector", "skill_manager"], *, injected: bool = False
) -> ModelProfile:
    """The profile of a role: `--profile`, else by its model string (the embedded model is `small`); a model a
    caller injected (a test's scripted one) gets the library defaults unless `--profile` says otherwise."""
    if settings.profile != "auto":
        return SMALL if settings.profile == "small" else HOSTED
    if injected:
        return HOSTED
    return SMALL if _is_local(settings, role) else HOSTED


def _is_local(settings: E2ESettings, role: Literal["reflector", "skill_manager"]) -> bool:
    return settings.model_for(role).strip().lower() in LOCAL_ALIASES


def _value(settings: E2ESettings, name: str, profile: ModelProfile) -> Any:
    """The run's setting when it is set, else the profile's."""
    value = getattr(settings, name)
    return getattr(profile, name) if value is None else value


def _local(max_tokens: int, *, tool_first: bool, slots: int) -> LocalModel:
    settings = ModelSettings(max_tokens=max_tokens, temperature=0.0, frequency_penalty=_FREQUENCY_PENALTY)
    return LocalModel(
        n_ctx=_N_CTX, settings=settings, tool_first=tool_first, max_string_chars=_MAX_STRING_CHARS, slots=slots
    )


def with_profiles(settings: E2ESettings, inj: RunInjections) -> tuple[E2ESettings, RunInjections]:
    """The settings and injections a run uses once each role's profile is applied; what `inj` already holds wins.

    A role on the embedded model gets its own small-model `LocalModel` (one core each); the workers default to the
    profile's when both roles share it and `--max-workers` is not set.
    """
    reflector = profile_of(settings, "reflector", injected="reflector" in inj.models)
    manager = profile_of(settings, "skill_manager", injected="skill_manager" in inj.models)
    if settings.source_of("max_workers") == "default" and reflector.max_workers and manager.max_workers:
        workers = min(reflector.max_workers, manager.max_workers)
        settings = dataclasses.replace(
            settings, max_workers=workers, sources={**settings.sources, "max_workers": f"profile:{reflector.name}"}
        )
    models: dict[Any, Model] = dict(inj.models)
    used = roles_used(settings)
    local = {role for role in _LEARNING if role in used and _is_local(settings, role) and role not in inj.models}
    if "reflector" in local:
        tokens = min(_value(settings, "max_output_tokens", reflector) or _LOCAL_CAP, _LOCAL_CAP)
        models["reflector"] = _local(tokens, tool_first=False, slots=1)
    if "skill_manager" in local:
        tokens = min(_value(settings, "max_output_tokens", manager) or _LOCAL_CAP, _LOCAL_CAP)
        models["skill_manager"] = _local(tokens, tool_first=True, slots=settings.max_workers)
    options: dict[str, Any] = {}
    if settings.reflector_type == "simple":
        for key, name in (("output_retries", "reflector_retries"), ("conversation", "reflector_conversation")):
            if (value := _value(settings, name, reflector)) is not None:
                options[key] = value
        if reflector.reflector_instructions is not None:
            options["instructions"] = reflector.reflector_instructions
    if "reflector" not in local and settings.max_output_tokens is not None:
        options["model_settings"] = ModelSettings(max_tokens=settings.max_output_tokens)
    sm_settings = inj.sm_settings
    if sm_settings is None:
        base = SMSettings()
        requests = _value(settings, "sm_request_limit", manager) or base.budget.request_limit
        calls = _value(settings, "sm_tool_calls_limit", manager) or base.budget.tool_calls_limit
        budget = dataclasses.replace(base.budget, request_limit=requests, tool_calls_limit=calls)
        if manager.sm_small:
            budget = dataclasses.replace(budget, max_history_tokens=2_000)
            sm_settings = SMSettings(budget=budget, tool_retries=1, context_top_k=0, show_trace=False)
        else:
            sm_settings = dataclasses.replace(base, budget=budget)
    sm_model_settings = inj.sm_model_settings
    if sm_model_settings is None and "skill_manager" not in local and settings.max_output_tokens is not None:
        sm_model_settings = ModelSettings(max_tokens=settings.max_output_tokens)
    injected = dataclasses.replace(
        inj,
        models=models,
        reflector_options={**options, **inj.reflector_options},
        sm_settings=sm_settings,
        sm_instructions=inj.sm_instructions or manager.sm_instructions,
        sm_model_settings=sm_model_settings,
    )
    return settings, injected


def small_judge(settings: E2ESettings, model: str) -> LocalModel | None:
    """A step's judge on the embedded model (the `deduplicate` step's) with the small profile's output limit;
    None for another model string, or with `--profile hosted`."""
    if model.strip().lower() not in LOCAL_ALIASES or settings.profile == "hosted":
        return None
    tokens = min(settings.max_output_tokens or SMALL.max_output_tokens or _LOCAL_CAP, _LOCAL_CAP)
    return _local(tokens, tool_first=True, slots=1)
