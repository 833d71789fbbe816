"""`LiteLLMModel`: a pydantic-ai `Model` that calls `litellm.acompletion` in-process, for any litellm model string.

Cost: litellm's `completion_cost` of each response is stored in `ModelResponse.usage.cost` (USD, a `Decimal`), which
pydantic-ai never overwrites and sums into the run's usage, so a caller reads it as `result.usage.cost`. It is `None`
when litellm cannot price the model.
"""

from __future__ import annotations

import dataclasses
from datetime import timedelta
from decimal import Decimal
from types import ModuleType
from typing import Any, ClassVar, Literal

import anyio.to_thread
from pydantic_ai.messages import ModelMessage, ModelResponse
from pydantic_ai.models import (
    ModelRequestParameters,
    check_allow_model_requests,
)
from pydantic_ai.profiles import ModelProfile, ModelProfileSpec
from pydantic_ai.settings import CacheSetting, ModelSettingName, ModelSettings

from ace.llm._litellm_mapping import CacheMarks, WireResponse, map_messages, map_response, map_tools
from ace.llm._whole_response import WholeResponseModel
from ace.llm.retry import RetryPolicy, call_with_retries
from ace.llm.third_party_env import litellm_defaults

__all__ = ["LiteLLMModel", "import_litellm"]

# ModelSettings keys forwarded to litellm under the same name.
_FORWARDED = ("max_tokens", "temperature", "top_p", "top_k", "seed", "presence_penalty", "frequency_penalty")
_FORWARDED_MORE = ("logit_bias", "extra_headers", "extra_body", "service_tier")


def import_litellm() -> ModuleType:
    """Import litellm (about 4-5 s the first time) without letting it fetch its cost map from the internet or load a
    `.env` file from an ancestor folder (`ace.llm.third_party_env`)."""
    litellm_defaults()
    import litellm

    litellm.suppress_debug_info = True
    return litellm


def supports_cache_control(model: str) -> bool:
    """Whether litellm turns `cache_control` markers into prompt caching for this model (Anthropic Claude models)."""
    lowered = model.lower()
    return "anthropic" in lowered or "claude" in lowered


