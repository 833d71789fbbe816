"""Tool calls whose arguments do not fit the tool's schema, counted as refusals of the skill-manager session.

pydantic-ai validates a call's arguments before the tool runs and sends a failure back to the model as a retry,
so the tool (and its own refusal bookkeeping in `ace.skill_manager._calls`) never sees it. This capability records
each such call in `SMDeps.refusals`, so `SMResult.refusals` and the span's `ace.refused_count` count every retry
the model was sent, whichever layer refused the call.
"""

from __future__ import annotations

from typing import Any, cast, get_args

from pydantic import ValidationError
from pydantic_ai import ModelRetry, RunContext
from pydantic_ai.capabilities import AbstractCapability
from pydantic_ai.messages import ToolCallPart
from pydantic_ai.tools import ToolDefinition

from ace.skill_manager.deps import Refusal, SMDeps, ToolName

__all__ = ["ArgumentRefusals", "describe_argument_error"]

_TOOL_NAMES: frozenset[str] = frozenset(get_args(ToolName))
_ERRORS_SHOWN = 3


def describe_argument_error(error: ValidationError | ModelRetry) -> str:
    """The reason a call's arguments were refused, one `field: message` per error (the first few)."""
    if isinstance(error, ModelRetry):
        return error.message
    parts = [
        f"{'.'.join(str(p) for p in detail['loc']) or 'arguments'}: {detail['msg']}"
        for detail in error.errors(include_url=False)[:_ERRORS_SHOWN]
    ]
    more = error.error_count() - _ERRORS_SHOWN
    return "invalid arguments: " + "; ".join(parts) + (f" (and {more} more)" if more > 0 else "")


class ArgumentRefusals(AbstractCapability[SMDeps]):
    """Records every skill-manager tool call refused by argument validation in `ctx.deps.refusals`."""

    async def on_tool_validate_error(
        self,
        ctx: RunContext[SMDeps],
        *,
        call: ToolCallPart,
        tool_def: ToolDefinition,
        args: str | dict[str, Any],
        error: ValidationError | ModelRetry,
    ) -> dict[str, Any]:
        """Record the refusal, then let pydantic-ai send the retry as usual."""
        if call.tool_name in _TOOL_NAMES:
            tool = cast(ToolName, call.tool_name)  # checked against ToolName's members just above
            ctx.deps.refusals.append(Refusal(tool=tool, reason=describe_argument_error(error)))
        raise error
