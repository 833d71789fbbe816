"""Scripted roles that copy everything they read into the skillbook: the worst case for redaction tests."""

from __future__ import annotations

import functools
import re

from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel


def _prompt(messages: list[ModelMessage]) -> str:
    first = messages[0]
    assert isinstance(first, ModelRequest)
    return "\n".join(str(getattr(p, "content", "")) for p in first.parts)


def _reflect(messages: list[ModelMessage], info: AgentInfo, *, quote_chars: int) -> ModelResponse:
    """Reads every message in full, then returns a reflection that quotes the task and all it read."""
    if len(messages) == 1:
        count = int(re.search(r'<outline messages="(\d+)"', _prompt(messages)).group(1))  # type: ignore[union-attr]
        return ModelResponse(parts=[ToolCallPart("read_message", {"index": i}) for i in range(count)])
    read = [
        str(p.content)
        for m in messages
        if isinstance(m, ModelRequest)
        for p in m.parts
        if isinstance(p, ToolReturnPart)
    ]
    task = re.search(r"<task>\n(.*?)\n</task>", _prompt(messages), re.S)
    quoted = "\n".join(read)
    reflection = {
        "error_identification": f"The user said: {task.group(1) if task else ''}",
        "root_cause_analysis": quoted,
        "correct_approach": "Never echo credentials.",
        "key_insight": f"Quoted from the trace: {quoted[:quote_chars]}",
        "skill_tags": [],
    }
    [output] = info.output_tools
    return ModelResponse(parts=[ToolCallPart(output.name, reflection)])


def _manage(
    messages: list[ModelMessage],
    info: AgentInfo,
    *,
    quote_chars: int,
    tail_chars: int,
    issue: str,
    insight: str,
    keywords: list[str],
) -> ModelResponse:
    """Adds one skill whose issue and insight copy the reflection from its prompt, then stops."""
    if any(isinstance(m, ModelResponse) for m in messages):
        return ModelResponse(parts=[TextPart("Done.")])
    prompt = _prompt(messages)
    reflection = re.search(r"<reflection[^>]*>\n(.*?)\n</reflection>", prompt, re.S)
    text = reflection.group(1) if reflection else prompt
    args = {
        "section": "context",
        "issue": f"{issue}: {text[:quote_chars]}",
        "insight": f"{insight}: {text[-tail_chars:]}",
        "keywords": keywords,
    }
    return ModelResponse(parts=[ToolCallPart("add_skill", args)])


def copying_models(
    *, quote_chars: int, tail_chars: int, issue: str, insight: str, keywords: list[str]
) -> dict[str, FunctionModel]:
    """A reflector that quotes all it read (`quote_chars` of it in its key insight) and a skill manager that copies
    the reflection into a skill (`quote_chars` into the issue, the last `tail_chars` into the insight)."""
    reflect = functools.partial(_reflect, quote_chars=quote_chars)
    manage = functools.partial(
        _manage, quote_chars=quote_chars, tail_chars=tail_chars, issue=issue, insight=insight, keywords=keywords
    )
    return {
        "reflector": FunctionModel(reflect, model_name="copying-reflector"),
        "skill_manager": FunctionModel(manage, model_name="copying-sm"),
    }
