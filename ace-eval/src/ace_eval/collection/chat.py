"""OpenAI-style chat messages: the shapes a trace's `messages` must have, checked with readable field paths."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from typing import Annotated, Literal, TypeAlias

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError, field_validator, model_validator
from pydantic_core import ErrorDetails, PydanticCustomError

from ace import json_safe
from ace.exceptions import UserError

__all__ = [
    "ROLES",
    "UNPARSED_ARGUMENTS",
    "AssistantMessage",
    "ChatMessage",
    "ContentPart",
    "MessageShapeError",
    "SystemMessage",
    "ToolCall",
    "ToolCallFunction",
    "ToolMessage",
    "UserMessage",
    "check_json_value",
    "describe_error",
    "field_path",
    "parse_messages",
    "tool_arguments",
]

ROLES = ("system", "user", "assistant", "tool")

# Extra keys on a message (`refusal`, `reasoning_content`, provider fields...) are kept as they are: exports from
# real providers carry them, and a trace must round-trip unchanged. Tool calls have a fixed shape.
_MESSAGE_CONFIG = ConfigDict(strict=True, extra="allow", frozen=True)
_FIXED_CONFIG = ConfigDict(strict=True, extra="forbid", frozen=True)


class MessageShapeError(UserError, ValueError):
    """A message list that is not a valid conversation; `field` is the path, e.g. `messages[3].tool_call_id`."""

    def __init__(self, field: str, reason: str) -> None:
        self.field = field
        self.reason = reason
        super().__init__(f"field '{field}': {reason}")


class ContentPart(BaseModel):
    """One part of a multi-part content (`{"type": "text", "text": ...}`, an image...)."""

    model_config = _MESSAGE_CONFIG
    type: str = Field(min_length=1)


Content: TypeAlias = str | list[ContentPart]


class ToolCallFunction(BaseModel):
    """The function a tool call names, with its arguments as a JSON object in a string."""

    model_config = _FIXED_CONFIG
    name: str = Field(min_length=1)
    arguments: str
    """JSON text of an object, e.g. `'{"user_id": "mia_li_3668"}'`."""

    @field_validator("arguments")
    @classmethod
    def _arguments_are_a_json_object(cls, value: str) -> str:
        try:
            parsed = json_safe.loads(value)
        except json_safe.JsonInputError as e:
            raise PydanticCustomError("json_arguments", "not valid JSON ({error})", {"error": str(e)}) from None
        if not isinstance(parsed, dict):
            raise PydanticCustomError(
                "json_arguments", "must encode a JSON object, got {kind}", {"kind": type(parsed).__name__}
            )
        return value


class ToolCall(BaseModel):
    """`{"id", "type": "function", "function": {"name", "arguments"}}`."""

    model_config = _FIXED_CONFIG
    id: str = Field(min_length=1)
    type: Literal["function"]
    function: ToolCallFunction


class SystemMessage(BaseModel):
    """The system prompt (for tau-bench, the airline policy)."""

    model_config = _MESSAGE_CONFIG
    role: Literal["system"]
    content: Content
    name: str | None = None


class UserMessage(BaseModel):
    """A user turn."""

    model_config = _MESSAGE_CONFIG
    role: Literal["user"]
    content: Content
    name: str | None = None


class AssistantMessage(BaseModel):
    """An assistant turn: text, tool calls, or both."""

    model_config = _MESSAGE_CONFIG
    role: Literal["assistant"]
    content: Content | None = None
    tool_calls: list[ToolCall] | None = None
    name: str | None = None

    @model_validator(mode="after")
    def _says_or_calls_something(self) -> AssistantMessage:
        if self.content is None and not self.tool_calls:
            raise PydanticCustomError("empty_assistant", "an assistant message needs `content` or `tool_calls`")
        return self


class ToolMessage(BaseModel):
    """The result of one tool call, answering the assistant's call `tool_call_id`."""

    model_config = _MESSAGE_CONFIG
    role: Literal["tool"]
    content: Content
    tool_call_id: str = Field(min_length=1)
    name: str | None = None


ChatMessage: TypeAlias = Annotated[
    SystemMessage | UserMessage | AssistantMessage | ToolMessage, Field(discriminator="role")
]
_MESSAGES: TypeAdapter[list[ChatMessage]] = TypeAdapter(list[ChatMessage])


UNPARSED_ARGUMENTS = "_unparsed_arguments"


def tool_arguments(raw: str | Mapping[str, object] | None) -> str:
    """Tool call `arguments` as the format wants them: a JSON object in a string.

    A dict is encoded; a string that is already a JSON object is kept; anything else (a model's malformed
    arguments) is kept verbatim under `_unparsed_arguments`, so the mistake stays visible to a reflector.
    """
    if raw is None:
        return "{}"
    if isinstance(raw, Mapping):
        return json.dumps(dict(raw), ensure_ascii=False)
    try:
        parsed = json_safe.loads(raw)
    except json_safe.JsonInputError:
        parsed = None
    return raw if isinstance(parsed, dict) else json.dumps({UNPARSED_ARGUMENTS: raw}, ensure_ascii=False)


