"""An OpenAI chat-completions request as pydantic-ai messages, and a pydantic-ai response as a chat completion.

The reverse of `_litellm_mapping`: there ACE sends OpenAI-style requests; here `OpenAIServer` receives them (from
litellm's `openai/` provider, the OpenAI SDK underneath) and answers in the same shape. Pure functions.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelRequestPart,
    ModelResponse,
    ModelResponsePart,
    SystemPromptPart,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models import ModelRequestParameters
from pydantic_ai.settings import ModelSettings
from pydantic_ai.tools import ToolDefinition

from ace.exceptions import UserError

__all__ = ["ChatRequest", "WireError", "chat_completion", "parse_chat_request"]


class WireError(UserError, ValueError):
    """A request the server cannot answer; the message names the field and what to send instead (HTTP 400)."""


class _Wire(BaseModel):
    model_config = ConfigDict(extra="ignore")


class _Function(_Wire):
    name: str = Field(min_length=1)
    description: str | None = None
    parameters: dict[str, Any] | None = None


class _Tool(_Wire):
    type: Literal["function"] = "function"
    function: _Function


class _Body(_Wire):
    model: str
    messages: list[dict[str, Any]] = Field(min_length=1)
    tools: list[_Tool] | None = None
    tool_choice: str | dict[str, Any] | None = None
    temperature: float | None = None
    top_p: float | None = None
    max_tokens: int | None = Field(None, ge=1)
    max_completion_tokens: int | None = Field(None, ge=1)
    seed: int | None = None
    stop: str | list[str] | None = None
    stream: bool = False
    n: int = 1


@dataclass(frozen=True, kw_only=True)
class ChatRequest:
    """One chat-completions request, ready for `Model.request`."""

    model: str
    """The served model's name (litellm sends `openai/<name>` as `<name>`)."""
    messages: list[ModelMessage]
    settings: ModelSettings
    params: ModelRequestParameters


def parse_chat_request(body: object) -> ChatRequest:
    """The request `body` (a decoded JSON object) in pydantic-ai's terms; raises `WireError` naming the field."""
    try:
        wire = _Body.model_validate(body)
    except ValidationError as e:
        first = e.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "body"
        raise WireError(f"{where}: {first['msg']}") from None
    if wire.stream:
        raise WireError("stream: this server answers whole; send stream=false")
    if wire.n != 1:
        raise WireError(f"n: one choice per request is served, got n={wire.n}")
    tools = [
        ToolDefinition(
            name=tool.function.name,
            description=tool.function.description,
            parameters_json_schema=tool.function.parameters or {"type": "object", "properties": {}},
        )
        for tool in wire.tools or []
    ]
    tools, allow_text = _choose_tools(tools, wire.tool_choice)
    settings = ModelSettings()
    if wire.temperature is not None:
        settings["temperature"] = wire.temperature
    if wire.top_p is not None:
        settings["top_p"] = wire.top_p
    if (limit := wire.max_completion_tokens or wire.max_tokens) is not None:
        settings["max_tokens"] = limit
    if wire.seed is not None:
        settings["seed"] = wire.seed
    if wire.stop is not None:
        settings["stop_sequences"] = [wire.stop] if isinstance(wire.stop, str) else list(wire.stop)
    return ChatRequest(
        model=wire.model,
        messages=_messages(wire.messages),
        settings=settings,
        params=ModelRequestParameters(function_tools=tools, allow_text_output=allow_text),
    )


def _choose_tools(
    tools: list[ToolDefinition], choice: str | dict[str, Any] | None
) -> tuple[list[ToolDefinition], bool]:
    """The tools offered and whether a text answer is allowed, as `tool_choice` says."""
    if choice is None or choice == "auto":
        return tools, True
    if choice == "none":
        return [], True
    if choice == "required":
        return tools, not tools
    name = choice.get("function", {}).get("name") if isinstance(choice, dict) else None
    chosen = [tool for tool in tools if tool.name == name]
    if not chosen:
        offered = ", ".join(tool.name for tool in tools) or "none"
        raise WireError(f"tool_choice {choice!r}: send auto, none, required or an offered function ({offered})")
    return chosen, False


