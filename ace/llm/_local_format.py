"""What the embedded model reads and may write: the prompt, the trimmed conversation, and the decoding schema.

Every step of the embedded model is decoded under a JSON schema that is a `oneOf` over `{"tool": <name>,
"arguments": <that tool's parameters>}` (plus `{"answer": ...}` when the run may end with text or a JSON answer), so
its output is always a call of an offered tool. Nothing here imports llama_cpp.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, assert_never

from pydantic_ai.messages import (
    CompactionPart,
    FilePart,
    ModelMessage,
    ModelRequest,
    ModelResponse,
    ModelResponsePart,
    NativeToolCallPart,
    NativeToolReturnPart,
    RetryPromptPart,
    SpeechPart,
    SystemPromptPart,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models import ModelRequestParameters
from pydantic_ai.tools import ToolDefinition

__all__ = [
    "TEXT_HINT",
    "TEXT_START",
    "ChatTurn",
    "DecodingPlan",
    "fit_to_budget",
    "parse_output",
    "plan_decoding",
    "render_conversation",
    "text_pattern",
    "with_closing_note",
    "without_local_hints",
]

ChatTurn = dict[str, str]
"""One chat-template message: `{"role": "system" | "user" | "assistant", "content": ...}`."""

ANSWER_KEY = "answer"
DECODE_REQUIRED = "x-ace-decode-required"
"""JSON-schema key a tool sets on an optional text argument that the local model must nevertheless write."""
TEXT_HINT = "x-ace-text"
"""JSON-schema key that says what a string holds, for the local model's decoder: `"prose"` (sentences) or `"label"`
(one keyword). The embedded model then decodes it under a pattern: words and no digits, or one snake_case label,
because a 135M model otherwise copies ids, numbers and JSON fragments of its prompt into every text field. Hosted
models never see the key (`_litellm_mapping` drops it)."""
TEXT_START = "x-ace-text-start"
"""JSON-schema key beside `TEXT_HINT: "prose"`: the words the decoded text must begin with (`"The agent"`), so that a
small model writes about the agent instead of copying the first sentence of its prompt."""
LOCAL_HINTS = (DECODE_REQUIRED, TEXT_HINT, TEXT_START)
"""Every schema key that only the local decoder reads."""
MAX_STRING_CHARS = 300
"""Bound on every string the grammar lets through, so that a call always closes within the token budget."""
MAX_ARRAY_ITEMS = 5


@dataclass(frozen=True, kw_only=True)
class DecodingPlan:
    """How one request is decoded: under `schema` (a JSON schema), or free text when `schema` is `None`."""

    schema: dict[str, Any] | None
    tool_names: frozenset[str]
    answer_is_json: bool
    """Whether an `answer` is a JSON value (native / prompted structured output) rather than a string."""
    tools_prompt: str
    """How to answer, appended to the system prompt."""
    direct_tool: str | None = None
    """The one tool whose arguments are decoded as the whole answer (no `{"tool": ...}` wrapper), or `None`."""


def plan_decoding(
    params: ModelRequestParameters,
    *,
    require_tool: bool = False,
    short_text: bool = False,
    max_string_chars: int = MAX_STRING_CHARS,
) -> DecodingPlan:
    """The decoding schema and the tool instructions for the offered tools and output mode.

    With `require_tool`, a text answer is left out of the schema whenever tools are offered, so the step must call
    one of them (a small model otherwise tends to answer in prose before doing anything). With `short_text`, a text
    answer with no tool to call (an agent's closing summary once its tools are withdrawn) is one bounded string, not
    free text up to the token limit. Every string the schema lets through is at most `max_string_chars` long.
    """
    tools = list(params.declared_tool_defs.values())
    output_object = params.output_object if params.output_mode in ("native", "prompted") else None
    answer_schema: dict[str, Any] | None = None
    if output_object is not None:
        answer_schema = copy.deepcopy(output_object.json_schema)
    elif params.allow_text_output:
        answer_schema = {"type": "string"}
    if not tools:
        if output_object is None and short_text and params.allow_text_output:
            answer = _object({ANSWER_KEY: {"type": "string", "pattern": text_pattern("prose", max_string_chars)}})
            return DecodingPlan(
                schema=answer,
                tool_names=frozenset(),
                answer_is_json=False,
                tools_prompt='Answer with {"answer": <a one-sentence summary of what you did>}.',
            )
        if output_object is None:
            return DecodingPlan(schema=None, tool_names=frozenset(), answer_is_json=False, tools_prompt="")
        answer_defs: dict[str, Any] = {}
        direct: dict[str, Any] = _bounded(_hoist_defs(answer_schema or {}, "answer", answer_defs), max_string_chars)
        if answer_defs:
            direct["$defs"] = {name: _bounded(value, max_string_chars) for name, value in answer_defs.items()}
        return DecodingPlan(
            schema=direct, tool_names=frozenset(), answer_is_json=True, tools_prompt="Reply with one JSON object."
        )
    if len(tools) == 1 and not params.function_tools and not params.allow_text_output:
        return _direct_plan(tools[0], max_string_chars)
    defs: dict[str, Any] = {}
    variants: list[dict[str, Any]] = []
    for tool in tools:
        arguments = _tool_arguments(tool, defs, max_string_chars)
        variants.append(_object({"tool": {"const": tool.name}, "arguments": arguments}))
    if require_tool:
        answer_schema = None
    if answer_schema is not None:
        variants.append(_object({ANSWER_KEY: _bounded(_hoist_defs(answer_schema, "answer", defs), max_string_chars)}))
    schema: dict[str, Any] = variants[0] if len(variants) == 1 else {"oneOf": variants}
    if defs:
        schema = {**schema, "$defs": {name: _bounded(value, max_string_chars) for name, value in defs.items()}}
    return DecodingPlan(
        schema=schema,
        tool_names=frozenset(tool.name for tool in tools),
        answer_is_json=output_object is not None,
        tools_prompt=_tools_prompt(tools, answer=answer_schema is not None),
    )


def _direct_plan(tool: ToolDefinition, max_string_chars: int) -> DecodingPlan:
    """A lone output tool (a structured answer such as a reflection): its arguments are decoded as the whole reply.

    The `{"tool": ..., "arguments": ...}` wrapper would cost tokens, and a small model writes worse text nested in it.
    """
    defs: dict[str, Any] = {}
    schema = _tool_arguments(tool, defs, max_string_chars)
    if defs:
        schema["$defs"] = {name: _bounded(value, max_string_chars) for name, value in defs.items()}
    description = _short_description(tool)
    prompt = f"Reply with one JSON object ({_signature(tool.parameters_json_schema)})" + (
        f": {description}" if description else "."
    )
    return DecodingPlan(
        schema=schema,
        tool_names=frozenset({tool.name}),
        answer_is_json=True,
        tools_prompt=prompt,
        direct_tool=tool.name,
    )


def _tool_arguments(tool: ToolDefinition, defs: dict[str, Any], max_string_chars: int) -> dict[str, Any]:
    """The decoding schema of `tool`'s arguments; its `$defs` move to `defs`."""
    arguments: dict[str, Any] = _bounded(
        _hoist_defs(_require_text(tool.parameters_json_schema), tool.name, defs), max_string_chars
    )
    return arguments


def _short_description(tool: ToolDefinition) -> str:
    """The first paragraph of the tool's description, on one line."""
    return (tool.description or "").strip().split("\n\n")[0].replace("\n", " ")


def _require_text(schema: dict[str, Any]) -> dict[str, Any]:
    """Decode optional text arguments marked `DECODE_REQUIRED` (`str | None = None`) as required strings.

    A small model leaves out every optional argument, including one a call needs in practice (a context skill's
    `insight`); a tool marks such an argument with `Field(json_schema_extra={DECODE_REQUIRED: True})`. Other
    optional arguments (filters and the like) stay optional. The marker is dropped from the decoding schema.
    """
    properties = schema.get("properties")
    if not isinstance(properties, dict):
        return schema
    required = list(schema.get("required", []))
    changed: dict[str, Any] = {}
    for name, prop in properties.items():
        if not isinstance(prop, dict) or DECODE_REQUIRED not in prop:
            continue
        options = prop.get("anyOf")
        clean = {k: v for k, v in prop.items() if k != DECODE_REQUIRED}
        if prop[DECODE_REQUIRED] is True and isinstance(options, list) and {"type": "string"} in options:
            clean = {k: v for k, v in clean.items() if k not in ("anyOf", "default")} | {"type": "string"}
            if name not in required:
                required.append(name)
        changed[name] = clean
    if not changed:
        return schema
    return {**schema, "properties": {**properties, **changed}, "required": required}


def _object(properties: dict[str, Any]) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": list(properties), "additionalProperties": False}


def _hoist_defs(schema: dict[str, Any], prefix: str, defs: dict[str, Any]) -> dict[str, Any]:
    """A copy of `schema` whose local `$defs` move to `defs` as `<prefix>__<name>`, with every `$ref` rewritten."""
    schema = copy.deepcopy(schema)
    local = schema.pop("$defs", None) or schema.pop("definitions", None) or {}

    def rewrite(node: Any) -> Any:
        if isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str) and ref.startswith(("#/$defs/", "#/definitions/")):
                node = {**node, "$ref": f"#/$defs/{prefix}__{ref.rsplit('/', 1)[1]}"}
            return {key: rewrite(value) for key, value in node.items()}
        if isinstance(node, list):
            return [rewrite(item) for item in node]
        return node

    for name, value in local.items():
        defs[f"{prefix}__{name}"] = rewrite(value)
    rewritten: dict[str, Any] = rewrite(schema)
    return rewritten


