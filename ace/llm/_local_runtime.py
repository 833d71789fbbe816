"""The llama.cpp bindings `LocalModel` runs on: `xllamacpp` (prebuilt wheels), else `llama-cpp-python` (compiled).

Both decode one chat step under a JSON schema and reuse the KV cache of the prompt prefix that the previous request
shared (the static system prompt and the conversation so far), so each step only evaluates the new turns.
"""

from __future__ import annotations

import importlib
import json
import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any, Protocol

from ace.extras import missing_extra, module_installed
from ace.llm._errors import HOSTED_INSTEAD, LocalRuntimeUnavailableError

__all__ = ["RUNTIME_MODULES", "Completion", "LocalRuntime", "import_runtime", "load_runtime"]

RUNTIME_MODULES = ("xllamacpp", "llama_cpp")
"""Import names of the supported bindings, in order of preference."""
_RUNTIME_EXTRAS = {"xllamacpp": "local", "llama_cpp": "local-compiled"}
"""The extra of pyproject.toml that installs each binding."""
_GRAMMAR_CACHE_SIZE = 16
_CHARS_PER_TOKEN = 3
"""A conservative estimate for English BPE text, used where a binding offers no tokenizer."""
_CACHE_REUSE_CHUNK = 64
"""Reuse cached runs of at least this many tokens even after the prompts diverged (llama.cpp shifts their KV), so
text shared by consecutive prompts behind a varying part (a policy after a per-trace task) is not evaluated again."""
_COMPACT_JSON = {"whitespace_flexible": False, "item_separator": ", ", "key_separator": ": "}
"""llguidance options: one space after `,` and `:` and nowhere else, so no token goes to indentation."""


@dataclass(frozen=True, kw_only=True)
class Completion:
    """One decoded step: its text and what it cost."""

    text: str
    finish_reason: str | None
    prompt_tokens: int
    completion_tokens: int
    cached_tokens: int
    """Prompt tokens whose KV cache was reused from the previous request (not evaluated again)."""


class LocalRuntime(Protocol):
    """A loaded GGUF chat model. Not thread-safe: `LocalModel` serialises calls."""

    name: str
    version: str

    def count_tokens(self, text: str) -> int: ...

    def complete(
        self,
        turns: Sequence[dict[str, str]],
        schema: dict[str, Any] | None,
        max_tokens: int,
        sampling: dict[str, Any],
        slot: int = 0,
    ) -> Completion: ...


def import_runtime() -> ModuleType:
    """The first importable binding of `RUNTIME_MODULES`, or a `LocalRuntimeUnavailableError` naming the extra: the
    one of a binding that is installed but does not import (reinstall it), else the preferred one (install it)."""
    errors: dict[str, ImportError] = {}
    for name in RUNTIME_MODULES:
        try:
            return importlib.import_module(name)
        except ImportError as error:
            errors[name] = error
    name = next((n for n in RUNTIME_MODULES if module_installed(n)), RUNTIME_MODULES[0])
    raise missing_extra(
        _RUNTIME_EXTRAS.get(name, "local"), errors[name], advice=HOSTED_INSTEAD, cls=LocalRuntimeUnavailableError
    ) from errors[name]


def load_runtime(path: Path, *, n_ctx: int, n_threads: int, seed: int, slots: int = 1) -> LocalRuntime:
    """Load `path` with the preferred installed binding; `slots` prompt caches of `n_ctx` tokens each (xllamacpp)."""
    module = import_runtime()
    if module.__name__ == "xllamacpp":
        return XllamacppRuntime(module, path, n_ctx=n_ctx, n_threads=n_threads, seed=seed, slots=slots)
    return LlamaCppPythonRuntime(module, path, n_ctx=n_ctx, n_threads=n_threads, seed=seed)