def field_path(loc: Sequence[int | str], *, prefix: str = "") -> str:
    """`('messages', 3, 'tool_calls', 0, 'function')` -> `messages[3].tool_calls[0].function`."""
    out = prefix
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else part
    return out


def describe_error(error: ErrorDetails) -> str:
    """A short, lower-case reason for one pydantic error, with the offending value when it helps."""
    kind = error["type"]
    if kind == "missing":
        return "missing (required)"
    if kind == "extra_forbidden":
        return "unknown field (remove it, or check its spelling)"
    if kind in ("union_tag_invalid", "union_tag_not_found"):
        got = f", got {(error.get('ctx') or {}).get('tag')!r:.60}" if kind == "union_tag_invalid" else ""
        return f"must be one of {', '.join(repr(r) for r in ROLES)}{got}"
    message = error["msg"]
    message = message[0].lower() + message[1:] if message else message
    if kind.endswith("_type") or kind in ("literal_error", "string_too_short", "finite_number"):
        message += f", got {error['input']!r:.60}"
    return message


_CONTENT_STR, _CONTENT_LIST = "str", "list[ContentPart]"


def _message_path(index: int, loc: tuple[int | str, ...]) -> tuple[int | str, ...]:
    # pydantic puts the discriminator's value (the role) and the union member in the location: drop them.
    rest = loc[1:] if loc and loc[0] in ROLES else loc
    return (index, *(part for part in rest if part not in (_CONTENT_STR, _CONTENT_LIST)))


def _first_error(errors: list[ErrorDetails]) -> tuple[ErrorDetails, str | None]:
    """The error to report, and a reason replacing pydantic's when a content is neither text nor parts."""
    first = errors[0]
    if _CONTENT_STR not in first["loc"]:
        return first, None
    if isinstance(first["input"], list):
        # A list content failed as parts: the parts' error is the useful one.
        same = first["loc"][: first["loc"].index(_CONTENT_STR)]
        for error in errors:
            if error["loc"][: len(same) + 1] == (*same, _CONTENT_LIST):
                return error, None
    return first, f"must be a string or a list of content parts, got {first['input']!r:.60}"


def parse_messages(messages: Sequence[object], *, name: str = "messages") -> list[ChatMessage]:
    """Validate a conversation; raise `MessageShapeError` naming the first bad field.

    Besides each message's shape: the list is not empty and every tool message answers a tool call
    made by an earlier assistant message.
    """
    if not messages:
        raise MessageShapeError(name, "empty: a trace needs at least one message")
    for i, raw in enumerate(messages):
        if not isinstance(raw, dict):
            raise MessageShapeError(f"{name}[{i}]", f"must be a JSON object, got {type(raw).__name__}")
        if "role" not in raw:
            raise MessageShapeError(f"{name}[{i}].role", f"missing; must be one of {', '.join(ROLES)}")
    try:
        parsed = _MESSAGES.validate_python(list(messages))
    except ValidationError as e:
        first, reason = _first_error(e.errors())
        loc = first["loc"]
        index = loc[0] if loc and isinstance(loc[0], int) else 0
        path = _message_path(index, tuple(loc[1:]))
        if first["type"] == "union_tag_invalid":
            raise MessageShapeError(f"{name}[{index}].role", describe_error(first)) from None
        raise MessageShapeError(field_path(path, prefix=name), reason or describe_error(first)) from None
    called: set[str] = set()
    for i, message in enumerate(parsed):
        if isinstance(message, AssistantMessage):
            called.update(call.id for call in message.tool_calls or ())
        elif isinstance(message, ToolMessage) and message.tool_call_id not in called:
            raise MessageShapeError(
                f"{name}[{i}].tool_call_id",
                f"{message.tool_call_id!r} answers no tool call of an earlier assistant message",
            )
    check_json_value(list(messages), name)
    return parsed


def check_json_value(value: object, path: str) -> None:
    """Raise `MessageShapeError` unless `value` is plain JSON (dict with str keys, list, str, number, bool, null)."""
    if value is None or isinstance(value, str | bool | int):
        return
    if isinstance(value, float):
        if not math.isfinite(value):
            raise MessageShapeError(path, f"{value} is not a JSON number")
        return
    if isinstance(value, list):
        for i, item in enumerate(value):
            check_json_value(item, f"{path}[{i}]")
        return
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                raise MessageShapeError(path, f"key {key!r} is not a string")
            check_json_value(item, f"{path}.{key}")
        return
    raise MessageShapeError(path, f"{type(value).__name__} is not a JSON value (use str, number, bool, list, dict)")