def _bounded(node: Any, max_chars: int = MAX_STRING_CHARS) -> Any:
    """A copy with every string and array given a length bound (for decoding only; validation keeps the original)."""
    if isinstance(node, list):
        return [_bounded(item, max_chars) for item in node]
    if not isinstance(node, dict):
        return node
    hint = node.get(TEXT_HINT)
    if isinstance(hint, str) and isinstance(node.get("anyOf"), list):  # `str | None`: the hint is the string's
        node = {**node, "anyOf": [_with_hint(option, hint) for option in node["anyOf"]]}
    bounded = {key: _bounded(value, max_chars) for key, value in node.items() if key not in (TEXT_HINT, TEXT_START)}
    kinds = bounded.get("type")
    kinds = kinds if isinstance(kinds, list) else [kinds]
    if "string" in kinds and isinstance(hint, str) and "enum" not in bounded and "const" not in bounded:
        bounded.pop("maxLength", None)  # the pattern bounds the length: llguidance takes one or the other
        bounded.pop("minLength", None)
        start = node.get(TEXT_START)
        bounded["pattern"] = text_pattern(hint, max_chars, start=start if isinstance(start, str) else None)
    elif "string" in kinds and not {"enum", "const", "format", "pattern"} & bounded.keys():
        bounded["maxLength"] = min(int(bounded.get("maxLength", max_chars)), max_chars)
    if "array" in kinds:
        bounded["maxItems"] = min(int(bounded.get("maxItems", MAX_ARRAY_ITEMS)), MAX_ARRAY_ITEMS)
    return bounded


