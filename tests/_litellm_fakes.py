"""A fake `litellm.acompletion` and locally built litellm responses, for tests of hosted-model paths."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

import pytest


def completion(
    litellm: ModuleType,
    *,
    content: str | None = None,
    tool_calls: list[tuple[str, str, dict[str, Any]]] = (),  # type: ignore[assignment]
    usage: dict[str, Any] | None = None,
    model: str = "gpt-4.1-mini",
    response_id: str = "chatcmpl-1",
) -> Any:
    """A litellm `ModelResponse` built locally, as `acompletion` returns it."""
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if tool_calls:
        message["tool_calls"] = [
            {"id": call_id, "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}
            for call_id, name, args in tool_calls
        ]
    return litellm.ModelResponse(
        id=response_id,
        model=model,
        choices=[{"index": 0, "finish_reason": "tool_calls" if tool_calls else "stop", "message": message}],
        usage=usage or {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120},
    )


@dataclass
class FakeCompletion:
    """Stands in for `litellm.acompletion`: records the kwargs, then returns (or raises) the scripted outcomes."""

    outcomes: list[Any]
    calls: list[dict[str, Any]] = field(default_factory=list)

    async def __call__(self, **kwargs: Any) -> Any:
        self.calls.append(kwargs)
        outcome = self.outcomes[min(len(self.calls), len(self.outcomes)) - 1]
        if isinstance(outcome, Exception):
            raise outcome
        return outcome


def install(monkeypatch: pytest.MonkeyPatch, litellm: ModuleType, outcomes: list[Any]) -> FakeCompletion:
    fake = FakeCompletion(outcomes)
    monkeypatch.setattr(litellm, "acompletion", fake)
    return fake
