"""Scripted models for offline tau2 runs: a Python function answers litellm's calls for `ace-scripted/<name>`.

tau2's agent and user simulator call `litellm.completion`; registering a litellm `CustomLLM` provider makes those
calls reach `fn(messages, tools)` instead of the network, so tests run tau2's real orchestrator, environments and
evaluator end to end. Token counts (messages and tool schemas) are estimated at four characters a token.
"""

from __future__ import annotations

import json
import threading
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import litellm
from litellm.llms.custom_llm import CustomLLM

__all__ = ["PROVIDER", "Reply", "ScriptFn", "ScriptInfo", "call", "last_user_text", "say", "scripted_model"]

PROVIDER = "ace-scripted"


@dataclass(frozen=True)
class Reply:
    """A scripted turn: text, or tool calls `(name, arguments)`."""

    content: str | None = None
    tool_calls: tuple[tuple[str, Mapping[str, Any]], ...] = field(default=())


@dataclass(frozen=True)
class ScriptInfo:
    """What a script sees besides the conversation (as pydantic-ai's `AgentInfo` for a `FunctionModel`)."""

    model: str
    tools: list[dict[str, Any]]
    """The OpenAI-format tool schemas offered."""
    seed: int | None
    """The seed tau2 set for this episode's trial (`set_seed`), None when unset."""


ScriptFn = Callable[[list[dict[str, Any]], ScriptInfo], Reply]
"""`fn(messages, info)`: the OpenAI-format conversation (system prompt first) -> the next turn."""


def say(text: str) -> Reply:
    return Reply(content=text)


def call(name: str, /, **arguments: Any) -> Reply:
    return Reply(tool_calls=((name, arguments),))


def _tokens(value: object) -> int:
    return max(1, len(json.dumps(value, default=str)) // 4)


class _ScriptedLLM(CustomLLM):
    def __init__(self) -> None:
        super().__init__()
        self.scripts: dict[str, ScriptFn] = {}

    def completion(self, model: str, messages: list[dict[str, Any]], *args: Any, **kwargs: Any) -> Any:
        name = model.split("/", 1)[-1]
        script = self.scripts.get(name)
        if script is None:
            raise ValueError(f"no scripted model {name!r}; register it with scripted_model({name!r}, fn)")
        params: dict[str, Any] = kwargs.get("optional_params") or {}
        seed = params.get("seed")
        info = ScriptInfo(
            model=name, tools=list(params.get("tools") or []), seed=seed if isinstance(seed, int) else None
        )
        reply = script(messages, info)
        message: dict[str, Any] = {"role": "assistant", "content": reply.content}
        if reply.tool_calls:
            message["tool_calls"] = [
                {
                    "id": f"call_{uuid.uuid4().hex[:12]}",
                    "type": "function",
                    "function": {"name": tool, "arguments": json.dumps(dict(arguments))},
                }
                for tool, arguments in reply.tool_calls
            ]
        prompt, completion = _tokens(messages) + (_tokens(info.tools) if info.tools else 0), _tokens(message)
        return litellm.ModelResponse(
            model=model,
            choices=[{"index": 0, "message": message, "finish_reason": "tool_calls" if reply.tool_calls else "stop"}],
            usage={"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion},
        )


_handler = _ScriptedLLM()
_lock = threading.Lock()


def scripted_model(name: str, fn: ScriptFn) -> str:
    """Register `fn(messages, info)` as the model `ace-scripted/<name>` (replacing an earlier one); returns its name."""
    with _lock:
        _handler.scripts[name] = fn
        if not any(item.get("provider") == PROVIDER for item in litellm.custom_provider_map):
            litellm.custom_provider_map = [
                *litellm.custom_provider_map,
                {"provider": PROVIDER, "custom_handler": _handler},
            ]
            litellm.utils.custom_llm_setup()  # type: ignore[no-untyped-call]
    return f"{PROVIDER}/{name}"


def last_user_text(messages: Sequence[Mapping[str, Any]]) -> str:
    """The content of the last `user` message (what a scripted agent answers)."""
    return next((str(m.get("content") or "") for m in reversed(messages) if m.get("role") == "user"), "")