def _text(content: object, where: str) -> str:
    """A message's content as text: a string, null, or text parts."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts: list[str] = []
        for i, part in enumerate(content):
            if not isinstance(part, dict) or part.get("type") != "text" or not isinstance(part.get("text"), str):
                raise WireError(f"{where}.content[{i}]: only text parts are served")
            texts.append(part["text"])
        return "\n".join(texts)
    raise WireError(f"{where}.content: send a string or a list of text parts")


def _messages(messages: Sequence[Mapping[str, Any]]) -> list[ModelMessage]:
    """OpenAI chat messages as alternating pydantic-ai requests and responses (a tool result names its tool)."""
    history: list[ModelMessage] = []
    pending: list[ModelRequestPart] = []
    tool_names: dict[str, str] = {}
    for i, message in enumerate(messages):
        where, role = f"messages[{i}]", message.get("role")
        if role in ("system", "developer"):
            pending.append(SystemPromptPart(_text(message.get("content"), where)))
        elif role == "user":
            pending.append(UserPromptPart(_text(message.get("content"), where)))
        elif role == "tool":
            call_id = str(message.get("tool_call_id") or "")
            name = tool_names.get(call_id) or str(message.get("name") or "tool")
            content = _text(message.get("content"), where)
            pending.append(ToolReturnPart(tool_name=name, content=content, tool_call_id=call_id))
        elif role == "assistant":
            if pending:
                history.append(ModelRequest(parts=pending))
                pending = []
            parts: list[ModelResponsePart] = []
            if text := _text(message.get("content"), where):
                parts.append(TextPart(content=text))
            for j, call in enumerate(message.get("tool_calls") or []):
                function = call.get("function") if isinstance(call, dict) else None
                if not isinstance(function, dict) or not isinstance(function.get("name"), str):
                    raise WireError(f"{where}.tool_calls[{j}]: send {{'id', 'type': 'function', 'function': ...}}")
                call_id = str(call.get("id") or f"call_{i}_{j}")
                tool_names[call_id] = function["name"]
                parts.append(ToolCallPart(function["name"], str(function.get("arguments") or "{}"), call_id))
            history.append(ModelResponse(parts=parts or [TextPart(content="")]))
        else:
            raise WireError(f"{where}.role: {role!r} is none of system, user, assistant, tool")
    if pending:
        history.append(ModelRequest(parts=pending))
    return history


def _arguments(part: ToolCallPart) -> dict[str, Any] | None:
    """The call's arguments as a JSON object, or None when the model wrote something else."""
    if isinstance(part.args, dict):
        return part.args
    try:
        decoded = json.loads(part.args or "{}")
    except ValueError:
        return None
    return decoded if isinstance(decoded, dict) else None


def chat_completion(response: ModelResponse, *, model: str, completion_id: str, created: int) -> dict[str, Any]:
    """`response` as an OpenAI chat completion. A tool call whose arguments are not a JSON object is sent as the
    text the model wrote, so a client always receives calls it can decode (and a conversation goes on)."""
    texts: list[str] = []
    calls: list[dict[str, Any]] = []
    for part in response.parts:
        if isinstance(part, TextPart) and part.content:
            texts.append(part.content)
        elif isinstance(part, ToolCallPart):
            arguments = _arguments(part)
            if arguments is None:
                texts.append(f"{part.tool_name}({part.args})")
                continue
            function = {"name": part.tool_name, "arguments": json.dumps(arguments, ensure_ascii=False)}
            calls.append({"id": part.tool_call_id, "type": "function", "function": function})
    message: dict[str, Any] = {"role": "assistant", "content": "\n".join(texts) if texts else None}
    if calls:
        message["tool_calls"] = calls
    finish = "tool_calls" if calls else "length" if response.finish_reason == "length" else "stop"
    usage = response.usage
    return {
        "id": completion_id,
        "object": "chat.completion",
        "created": created,
        "model": response.model_name or model,
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": {
            "prompt_tokens": usage.input_tokens,
            "completion_tokens": usage.output_tokens,
            "total_tokens": usage.input_tokens + usage.output_tokens,
            "prompt_tokens_details": {"cached_tokens": usage.cache_read_tokens},
        },
    }
