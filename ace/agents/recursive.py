"""`RecursiveAgent`: one budgeted, traced, self-compacting pydantic-ai tool-calling session.

A session is a single `agent.iter` run bounded by request / tool-call / token budgets (pydantic-ai
`UsageLimits`). When the message history grows past `SessionBudget.max_history_tokens`, the session drops the
oldest tool-call/return pairs, keeping the first request (task prompt) and the latest messages, and leaves the
model a one-line digest of every dropped call. Each session is one span `"{span_label}.session"`.

The session compacts between the steps of its `agent.iter` run, before each model request, rather than through a
history-processor capability: pydantic-ai runs every hook of every capability on each step, which cost a 3-call
session ~0.25 ms (`benchmarks/pipeline_overhead.py`), and the agent stays a plain one outside a session.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeGuard, TypeVar

from pydantic_ai import Agent
from pydantic_ai.capabilities import AbstractCapability
from pydantic_ai.exceptions import UnexpectedModelBehavior, UsageLimitExceeded
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    RetryPromptPart,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models import Model
from pydantic_ai.output import OutputSpec
from pydantic_ai.settings import ModelSettings
from pydantic_ai.tools import Tool
from pydantic_ai.usage import RunUsage, UsageLimits

from ace.agents.repeat_guard import DEFAULT_MAX_REPEATS, RepeatedCallsError, RepeatGuard
from ace.observability import AttributeInput, ace_span

__all__ = [
    "COMPACTION_NOTE_PREFIX",
    "RecursiveAgent",
    "SessionBudget",
    "SessionResult",
    "compact_history",
    "estimate_tokens",
    "run_agent_with_compaction",
]

DepsT = TypeVar("DepsT")
OutputT = TypeVar("OutputT")

COMPACTION_NOTE_PREFIX = "[Compacted history]"
_CHARS_PER_TOKEN = 4
_DIGEST_FIELD_CHARS = 160
_DIGEST_MAX_LINES = 60


@dataclass(frozen=True, kw_only=True)
class SessionBudget:
    """Limits of one session: pydantic-ai usage limits, plus when and how far to compact the history."""

    request_limit: int = 25
    """Model requests per session."""
    tool_calls_limit: int | None = 50
    """Successful tool calls per session (`None`: unlimited)."""
    total_tokens_limit: int | None = None
    """Input + output tokens over the whole session (`None`: unlimited)."""
    max_history_tokens: int = 12_000
    """Estimated size of the history above which old tool-call/return pairs are compacted."""
    keep_last_messages: int = 6
    """Messages at the end of the history that compaction never touches (at least 2)."""
    max_repeated_calls: int = DEFAULT_MAX_REPEATS
    """Repeats of an earlier call (same tool, same arguments) refused before the session is ended (`loop: ...`)."""

    def __post_init__(self) -> None:
        if self.max_repeated_calls < 0:
            raise ValueError(f"SessionBudget.max_repeated_calls must be 0 or more, got {self.max_repeated_calls}")
        for name in ("request_limit", "tool_calls_limit", "total_tokens_limit", "max_history_tokens"):
            value = getattr(self, name)
            if value is not None and value < 1:
                raise ValueError(f"SessionBudget.{name} must be a positive integer or None, got {value!r}")
        if self.keep_last_messages < 2:
            raise ValueError(
                f"SessionBudget.keep_last_messages must be at least 2 (the last call and its return), "
                f"got {self.keep_last_messages}"
            )

    def usage_limits(self) -> UsageLimits:
        """The pydantic-ai limits this budget stands for."""
        return UsageLimits(
            request_limit=self.request_limit,
            tool_calls_limit=self.tool_calls_limit,
            total_tokens_limit=self.total_tokens_limit,
        )

    def span_attributes(self) -> dict[str, AttributeInput]:
        """The budget as `ace.*` span attributes."""
        return {
            "ace.request_limit": self.request_limit,
            "ace.tool_calls_limit": self.tool_calls_limit,
            "ace.total_tokens_limit": self.total_tokens_limit,
            "ace.max_history_tokens": self.max_history_tokens,
            "ace.max_repeated_calls": self.max_repeated_calls,
        }


@dataclass(frozen=True, kw_only=True)
class SessionResult(Generic[OutputT]):
    """How a session ended: its output (when it finished), usage, history and compaction counts."""

    output: OutputT | None
    """The agent's final output; `None` when the session stopped early."""
    completed: bool
    """`False` when a budget ran out or the model misbehaved past its retries."""
    stop_reason: str | None
    """Why the session stopped early (`budget: ...`, `model: ...` or `loop: ...`), else `None`."""
    usage: RunUsage
    messages: list[ModelMessage]
    """The final (possibly compacted) message history."""
    compactions: int = 0
    messages_dropped: int = 0
    repeated_calls: int = 0
    """Tool calls refused (not executed) because they repeated an earlier call of the session exactly."""


