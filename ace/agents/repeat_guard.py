"""`RepeatGuard`: refuse a tool call that repeats an earlier call of the same session (same tool, same arguments).

A small model at temperature 0 easily loops on one call (the recursive reflector on SmolLM2 made the same call 19
times in a row). The repeat is not executed: the model gets a refusal that tells it what to do instead, and the
session counts it. Only calls that ran and took effect count as made: a call that failed (sent back for a retry)
or that a tool reports as not applied (`{"ok": False, ...}`, e.g. a conflict with a concurrent session) may be
sent again as it was. Past `max_repeats` refusals the session ends (`RepeatedCallsError`), since a model that ignores
the refusal would only burn the rest of its budget.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from pydantic_ai import RunContext
from pydantic_ai.capabilities import AbstractCapability, WrapToolExecuteHandler
from pydantic_ai.messages import ToolCallPart
from pydantic_ai.tools import ToolDefinition

from ace.exceptions import RunError

__all__ = ["DEFAULT_MAX_REPEATS", "RepeatGuard", "RepeatedCallsError", "call_key"]

DEFAULT_MAX_REPEATS = 3
_SHOWN_ARGS_CHARS = 200


def _not_applied(result: Any) -> bool:
    """Whether a tool says the call did nothing (`ok` false), so repeating it as it was is legitimate."""
    ok = result.get("ok") if isinstance(result, dict) else getattr(result, "ok", None)
    return ok is False


class RepeatedCallsError(RunError):
    """The model kept repeating identical tool calls after being told not to; ends the session."""


def call_key(tool_name: str, args: dict[str, Any]) -> str:
    """The identity of a call: the tool and its arguments, key order and whitespace ignored."""
    return tool_name + json.dumps(args, sort_keys=True, default=str, separators=(",", ":"))


@dataclass
class RepeatGuard(AbstractCapability[Any]):
    """Per-session capability: executes each distinct call once, refuses and counts the repeats."""

    max_repeats: int = DEFAULT_MAX_REPEATS
    refused: int = 0
    _seen: set[str] = field(default_factory=set)

    async def wrap_tool_execute(
        self,
        ctx: RunContext[Any],
        *,
        call: ToolCallPart,
        tool_def: ToolDefinition,
        args: Any,
        handler: WrapToolExecuteHandler,
    ) -> Any:
        key = call_key(call.tool_name, call.args_as_dict())
        if key not in self._seen:
            result = await handler(args)
            if not _not_applied(result):
                self._seen.add(key)
            return result
        self.refused += 1
        if self.refused > self.max_repeats:
            raise RepeatedCallsError(
                f"{self.refused} repeated identical tool calls (last: {call.tool_name}); the session was ended"
            )
        shown = call.args_as_json_str()
        if len(shown) > _SHOWN_ARGS_CHARS:
            shown = shown[: _SHOWN_ARGS_CHARS - 3] + "..."
        return (
            f"Refused, not executed: {call.tool_name}({shown}) was already called in this session with exactly these "
            "arguments, and its result above still stands. Do not repeat it: use that result, call another tool or "
            "the same tool with different arguments, or give your final answer."
        )
