"""Mapping between pydantic-ai messages and OpenAI-style chat messages as `litellm.acompletion` takes and returns them.

Pure functions: nothing here imports litellm. Chat messages and tool schemas are JSON objects, hence `dict[str, Any]`.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, assert_never

from pydantic import BaseModel, ConfigDict
from pydantic_ai.exceptions import UserError
from pydantic_ai.messages import (
    BinaryContent,
    CachePoint,
    CompactionPart,
    FilePart,
    FinishReason,
    ImageUrl,
    ModelMessage,
    ModelRequest,
    ModelResponse,
    ModelResponsePart,
    NativeToolCallPart,
    NativeToolReturnPart,
    RetryPromptPart,
    SpeechPart,
    SystemPromptPart,
    TextContent,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolReturnPart,
    UserContent,
    UserPromptPart,
)
from pydantic_ai.models import ModelRequestParameters
from pydantic_ai.tools import ToolDefinition
from pydantic_ai.usage import RequestUsage

from ace.llm._local_format import without_local_hints

__all__ = [
    "CacheMarks",
    "ChatMessage",
    "WireResponse",
    "map_messages",
    "map_response",
    "map_tools",
    "map_usage",
]

ChatMessage = dict[str, Any]
"""One OpenAI-style chat message (a JSON object)."""

_CACHE_CONTROL: dict[str, str] = {"type": "ephemeral"}
_FINISH_REASONS: dict[str, FinishReason] = {
    "stop": "stop",
    "end_turn": "stop",
    "length": "length",
    "max_tokens": "length",
    "tool_calls": "tool_call",
    "function_call": "tool_call",
    "tool_use": "tool_call",
    "content_filter": "content_filter",
}


@dataclass(frozen=True)
class CacheMarks:
    """Where a request asks the provider to cache: the static prefix, the growing conversation, for how long."""

    prefix: bool = False
    """The tools and system prompt (a marker on the last leading system message)."""
    conversation: bool = False
    """Everything up to the newest message (a marker on it), so the next request of the session reads it back."""
    ttl: str | None = None
    """Anthropic's `'5m'` or `'1h'`; `None`: the provider's default."""

    def control(self) -> dict[str, str]:
        """The `cache_control` value of a marker."""
        return {**_CACHE_CONTROL, "ttl": self.ttl} if self.ttl else dict(_CACHE_CONTROL)


def map_messages(
    messages: Sequence[ModelMessage], instructions: Sequence[str], *, cache: CacheMarks | None = None
) -> list[ChatMessage]:
    """The chat messages for `messages`: instructions go right after the leading system prompts.

    `cache` puts `cache_control` markers on the last leading system message (the static prefix: tools and system
    prompt) and/or on the newest message (the conversation so far); Anthropic and Bedrock cache up to each
    marker, other providers ignore them.
    """
    chat: list[ChatMessage] = []
    for message in messages:
        if isinstance(message, ModelRequest):
            chat.extend(_map_request(message))
        elif isinstance(message, ModelResponse):
            if (assistant := _map_response_message(message)) is not None:
                chat.append(assistant)
        else:
            assert_never(message)
    leading = 0
    while leading < len(chat) and chat[leading]["role"] == "system":
        leading += 1
    chat[leading:leading] = [{"role": "system", "content": text} for text in instructions if text]
    leading += sum(1 for text in instructions if text)
    if cache is not None and cache.prefix and leading:
        _mark(chat[leading - 1], cache.control())
    if cache is not None and cache.conversation and len(chat) > leading:
        _mark(chat[-1], cache.control())
    return chat


def _mark(message: ChatMessage, control: dict[str, str]) -> None:
    """Put a `cache_control` marker on the message's last content block."""
    content = message["content"]
    blocks = [{"type": "text", "text": content}] if isinstance(content, str) else list(content)
    if blocks:
        blocks[-1] = {**blocks[-1], "cache_control": control}
        message["content"] = blocks