class XllamacppRuntime:
    """llama.cpp's own server engine in-process (`xllamacpp.Server`): prompt cache on, logs off.

    Each slot keeps the KV cache of its last prompt, and llama.cpp sends a request to the slot whose cached prompt it
    shares most with: with one slot per concurrent session, sessions whose requests alternate do not evict each
    other's conversation from the cache. Requests still run one at a time (`LocalModel` holds a lock).

    The engine also opens llama.cpp's HTTP listener on a free port of 127.0.0.1 whenever it loads (xllamacpp offers
    no way to start without it; this class never uses it: requests go in process). The listener gets a random API
    key that nothing ever sends, so another local process cannot use the model through it (it answers 401; only
    `/health` stays open).
    """

    name = "xllamacpp"

    def __init__(
        self, module: ModuleType, path: Path, *, n_ctx: int, n_threads: int, seed: int, slots: int = 1
    ) -> None:
        params = module.CommonParams()
        params.model.path = str(path)
        params.n_ctx = n_ctx * slots  # the server splits its window between the slots
        params.n_parallel = slots
        params.cpuparams.n_threads = n_threads
        params.cpuparams_batch.n_threads = n_threads
        params.sampling.seed = seed
        params.cache_prompt = True
        params.n_cache_reuse = _CACHE_REUSE_CHUNK
        params.warmup = False
        params.verbosity = -1
        params.api_keys = [secrets.token_urlsafe(32)]  # locks the unused listener (see the class docstring)
        self.version = str(getattr(module, "__version__", "unknown"))
        self._server: Any = module.Server(params)

    def count_tokens(self, text: str) -> int:
        """An upper estimate: the server exposes no tokenizer, and trimming must not overshoot the window."""
        return len(text) // _CHARS_PER_TOKEN + 1

    def complete(
        self,
        turns: Sequence[dict[str, str]],
        schema: dict[str, Any] | None,
        max_tokens: int,
        sampling: dict[str, Any],
        slot: int = 0,
    ) -> Completion:
        request: dict[str, Any] = {
            "messages": list(turns),
            "max_tokens": max_tokens,
            "cache_prompt": True,
            "id_slot": slot,
            **sampling,
        }
        if schema is not None:
            request["grammar"] = "%llguidance {}\nstart: %json " + json.dumps({**schema, "x-guidance": _COMPACT_JSON})
        output = self._server.handle_chat_completions(request)
        if not isinstance(output, dict) or not output.get("choices"):
            error = output.get("error") if isinstance(output, dict) else output
            raise RuntimeError(f"xllamacpp returned no completion: {error}")
        choice = output["choices"][0]
        usage = output.get("usage") or {}
        return Completion(
            text=choice.get("message", {}).get("content") or "",
            finish_reason=choice.get("finish_reason"),
            prompt_tokens=int(usage.get("prompt_tokens", 0)),
            completion_tokens=int(usage.get("completion_tokens", 0)),
            cached_tokens=int((usage.get("prompt_tokens_details") or {}).get("cached_tokens", 0)),
        )


class LlamaCppPythonRuntime:
    """`llama_cpp.Llama` (llama-cpp-python, compiled at install); it reuses the longest common prompt prefix."""

    name = "llama_cpp"

    def __init__(self, module: ModuleType, path: Path, *, n_ctx: int, n_threads: int, seed: int) -> None:
        self._module = module
        self.version = str(getattr(module, "__version__", "unknown"))
        self._llama: Any = module.Llama(
            model_path=str(path), n_ctx=n_ctx, n_threads=n_threads, n_threads_batch=n_threads, seed=seed, verbose=False
        )
        self._grammars: dict[str, Any] = {}

    def count_tokens(self, text: str) -> int:
        return len(self._llama.tokenize(text.encode(), add_bos=False, special=False))

    def complete(
        self,
        turns: Sequence[dict[str, str]],
        schema: dict[str, Any] | None,
        max_tokens: int,
        sampling: dict[str, Any],
        slot: int = 0,
    ) -> Completion:
        del slot  # one KV cache
        grammar = self._grammar(schema) if schema is not None else None
        output = self._llama.create_chat_completion(
            messages=list(turns), grammar=grammar, max_tokens=max_tokens, **sampling
        )
        choice = output["choices"][0]
        usage = output.get("usage") or {}
        return Completion(
            text=choice["message"].get("content") or "",
            finish_reason=choice.get("finish_reason"),
            prompt_tokens=int(usage.get("prompt_tokens", 0)),
            completion_tokens=int(usage.get("completion_tokens", 0)),
            cached_tokens=0,
        )

    def _grammar(self, schema: dict[str, Any]) -> Any:
        """The compiled grammar of `schema`; a session offers the same tools at every step, so it is kept."""
        key = json.dumps(schema, sort_keys=True)
        grammar = self._grammars.get(key)
        if grammar is None:
            if len(self._grammars) >= _GRAMMAR_CACHE_SIZE:
                self._grammars.pop(next(iter(self._grammars)))
            grammar = self._module.LlamaGrammar.from_json_schema(key, verbose=False)
            self._grammars[key] = grammar
        return grammar