_WORD = r"(?:[a-z]{1,14}(?:_[a-z]{2,14}){0,3}|[A-Z][a-z]{1,14})(?:'[a-z]{1,2})?"
"""One word of prose: lower case (a tool name such as update_reservation_flights included) or capitalised, no digits
(ids, amounts and dates of a trace are not lessons), no run of single letters or underscores."""
_CHARS_PER_WORD = 7


def text_pattern(hint: str, max_chars: int, *, start: str | None = None) -> str:
    """The decoding pattern of a `TEXT_HINT` string of at most about `max_chars` characters (prose: beginning with
    the words `start` when given)."""
    if hint == "label":
        return "^[a-z]{2,15}(?:_[a-z]{2,15}){0,2}$"
    if hint == "prose":
        words = max(4, max_chars // _CHARS_PER_WORD)
        head = re.escape(start) if start else "[A-Z][a-z]{0,15}"
        return rf"^{head}(?:,? {_WORD}){{3,{words - 1}}}\.$"
    raise ValueError(f"{TEXT_HINT}={hint!r} is not a text kind: use 'prose' or 'label'")


def without_local_hints(node: Any) -> Any:
    """A copy of a JSON schema without the keys only the local decoder reads (strict providers refuse unknown ones)."""
    if isinstance(node, list):
        return [without_local_hints(item) for item in node]
    if isinstance(node, dict):
        return {key: without_local_hints(value) for key, value in node.items() if key not in LOCAL_HINTS}
    return node


def _with_hint(option: Any, hint: str) -> Any:
    return {**option, TEXT_HINT: hint} if isinstance(option, dict) and option.get("type") == "string" else option


def _tools_prompt(tools: Sequence[ToolDefinition], *, answer: bool) -> str:
    lines = ['Answer with exactly one JSON object {"tool": <name>, "arguments": {...}} calling one of these tools:']
    for tool in tools:
        description = _short_description(tool)
        lines.append(f"- {tool.name}({_signature(tool.parameters_json_schema)}): {description}".rstrip(": "))
    if answer:
        lines.append('Or, when you are done, answer with {"answer": <your answer>}.')
    return "\n".join(lines)


_SHOWN_ENUM_CHARS = 10
"""Enumerations of short literals (`"context"|"harness"`, `-1|0|1`) are spelled out in the tool list; long ones (skill
ids, which the prompt lists anyway) are not, so the tool list, and the KV cache over it, stays the same from one
session to the next. The grammar enforces the values either way."""


def _signature(schema: dict[str, Any]) -> str:
    properties: dict[str, Any] = schema.get("properties", {})
    required = set(schema.get("required", []))
    parts = []
    for name, spec in properties.items():
        kind = spec.get("type", "any") if isinstance(spec, dict) else "any"
        values = spec.get("enum") if isinstance(spec, dict) else None
        if values and all(len(json.dumps(value)) <= _SHOWN_ENUM_CHARS for value in values):
            kind = "|".join(json.dumps(value) for value in values)
        parts.append(f"{name}: {kind}" + ("" if name in required else " = optional"))
    return ", ".join(parts)


def render_conversation(messages: Sequence[ModelMessage], system: str) -> list[ChatTurn]:
    """The conversation as chat-template turns; tool calls are shown as the JSON the model itself writes."""
    turns: list[ChatTurn] = [{"role": "system", "content": system}] if system else []
    for message in messages:
        if isinstance(message, ModelRequest):
            for part in message.parts:
                if isinstance(part, SystemPromptPart):
                    turns.append({"role": "system", "content": part.content})
                elif isinstance(part, UserPromptPart):
                    content = part.content if isinstance(part.content, str) else _text_of(part.content)
                    turns.append({"role": "user", "content": content})
                elif isinstance(part, ToolReturnPart):
                    if part.outcome == "retried":
                        text = f"Error from {part.tool_name}: {part.model_response_str()}\nFix the call and try again."
                    else:
                        text = f"Result of {part.tool_name}: {part.model_response_str()}"
                    turns.append({"role": "user", "content": text})
                elif isinstance(part, RetryPromptPart):
                    turns.append({"role": "user", "content": part.model_response()})
                elif isinstance(part, CompactionPart):
                    turns.append({"role": "user", "content": f"Summary of the conversation so far:\n{part.content}"})
                else:
                    raise ValueError(f"{type(part).__name__} cannot be rendered for the embedded model")
        elif isinstance(message, ModelResponse):
            content = _render_response(message.parts)
            if content:
                turns.append({"role": "assistant", "content": content})
        else:
            assert_never(message)
    return _merge_system(turns)


def with_closing_note(turns: list[ChatTurn], note: str) -> list[ChatTurn]:
    """`turns` with `note` (how to answer, which tools) after the last user turn, not in the system prompt.

    The offered tools change within a session (a required first call, tools withdrawn at the end), and llama.cpp
    reuses the KV cache only up to the first token that changed: a note at the end leaves the system prompt and the
    conversation so far cached from one step to the next.
    """
    if not note:
        return turns
    if turns and turns[-1]["role"] == "user":
        return [*turns[:-1], {"role": "user", "content": f"{turns[-1]['content']}\n\n{note}"}]
    return [*turns, {"role": "user", "content": note}]


def _text_of(content: Sequence[object]) -> str:
    texts = [item if isinstance(item, str) else getattr(item, "content", None) for item in content]
    return "\n".join(text for text in texts if isinstance(text, str))


def _render_response(parts: Sequence[ModelResponsePart]) -> str:
    rendered: list[str] = []
    for part in parts:
        if isinstance(part, ToolCallPart):
            rendered.append(json.dumps({"tool": part.tool_name, "arguments": part.args_as_dict()}))
        elif isinstance(part, TextPart):
            rendered.append(part.content)
        elif isinstance(part, ThinkingPart | NativeToolCallPart | NativeToolReturnPart | FilePart | SpeechPart):
            continue
        elif isinstance(part, CompactionPart):
            rendered.append(f"Summary of the conversation so far:\n{part.content}")
        else:
            assert_never(part)
    return "\n".join(rendered)


def _merge_system(turns: list[ChatTurn]) -> list[ChatTurn]:
    """One leading system turn (small chat templates expect at most one)."""
    system = [turn["content"] for turn in turns if turn["role"] == "system"]
    rest = [turn for turn in turns if turn["role"] != "system"]
    return ([{"role": "system", "content": "\n\n".join(system)}] if system else []) + rest


def fit_to_budget(turns: list[ChatTurn], budget: int, count_tokens: Callable[[str], int]) -> list[ChatTurn]:
    """The turns that fit `budget` tokens: the system turn and first user turn stay, the oldest others go first.

    If the kept turns alone are too long, the longest content is cut (its head and its tail are kept).
    """
    overhead = 8  # role markers of the chat template, per turn
    costs = [count_tokens(turn["content"]) + overhead for turn in turns]
    if sum(costs) <= budget:
        return turns
    pinned = {i for i, turn in enumerate(turns) if turn["role"] == "system"}
    first_user = next((i for i, turn in enumerate(turns) if turn["role"] == "user"), None)
    if first_user is not None:
        pinned.add(first_user)
    kept = list(range(len(turns)))
    for index in range(len(turns)):
        if sum(costs[i] for i in kept) <= budget:
            break
        if index not in pinned and index != len(turns) - 1:
            kept.remove(index)
    result = [dict(turns[i]) for i in kept]
    while sum(count_tokens(turn["content"]) + overhead for turn in result) > budget:
        longest = max(result, key=lambda turn: len(turn["content"]))
        text = longest["content"]
        if len(text) < 64:
            break
        keep = len(text) * 3 // 8
        longest["content"] = f"{text[:keep]}\n[...]\n{text[-keep:]}"
    return result


def parse_output(text: str, plan: DecodingPlan) -> ModelResponsePart:
    """The part the decoded `text` stands for: a `ToolCallPart`, or a `TextPart` answer (or unparsable text)."""
    if plan.schema is None:
        return TextPart(content=text)
    try:
        decoded = json.loads(text, strict=False)  # llama.cpp's JSON grammar lets raw newlines into strings
    except ValueError:
        return TextPart(content=text)  # cut off by max_tokens: pydantic-ai asks the model to try again
    if plan.direct_tool is not None:
        return ToolCallPart(plan.direct_tool, decoded) if isinstance(decoded, dict) else TextPart(content=text)
    if isinstance(decoded, dict) and decoded.get("tool") in plan.tool_names:
        arguments = decoded.get("arguments")
        return ToolCallPart(str(decoded["tool"]), arguments if isinstance(arguments, dict) else {})
    if isinstance(decoded, dict) and ANSWER_KEY in decoded and (plan.tool_names or not plan.answer_is_json):
        answer = decoded[ANSWER_KEY]
        return TextPart(content=json.dumps(answer) if plan.answer_is_json or not isinstance(answer, str) else answer)
    return TextPart(content=text)