# ------------------------------------------------------------------------------------------- compaction
def estimate_tokens(messages: Sequence[ModelMessage]) -> int:
    """A cheap size estimate of a history (about 4 characters a token), good enough to trigger compaction."""
    chars = 0
    for message in messages:
        for part in message.parts:
            chars += len(_part_text(part))
    return chars // _CHARS_PER_TOKEN


def compact_history(messages: list[ModelMessage], *, max_tokens: int, keep_last: int) -> tuple[list[ModelMessage], int]:
    """Drop the oldest tool-call/return pairs of an over-budget history; return it and how many messages went.

    The first request (the task) and the last `keep_last` messages stay (the kept tail always starts with a
    model response, so every call keeps its return). The first request gains a note listing each dropped call
    and its outcome, merged with the note of an earlier compaction.
    """
    if len(messages) < 3 or not isinstance(messages[0], ModelRequest):
        return messages, 0
    start = max(1, len(messages) - keep_last)
    while start > 1 and not isinstance(messages[start], ModelResponse):
        start -= 1
    # Nothing droppable (a short history) is decided before the size estimate, which serialises every tool result.
    if start <= 1 or estimate_tokens(messages) <= max_tokens:
        return messages, 0
    head, dropped, tail = messages[0], messages[1:start], messages[start:]
    old_note = [p for p in head.parts if _is_note(p)]
    lines = [line for p in old_note for line in str(p.content).splitlines()[1:]] + _digest(dropped)
    if len(lines) > _DIGEST_MAX_LINES:
        lines = [f"- ... {len(lines) - _DIGEST_MAX_LINES + 1} earlier calls omitted", *lines[-_DIGEST_MAX_LINES + 1 :]]
    note = UserPromptPart(
        f"{COMPACTION_NOTE_PREFIX} Earlier calls of this session were removed to save context; their outcomes "
        "stand (do not repeat them):\n" + "\n".join(lines)
    )
    new_head = dataclasses.replace(head, parts=[*(p for p in head.parts if not _is_note(p)), note])
    return [new_head, *tail], len(dropped)


def _is_note(part: object) -> TypeGuard[UserPromptPart]:
    return (
        isinstance(part, UserPromptPart)
        and isinstance(part.content, str)
        and part.content.startswith(COMPACTION_NOTE_PREFIX)
    )


def _digest(dropped: Sequence[ModelMessage]) -> list[str]:
    """One line per dropped tool call: name, arguments and outcome, each shortened."""
    outcomes: dict[str, str] = {}
    for message in dropped:
        if isinstance(message, ModelRequest):
            for part in message.parts:
                if isinstance(part, ToolReturnPart):
                    verdict = "refused" if part.outcome == "retried" else part.outcome
                    outcomes[part.tool_call_id] = f"{verdict}: {_short(part.model_response_str())}"
                elif isinstance(part, RetryPromptPart) and part.tool_call_id:
                    outcomes[part.tool_call_id] = f"refused: {_short(part.model_response())}"
    lines: list[str] = []
    for message in dropped:
        if isinstance(message, ModelResponse):
            for rpart in message.parts:
                if isinstance(rpart, ToolCallPart):
                    outcome = outcomes.get(rpart.tool_call_id, "no result")
                    lines.append(f"- {rpart.tool_name}({_short(rpart.args_as_json_str())}) -> {outcome}")
    return lines