def _map_request(message: ModelRequest) -> Iterator[ChatMessage]:
    tool_files: list[UserContent] = []
    for part in message.parts:
        if isinstance(part, SystemPromptPart):
            yield {"role": "system", "content": part.content}
        elif isinstance(part, UserPromptPart):
            yield {"role": "user", "content": _map_user_content(part.content)}
        elif isinstance(part, ToolReturnPart):
            text, files = part.model_response_str_and_user_content()
            tool_files.extend(files)
            yield {"role": "tool", "tool_call_id": part.tool_call_id, "content": text}
        elif isinstance(part, RetryPromptPart):  # a legacy part, only in histories built by hand
            if part.tool_name is None:
                yield {"role": "user", "content": part.model_response()}
            else:
                yield {"role": "tool", "tool_call_id": part.tool_call_id, "content": part.model_response()}
        elif isinstance(part, CompactionPart):
            yield {"role": "user", "content": f"Summary of the conversation so far:\n{part.content}"}
        else:
            raise UserError(
                f"{type(part).__name__} cannot be sent through litellm: run the model through a pydantic-ai Agent, "
                "or call `model.prepare_messages(messages)` before `model.request(...)`."
            )
    if tool_files:
        yield {"role": "user", "content": _map_user_content(tool_files)}


def _map_user_content(content: str | Sequence[UserContent]) -> str | list[dict[str, Any]]:
    if isinstance(content, str):
        return content
    blocks: list[dict[str, Any]] = []
    for item in content:
        if isinstance(item, str):
            blocks.append({"type": "text", "text": item})
        elif isinstance(item, TextContent):
            blocks.append({"type": "text", "text": item.content})
        elif isinstance(item, ImageUrl):
            blocks.append({"type": "image_url", "image_url": {"url": item.url}})
        elif isinstance(item, BinaryContent) and item.is_image:
            blocks.append({"type": "image_url", "image_url": {"url": item.data_uri}})
        elif isinstance(item, CachePoint):
            if blocks:
                blocks[-1] = {**blocks[-1], "cache_control": _CACHE_CONTROL}
        else:
            raise UserError(
                f"{type(item).__name__} user content is not supported by the litellm model: send text or images."
            )
    return blocks


def _map_response_message(message: ModelResponse) -> ChatMessage | None:
    texts: list[str] = []
    tool_calls: list[dict[str, Any]] = []
    for part in message.parts:
        if isinstance(part, ToolCallPart):
            tool_calls.append(
                {
                    "id": part.tool_call_id,
                    "type": "function",
                    "function": {"name": part.tool_name, "arguments": part.args_as_json_str()},
                }
            )
        elif isinstance(part, TextPart):
            texts.append(part.content)
        elif isinstance(part, ThinkingPart | NativeToolCallPart | NativeToolReturnPart):
            # Reasoning and provider-side tool traces are the provider's own state: they are not replayed.
            continue
        elif isinstance(part, FilePart | SpeechPart | CompactionPart):
            raise UserError(f"{type(part).__name__} cannot be replayed through litellm chat messages.")
        else:
            assert_never(part)
    if not texts and not tool_calls:
        return None
    assistant: ChatMessage = {"role": "assistant", "content": "\n\n".join(texts) if texts else None}
    if tool_calls:
        assistant["tool_calls"] = tool_calls
    return assistant


def _map_tool(tool: ToolDefinition) -> dict[str, Any]:
    function: dict[str, Any] = {"name": tool.name, "parameters": without_local_hints(tool.parameters_json_schema)}
    if tool.description:
        function["description"] = tool.description
    return {"type": "function", "function": function}


def map_tools(params: ModelRequestParameters) -> tuple[list[dict[str, Any]], str | None]:
    """The offered function and output tools as OpenAI tool schemas, and the `tool_choice` that fits.

    `tool_choice` is `"required"` when the run cannot end with plain text (an output tool must be called), `"auto"`
    otherwise, and `None` when no tool is offered.
    """
    tools = [_map_tool(tool) for tool in params.declared_tool_defs.values()]
    if not tools:
        return [], None
    return tools, ("auto" if params.allow_text_output else "required")


