"""Preflight: every model and the embedder a run uses, checked before its run folder is created or touched.

Without spending a token: each model string resolves (`infer_model`), litellm knows its provider, the provider's
credentials are in the environment, the embedded local model is installed. Then, unless `--no-preflight`, one
minimal request per distinct model (16 tokens at most, a short timeout, one retry) through the model the run will
use, so routing, keys and model access are proven the same way the run exercises them. Every problem is reported
at once, each with its fix; `PreflightError` makes `ace-eval e2e` exit 2. A model that answers "busy" (rate limit,
5xx, timeout) is only a warning: the credentials worked and the run retries with backoff.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal, cast

from pydantic_ai.messages import ModelRequest
from pydantic_ai.models import Model, ModelRequestParameters
from pydantic_ai.settings import ModelSettings

from ace.embeddings.base import Embedder
from ace.embeddings.litellm import LiteLLMEmbedder
from ace.llm import LOCAL_MODEL_NAME, LiteLLMModel, LocalModel, ModelConfigError, ModelRequestError, infer_model
from ace.llm.credentials import check_model_name, missing_credentials
from ace.llm.local import find_smollm2_gguf, import_runtime
from ace.llm.retry import NON_RETRYABLE
from ace.llm.settings import ROLES
from ace.pipeline.phased import PlannedStep
from ace_eval.e2e.config import ConfigError, E2ESettings, ModelRole
from ace_eval.e2e.embedder import embedder_for

__all__ = [
    "PREFLIGHT_MAX_TOKENS",
    "PREFLIGHT_TIMEOUT",
    "Checked",
    "LLMRole",
    "PreflightError",
    "StepModel",
    "preflight",
    "roles_used",
    "step_models",
]

LLMRole = Literal["agent", "reflector", "skill_manager", "user"]

PREFLIGHT_MAX_TOKENS = 16
PREFLIGHT_TIMEOUT = 30.0
"""Seconds one preflight request may take (an attempt, then one retry on a transient failure)."""
_PROMPT = "Reply with the single word OK."
_FLAGS: dict[ModelRole, str] = {
    "agent": "--agent-model",
    "reflector": "--reflector-model",
    "skill_manager": "--skill-manager-model",
    "user": "--user-model",
    "embedding": "--embedding-model",
}
_STEP_FLAGS = {"deduplicate": "--dedup-model"}


class PreflightError(ConfigError):
    """The run cannot work as configured; nothing was written. The message lists every problem with its fix."""

    def __init__(self, problems: list[str]) -> None:
        self.problems = problems
        lines = "\n".join(f"  - {p}" for p in problems)
        super().__init__(
            f"the run was not started, {len(problems)} problem(s) found before anything was written:\n{lines}"
        )


@dataclass
class Checked:
    """What the preflight resolved: the models by role and the embedder, to be used by the run as they are."""

    models: dict[LLMRole, Model] = field(default_factory=dict[LLMRole, Model])
    step_models: dict[str, Model] = field(default_factory=dict[str, Model])
    """The models of the pipeline's steps by role (`dedup`), for their `StepEnvironment.models`."""
    embedder: Embedder | None = None
    warnings: list[str] = field(default_factory=list[str])
    requests: int = 0
    """Live requests made (one per distinct model, plus the embedder)."""


def roles_used(settings: E2ESettings) -> tuple[LLMRole, ...]:
    """The LLM roles a run calls through pydantic-ai: the benchmark's roles among the agent and the simulated user
    when its agent runs (a benchmark with its own clients checks its model strings itself); the reflector unless it
    is the grounded one (no model)."""
    benchmark = settings.benchmark_roles()  # the roles the benchmark calls that are the run's (agent, user)
    agent: tuple[LLMRole, ...] = tuple(r for r in ("agent", "user") if r in benchmark)
    reflector: tuple[LLMRole, ...] = () if settings.reflector_type == "grounded" else ("reflector",)
    return (*agent, *reflector, "skill_manager")


@dataclass(frozen=True)
class StepModel:
    """A model a pipeline step will use: the step that asks for it and the model string."""

    step: str
    model: str
    default: bool = False
    """The step's options name no model: it is the skill manager's."""


def step_models(settings: E2ESettings, plan: Sequence[PlannedStep]) -> dict[str, StepModel]:
    """The models of the planned steps by role (`dedup`: the `deduplicate` judge, by default the skill manager's)."""
    return {
        role: StepModel(p.registered.name, model, default=not p.models("")[role])
        for p in plan
        for role, model in p.models(settings.skill_manager_model).items()
    }