class LiteLLMModel(WholeResponseModel):
    """Any litellm model string (`bedrock/...`, `openai/...`, `anthropic/...`, `ollama/...`, `hosted_vllm/...`).

    The string goes to `litellm.acompletion` untouched; keys and endpoints come from the environment as litellm
    expects them (or `api_base` / `api_key`). Retries are bounded and ours (`RetryPolicy`); litellm's own are off.
    """

    unsupported_settings: ClassVar[frozenset[ModelSettingName]] = frozenset({"citations"})
    _unsupported_file_inputs: ClassVar[frozenset[Literal["image", "document", "audio", "video"]]] = frozenset(
        {"document", "audio", "video"}
    )

    def __init__(
        self,
        model: str,
        *,
        settings: ModelSettings | None = None,
        profile: ModelProfileSpec | None = None,
        retry: RetryPolicy | None = None,
        prompt_caching: bool = False,
        api_base: str | None = None,
        api_key: str | None = None,
    ) -> None:
        """Create the model; nothing is imported or called until the first request.

        Args:
            model: The litellm model string, e.g. `bedrock/us.anthropic.claude-haiku-4-5-20251001-v1:0`.
            settings: Default `ModelSettings` (temperature, max_tokens, timeout, max_retries, ...).
            profile: Overrides of the model profile.
            retry: Backoff policy; `settings["max_retries"]` overrides its `max_retries`.
            prompt_caching: Mark the system prompt cacheable (only Anthropic Claude models act on it) when a request
                does not say otherwise; a request's `ModelSettings["cache"]` (pydantic-ai's unified setting: on/off,
                retention snapped to 5 minutes or 1 hour, whether the conversation is cached too) takes precedence.
            api_base: Endpoint for self-hosted models (`ollama/...`, `hosted_vllm/...`), if not in the environment.
            api_key: Key, if not in the environment.
        """
        if not model.strip():
            raise ValueError("LiteLLMModel needs a model string such as 'openai/gpt-4.1-mini'")
        super().__init__(settings=settings, profile=profile)
        self._model = model
        self._retry = retry or RetryPolicy()
        self._prompt_caching = prompt_caching and supports_cache_control(model)
        self._api_base = api_base
        self._api_key = api_key

    @property
    def model_name(self) -> str:
        """The litellm model string, unchanged."""
        return self._model

    @property
    def system(self) -> str:
        """The provider prefix of the model string (`bedrock`, `openai`, ...), or `litellm` when there is none."""
        prefix, slash, _ = self._model.partition("/")
        return prefix if slash else "litellm"

    @property
    def retry_policy(self) -> RetryPolicy:
        """The backoff policy of this model."""
        return self._retry

    @property
    def prompt_caching(self) -> bool:
        """Whether requests mark the system prompt cacheable."""
        return self._prompt_caching

    def cache_marks(self, cache: CacheSetting | None) -> CacheMarks | None:
        """Where a request asks for caching, from its resolved unified `cache` setting (`params.cache`, already
        snapped by pydantic-ai to this model's tiers); unset (`None`) falls back to the `prompt_caching` default.

        Only models that act on `cache_control` (Anthropic Claude) get markers.
        """
        if not supports_cache_control(self._model):
            return None
        if cache is None:
            return CacheMarks(prefix=True) if self._prompt_caching else None
        if cache is False:
            return None
        if cache is True:
            return CacheMarks(prefix=True, conversation=True)
        if isinstance(cache, str):
            return CacheMarks(prefix=True, conversation=True, ttl=cache)
        return CacheMarks(prefix=True, conversation=cache.get("messages", True), ttl=cache.get("retention"))

    def _provider_model_profile(self) -> ModelProfile:
        # litellm adapts JSON schemas and response formats per provider, so the generic profile plus JSON output.
        if supports_cache_control(self._model):  # Anthropic's explicit breakpoints, 5-minute and 1-hour tiers
            return ModelProfile(
                supports_json_schema_output=True,
                supports_json_object_output=True,
                supports_cache=True,
                supported_cache_retentions=("5m", "1h"),
                default_cache_retention=timedelta(minutes=5),
            )
        return ModelProfile(supports_json_schema_output=True, supports_json_object_output=True)

    def completion_kwargs(
        self,
        messages: list[ModelMessage],
        settings: ModelSettings | None,
        params: ModelRequestParameters,
    ) -> dict[str, Any]:
        """The keyword arguments of `litellm.acompletion` for this request (settings and parameters prepared)."""
        instructions = [part.content for part in self._get_instruction_parts(messages, params) or []]
        kwargs: dict[str, Any] = {
            "model": self._model,
            "messages": map_messages(messages, instructions, cache=self.cache_marks(params.cache)),
            # Retries are ours (bounded, with backoff and Retry-After); litellm and the SDKs must not add theirs.
            "num_retries": 0,
            "max_retries": 0,
            # A provider that lacks a sampling knob gets the request without it instead of a 400.
            "drop_params": True,
        }
        tools, tool_choice = map_tools(params)
        if tools:
            kwargs["tools"] = tools
            kwargs["tool_choice"] = tool_choice
        settings = settings or ModelSettings()
        for key in (*_FORWARDED, *_FORWARDED_MORE):
            if key in settings:
                kwargs[key] = settings[key]  # type: ignore[literal-required]
        if tools and "parallel_tool_calls" in settings:
            kwargs["parallel_tool_calls"] = settings["parallel_tool_calls"]
        if "stop_sequences" in settings:
            kwargs["stop"] = settings["stop_sequences"]
        if "timeout" in settings:
            kwargs["timeout"] = settings["timeout"]
        if params.output_mode == "native" and params.output_object is not None:
            output = params.output_object
            json_schema: dict[str, Any] = {"name": output.name or "final_result", "schema": output.json_schema}
            if output.description:
                json_schema["description"] = output.description
            kwargs["response_format"] = {"type": "json_schema", "json_schema": json_schema}
        if self._api_base:
            kwargs["api_base"] = self._api_base
        if self._api_key:
            kwargs["api_key"] = self._api_key
        return kwargs

    async def _respond(
        self, messages: list[ModelMessage], settings: ModelSettings | None, params: ModelRequestParameters
    ) -> ModelResponse:
        """Send one chat completion (with retries) and map the answer back."""
        check_allow_model_requests()
        litellm = await anyio.to_thread.run_sync(import_litellm)
        kwargs = self.completion_kwargs(messages, settings, params)
        policy = self._retry
        if settings and "max_retries" in settings:
            policy = dataclasses.replace(policy, max_retries=settings["max_retries"])

        async def attempt() -> Any:
            return await litellm.acompletion(**kwargs)

        raw = await call_with_retries(attempt, policy=policy, model_name=self._model)
        mapped = map_response(WireResponse.model_validate(raw.model_dump() if hasattr(raw, "model_dump") else raw))
        usage = mapped.usage
        usage.cost = self._cost(litellm, raw)
        return ModelResponse(
            parts=mapped.parts,
            usage=usage,
            model_name=mapped.model_name or self._model,
            provider_name=self.system,
            provider_response_id=mapped.response_id,
            provider_details={"finish_reason": mapped.raw_finish_reason} if mapped.raw_finish_reason else None,
            finish_reason=mapped.finish_reason,
        )

    def _cost(self, litellm: ModuleType, raw: Any) -> Decimal | None:
        try:
            cost = litellm.completion_cost(completion_response=raw, model=self._model)
        except Exception:  # an unpriced model (or a cost-map gap) must not fail the request
            return None
        if not isinstance(cost, int | float) or cost < 0:
            return None
        return Decimal(str(cost))

    @property
    def context_window(self) -> int | None:
        """The model's input window from litellm's (local) model map, or `None` when litellm does not know it."""
        cached: int | None = self.__dict__.get("_context_window")
        if "_context_window" in self.__dict__:
            return cached
        window: int | None = None
        try:
            info = import_litellm().get_model_info(self._model)
            value = info.get("max_input_tokens") or info.get("max_tokens")
            window = int(value) if value else None
        except Exception:  # unknown to litellm's map: unknown here too
            window = None
        self.__dict__["_context_window"] = window
        return window