class _Wire(BaseModel):
    model_config = ConfigDict(extra="ignore")


class _WireFunction(_Wire):
    name: str
    arguments: str | None = None


class _WireToolCall(_Wire):
    id: str | None = None
    function: _WireFunction


class _WireMessage(_Wire):
    content: str | None = None
    tool_calls: list[_WireToolCall] | None = None
    reasoning_content: str | None = None


class _WireChoice(_Wire):
    message: _WireMessage
    finish_reason: str | None = None


class _WirePromptDetails(_Wire):
    cached_tokens: int | None = None
    cache_creation_tokens: int | None = None


class _WireCompletionDetails(_Wire):
    reasoning_tokens: int | None = None


class _WireUsage(_Wire):
    prompt_tokens: int = 0
    completion_tokens: int = 0
    prompt_tokens_details: _WirePromptDetails | None = None
    completion_tokens_details: _WireCompletionDetails | None = None
    cache_creation_input_tokens: int | None = None
    cache_read_input_tokens: int | None = None


class WireResponse(_Wire):
    """The parts of a litellm `ModelResponse` (OpenAI chat completion shape) that ACE reads."""

    id: str | None = None
    model: str | None = None
    choices: list[_WireChoice] = []
    usage: _WireUsage | None = None


def map_usage(usage: _WireUsage | None) -> RequestUsage:
    """Token counts in pydantic-ai's convention: `input_tokens` includes cache reads and writes."""
    if usage is None:
        return RequestUsage(unmeasured_requests=1)
    details = usage.prompt_tokens_details or _WirePromptDetails()
    cache_read = usage.cache_read_input_tokens or details.cached_tokens or 0
    cache_write = usage.cache_creation_input_tokens or details.cache_creation_tokens or 0
    # litellm normalises providers to prompt tokens that include the cache; guard a provider that reports them apart.
    input_tokens = max(usage.prompt_tokens, cache_read + cache_write)
    reasoning = (usage.completion_tokens_details or _WireCompletionDetails()).reasoning_tokens or 0
    return RequestUsage(
        input_tokens=input_tokens,
        output_tokens=usage.completion_tokens,
        cache_read_tokens=cache_read,
        cache_write_tokens=cache_write,
        output_reasoning_tokens=reasoning,
    )


@dataclass(frozen=True, kw_only=True)
class MappedResponse:
    """The parts of one completion, with its usage, id, model name and finish reason."""

    parts: list[ModelResponsePart]
    usage: RequestUsage
    response_id: str | None
    model_name: str | None
    finish_reason: FinishReason | None
    raw_finish_reason: str | None


def map_response(wire: WireResponse) -> MappedResponse:
    """The pydantic-ai parts of the first choice: reasoning, text, then tool calls with their ids."""
    parts: list[ModelResponsePart] = []
    raw_finish: str | None = None
    if wire.choices:
        choice = wire.choices[0]
        raw_finish = choice.finish_reason
        message = choice.message
        if message.reasoning_content:
            parts.append(ThinkingPart(content=message.reasoning_content))
        if message.content:
            parts.append(TextPart(content=message.content))
        for call in message.tool_calls or []:
            arguments = call.function.arguments or "{}"
            tool_call = ToolCallPart(call.function.name, _normalise_arguments(arguments))
            if call.id:
                tool_call.tool_call_id = call.id
            parts.append(tool_call)
    return MappedResponse(
        parts=parts,
        usage=map_usage(wire.usage),
        response_id=wire.id or None,
        model_name=wire.model or None,
        finish_reason=_FINISH_REASONS.get(raw_finish) if raw_finish else None,
        raw_finish_reason=raw_finish,
    )


def _normalise_arguments(arguments: str) -> str:
    # Some providers send the arguments as a JSON string inside a JSON string; pydantic-ai wants the object.
    try:
        decoded = json.loads(arguments)
        if isinstance(decoded, str) and isinstance(json.loads(decoded), dict):
            return decoded
    except ValueError:
        pass
    return arguments