def _short(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= _DIGEST_FIELD_CHARS else text[: _DIGEST_FIELD_CHARS - 3] + "..."


def _part_text(part: object) -> str:
    if isinstance(part, ToolCallPart):
        return part.tool_name + part.args_as_json_str()
    if isinstance(part, ToolReturnPart):
        return part.model_response_str()
    if isinstance(part, UserPromptPart | TextPart):
        return part.content if isinstance(part.content, str) else str(part.content)
    return str(getattr(part, "content", ""))


# --------------------------------------------------------------------------------------------- sessions
@dataclass
class _Session:
    """One session's compaction settings and counts."""

    budget: SessionBudget
    compactions: int = 0
    dropped: int = 0

    def compact_before(self, history: list[ModelMessage], pending: ModelRequest) -> None:
        """Compact `history` in place before the model request `pending` is sent with it.

        `pending` counts like the last message of the history (its size and its place in the kept tail).
        """
        kept, dropped = compact_history(
            [*history, pending], max_tokens=self.budget.max_history_tokens, keep_last=self.budget.keep_last_messages
        )
        if dropped:
            history[:] = kept[:-1]  # the kept tail always ends with `pending`, which the request step appends
            self.compactions += 1
            self.dropped += dropped


async def run_agent_with_compaction(
    agent: Agent[DepsT, OutputT],
    prompt: str,
    *,
    deps: DepsT,
    span_label: str,
    budget: SessionBudget | None = None,
    attributes: Mapping[str, AttributeInput] | None = None,
    end_attributes: Callable[[], Mapping[str, AttributeInput]] | None = None,
    record_content: bool = False,
    capabilities: Sequence[AbstractCapability[DepsT]] = (),
) -> SessionResult[OutputT]:
    """Run one agent session under `budget`, compacting its history, as one span `"{span_label}.session"`.

    A budget running out or the model exhausting its retries ends the session early (`completed=False`) rather
    than raising: what its tools did stands. Any other error propagates. The history is compacted between the
    run's steps, before each model request, so the agent itself carries no history processor: outside a
    session it is a plain pydantic-ai agent.

    Args:
        agent: The pydantic-ai agent (tools, instructions, output type).
        prompt: The task for this session.
        deps: The tools' dependencies.
        span_label: Session name prefix, e.g. `sm` -> span `sm.session`.
        budget: Request / tool-call / token limits and the compaction threshold.
        attributes: Extra `ace.*` span attributes known up front (ids, counts).
        end_attributes: Called after the run for attributes known only then (e.g. skills changed).
        record_content: Put the prompt and the final output on the span.
        capabilities: Extra run-level pydantic-ai capabilities (e.g. instrumentation).
    """
    budget = budget or SessionBudget()
    session = _Session(budget)
    guard = RepeatGuard(max_repeats=budget.max_repeated_calls)
    start_attributes: dict[str, AttributeInput] = {**budget.span_attributes(), **(attributes or {})}
    if record_content:
        start_attributes["ace.prompt"] = prompt
    with ace_span(f"{span_label}.session", start_attributes) as span:
        stop_reason: str | None = None
        async with agent.iter(
            prompt, deps=deps, usage_limits=budget.usage_limits(), capabilities=[guard, *capabilities]
        ) as run:
            try:
                async for node in run:  # each node is yielded before it runs
                    if Agent.is_model_request_node(node):
                        session.compact_before(run.ctx.state.message_history, node.request)
            except UsageLimitExceeded as e:
                stop_reason = f"budget: {e}"
            except UnexpectedModelBehavior as e:
                stop_reason = f"model: {e}"
            except RepeatedCallsError as e:
                stop_reason = f"loop: {e}"
            usage = run.usage
            messages = run.all_messages()
            output = run.result.output if run.result is not None and stop_reason is None else None
        result = SessionResult(
            output=output,
            completed=stop_reason is None,
            stop_reason=stop_reason,
            usage=usage,
            messages=messages,
            compactions=session.compactions,
            messages_dropped=session.dropped,
            repeated_calls=guard.refused,
        )
        end: dict[str, AttributeInput] = {
            "ace.completed": result.completed,
            "ace.stop_reason": stop_reason.partition(":")[0] if stop_reason else None,
            "ace.requests": usage.requests,
            "ace.tool_calls": usage.tool_calls,
            "ace.input_tokens": usage.input_tokens,
            "ace.output_tokens": usage.output_tokens,
            "ace.messages": len(messages),
            "ace.compactions": result.compactions,
            "ace.messages_dropped": result.messages_dropped,
            "ace.repeated_calls": result.repeated_calls,
            **(end_attributes() if end_attributes is not None else {}),
        }
        if record_content:
            end["ace.output"] = None if output is None else str(output)
            end["ace.stop_detail"] = stop_reason
        for key, value in end.items():
            if value is not None:
                span.set_attribute(key, value)
        return result


class RecursiveAgent(Generic[DepsT, OutputT]):
    """A pydantic-ai agent whose every run is one budgeted, compacted, traced session."""

    def __init__(
        self,
        model: Model,
        *,
        instructions: str,
        tools: Sequence[Tool[DepsT] | Callable[..., Any]],
        deps_type: type[DepsT],
        output_type: OutputSpec[OutputT],
        span_label: str,
        budget: SessionBudget | None = None,
        tool_retries: int = 3,
        model_settings: ModelSettings | None = None,
        record_content: bool = False,
        name: str | None = None,
    ) -> None:
        self.span_label = span_label
        self.budget = budget or SessionBudget()
        self.record_content = record_content
        self.agent: Agent[DepsT, OutputT] = Agent(
            model,
            instructions=instructions,
            tools=tools,
            deps_type=deps_type,
            output_type=output_type,
            retries={"tools": tool_retries},
            model_settings=model_settings,
            name=name or f"{span_label}-agent",
        )

    async def run(
        self,
        prompt: str,
        *,
        deps: DepsT,
        attributes: Mapping[str, AttributeInput] | None = None,
        end_attributes: Callable[[], Mapping[str, AttributeInput]] | None = None,
        capabilities: Sequence[AbstractCapability[DepsT]] = (),
    ) -> SessionResult[OutputT]:
        """Run one session on `prompt` (see `run_agent_with_compaction`)."""
        return await run_agent_with_compaction(
            self.agent,
            prompt,
            deps=deps,
            span_label=self.span_label,
            budget=self.budget,
            capabilities=capabilities,
            attributes=attributes,
            end_attributes=end_attributes,
            record_content=self.record_content,
        )