def preflight(
    settings: E2ESettings,
    injected: Mapping[LLMRole, Model],
    injected_embedder: Embedder | None = None,
    *,
    live: bool = True,
    steps: Mapping[str, StepModel] | None = None,
    injected_steps: Mapping[str, Model] | None = None,
) -> Checked:
    """Resolve and check every model and the embedder of `settings`, and the models of the pipeline's `steps`
    (`step_models`). Injected ones are trusted as they are, except that an injected `LocalModel` must be installed.

    Raises:
        PreflightError: one or more problems, each named with its fix.
    """
    checked = Checked(embedder=injected_embedder)
    who = _Who(settings, dict(steps or {}))
    given_steps = dict(injected_steps or {})
    failed: dict[tuple[str, str], list[str]] = {}  # (model string, problem) -> roles: said once
    targets: list[tuple[str, Model | None]] = [(role, injected.get(role)) for role in roles_used(settings)]
    targets += [(role, given_steps.get(role)) for role in who.steps]
    for role, given in targets:
        try:
            if given is not None:  # trusted, but an injected local model (the demo's) must be installed
                if isinstance(given, LocalModel):
                    _static_check(given)
                continue
            model = infer_model(who.model(role), role=role if role in ROLES else None)
            _static_check(model)
        except ModelConfigError as e:
            failed.setdefault((given.model_name if given else who.model(role), str(e)), []).append(role)
            continue
        if role in who.steps:
            checked.step_models[role] = model
        else:
            checked.models[cast(LLMRole, role)] = model
    problems = [f"{who(*roles)}: {problem}" for (_, problem), roles in failed.items()]
    hosted_embedder: LiteLLMEmbedder | None = None
    if injected_embedder is None:
        try:
            checked.embedder = embedder_for(settings.embedding_model)
            if isinstance(checked.embedder, LiteLLMEmbedder):
                hosted_embedder = checked.embedder
                _check_litellm(hosted_embedder.model)
            else:  # the offline embedder costs no token: load it and embed one text now
                checked.embedder.embed(["preflight"])
        except (ConfigError, ModelConfigError) as e:
            problems.append(f"{who('embedding')}: {e}")
        except Exception as e:
            problems.append(f"{who('embedding')}: the embedder failed: {type(e).__name__}: {e}")
    if problems:
        raise PreflightError(problems)
    if live:
        problems = asyncio.run(_live_checks(who, checked, hosted_embedder))
        if problems:
            raise PreflightError([f"{p} (to start without this test request: --no-preflight)" for p in problems])
    return checked


@dataclass(frozen=True)
class _Who:
    """Names roles, their model string, where it came from and the flag that changes it, for a problem's line."""

    settings: E2ESettings
    steps: dict[str, StepModel]

    def model(self, role: str) -> str:
        step = self.steps.get(role)
        return step.model if step is not None else self.settings.model_for(cast(ModelRole, role))

    def __call__(self, *roles: str) -> str:
        """`reflector, skill_manager model 'local' (the default; change it with --reflector-model, ...)`."""
        names = ", ".join(roles)
        sources = ", ".join(dict.fromkeys(self._source(role) for role in roles))
        flags = ", ".join(dict.fromkeys(self._flag(role) for role in roles))
        return f"{names} model {self.model(roles[0])!r} ({sources}; change it with {flags})"

    def _source(self, role: str) -> str:
        step = self.steps.get(role)
        if step is None:
            return _source(self.settings, cast(ModelRole, role))
        return f"the step {step.step!r}" + (", the skill manager's by default" if step.default else "")

    def _flag(self, role: str) -> str:
        step = self.steps.get(role)
        if step is None:
            return _FLAGS[cast(ModelRole, role)]
        return _STEP_FLAGS.get(step.step, f"the options of --step {step.step} (`ace-eval steps list`)")


def _source(settings: E2ESettings, role: ModelRole) -> str:
    source = settings.source_of(f"{role}_model")
    if source == "default":
        return "the default"
    if source.startswith("env:"):
        return f"from ${source.removeprefix('env:')}"
    if source.startswith("config:"):
        return f"from {source.removeprefix('config:')}"
    return f"from the {source}"


def _static_check(model: Model) -> None:
    """What can be checked without a request; raises `ModelConfigError` with the fix."""
    if isinstance(model, LocalModel):
        import_runtime()
        if model.model_name == LOCAL_MODEL_NAME:
            find_smollm2_gguf()
    elif isinstance(model, LiteLLMModel):
        _check_litellm(model.model_name)


def _check_litellm(model: str) -> None:
    check_model_name(model)  # a typo of a listed model is named as such, not as a missing key
    missing = missing_credentials(model)  # raises ModelConfigError for a provider litellm does not know
    if missing:
        names = " and ".join(missing)
        raise ModelConfigError(
            f"the provider's credentials are not in the environment: set {names} (e.g. `export {missing[0]}=...`)"
            + (", or configure an AWS profile (AWS_PROFILE)" if missing[0].startswith("AWS_") else "")
        )


async def _live_checks(who: _Who, checked: Checked, embedder: LiteLLMEmbedder | None) -> list[str]:
    """One request per distinct model (and one embedding); the problems found, each with its fix."""
    by_model: dict[tuple[str, str], list[str]] = {}
    first: dict[tuple[str, str], Model] = {}
    models: list[tuple[str, Model]] = [*checked.models.items(), *checked.step_models.items()]
    for role, model in models:
        key = (model.system, model.model_name)
        by_model.setdefault(key, []).append(role)
        first.setdefault(key, model)
    keys = list(first)
    outcomes = await asyncio.gather(*(_ask(first[key]) for key in keys))
    problems: list[str] = []
    for key, outcome in zip(keys, outcomes, strict=True):
        checked.requests += 1
        if outcome is None:
            continue
        text, fatal = outcome
        (problems if fatal else checked.warnings).append(f"{who(*by_model[key])}: {text}")
    if embedder is not None:
        checked.requests += 1
        try:
            await asyncio.to_thread(embedder.embed, ["preflight"])
        except Exception as e:
            problems.append(f"{who('embedding')}: the embedder failed: {type(e).__name__}: {e}")
    return problems


async def _ask(model: Model) -> tuple[str, bool] | None:
    """`None` when `model` answered; else what went wrong and whether the run cannot work (`True`)."""
    model_settings = ModelSettings(max_tokens=PREFLIGHT_MAX_TOKENS)
    if isinstance(model, LiteLLMModel):
        model_settings["timeout"] = PREFLIGHT_TIMEOUT
        model_settings["max_retries"] = 1
    try:
        await model.request([ModelRequest.user_text_prompt(_PROMPT)], model_settings, ModelRequestParameters())
    except ModelRequestError as e:
        fatal = e.kind in NON_RETRYABLE or e.kind in ("connection", "other")
        return str(e), fatal
    except ModelConfigError as e:
        return str(e), True
    except Exception as e:
        return f"the test request failed: {type(e).__name__}: {e}", True
    return None
