"""pydantic-ai message history -> OpenAI-style chat messages (the trace collection's format)."""

from __future__ import annotations

from collections.abc import Sequence

from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    RetryFeedbackPart,
    RetryPromptPart,
    SystemPromptPart,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)

__all__ = ["to_chat_messages"]


def _user_text(part: UserPromptPart) -> str:
    if isinstance(part.content, str):
        return part.content
    return "\n".join(item for item in part.content if isinstance(item, str))


def _request_messages(request: ModelRequest) -> list[dict[str, object]]:
    out: list[dict[str, object]] = []
    for part in request.parts:
        if isinstance(part, SystemPromptPart):
            out.append({"role": "system", "content": part.content})
        elif isinstance(part, UserPromptPart):
            out.append({"role": "user", "content": _user_text(part)})
        elif isinstance(part, ToolReturnPart):
            out.append(
                {
                    "role": "tool",
                    "tool_call_id": part.tool_call_id,
                    "name": part.tool_name,
                    "content": part.model_response_str(),
                }
            )
        elif isinstance(part, RetryPromptPart):  # pyright: ignore[reportDeprecated]
            if part.tool_name is None:
                out.append({"role": "user", "content": part.model_response()})
            else:
                out.append(
                    {
                        "role": "tool",
                        "tool_call_id": part.tool_call_id,
                        "name": part.tool_name,
                        "content": part.model_response(),
                    }
                )
        elif isinstance(part, RetryFeedbackPart):
            out.append({"role": "user", "content": part.model_response()})
    return out


def _response_message(response: ModelResponse) -> dict[str, object] | None:
    text = "".join(p.content for p in response.parts if isinstance(p, TextPart))
    calls = [
        {
            "id": p.tool_call_id,
            "type": "function",
            "function": {"name": p.tool_name, "arguments": p.args_as_json_str()},
        }
        for p in response.parts
        if isinstance(p, ToolCallPart)
    ]
    if not text and not calls:
        return None  # nothing the conversation format can hold (e.g. thinking only)
    message: dict[str, object] = {"role": "assistant", "content": text or None}
    if calls:
        message["tool_calls"] = calls
    return message


def to_chat_messages(history: Sequence[ModelMessage], *, system_prompt: str | None = None) -> list[dict[str, object]]:
    """The conversation as chat messages, starting with `system_prompt` (the agent's instructions) when given."""
    out: list[dict[str, object]] = [{"role": "system", "content": system_prompt}] if system_prompt else []
    for message in history:
        if isinstance(message, ModelRequest):
            out.extend(_request_messages(message))
        else:
            response = _response_message(message)
            if response is not None:
                out.append(response)
    return out
