"""The recursive reflector's tools: read the trace by slices, read and search the skillbook, run code over the trace.

Each tool takes `RunContext[RRDeps]` first; its docstring is the description the model reads. A bad call (an
index out of range, an unknown skill or tool name) raises `ModelRetry` with the valid range or a close match.
A failing `execute_code` snippet is a result, never an exception. Every call is one span named after the
tool with `ace.*` attributes (the code and query text only with `record_content`). On the session's last
request, and once the token budget is nearly spent, the tools are withdrawn so that the model must answer.
"""

from __future__ import annotations

import difflib
from collections import Counter
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Literal

from opentelemetry.trace import Span
from pydantic_ai import ModelRetry, RunContext
from pydantic_ai.tools import Tool, ToolDefinition

from ace.core.rendering import render_skills_xml
from ace.core.skillbook import Skillbook
from ace.embeddings.base import Embedder
from ace.exceptions import SkillbookError
from ace.observability import AttributeInput, ace_span
from ace.reflector.base import TagCheck
from ace.reflector.recursive.config import RecursiveConfig
from ace.reflector.trace_view import ToolCallView, TraceView, truncate
from ace.retrieval.top_k import retrieve_top_k
from ace.sandbox.runner import run_code

__all__ = [
    "RRDeps",
    "RRToolName",
    "execute_code",
    "find_errors",
    "list_messages",
    "list_tool_calls",
    "read_message",
    "read_skill",
    "rr_tools",
    "search_skillbook",
    "while_budget_left",
]

RRToolName = Literal[
    "list_messages", "read_message", "list_tool_calls", "find_errors", "read_skill", "search_skillbook", "execute_code"
]
_WRAP_UP_TOKEN_SHARE = 0.8
_ERROR_TEXT_CHARS = 600


@dataclass(kw_only=True)
class RRDeps:
    """What every recursive-reflector tool reads: the trace (indexed and encoded), the skillbook, the settings."""

    trace: Mapping[str, Any]
    view: TraceView
    trace_json: bytes
    """The trace as JSON, encoded once per session for `execute_code`."""
    skillbook: Skillbook
    tags: TagCheck
    """Which skills the reflection may tag, and the tags dropped so far."""
    config: RecursiveConfig
    embedder: Embedder | None = None
    calls: Counter[str] = field(default_factory=Counter[str])
    """Successful calls per tool so far."""
    code_failures: int = 0
    """`execute_code` runs that raised, timed out or ran out of memory."""


# ------------------------------------------------------------------------------------------ the trace
def list_messages(ctx: RunContext[RRDeps], start: int = 0, end: int | None = None) -> str:
    """List messages start..end-1 of the trace, one shortened line each (role, text, tool calls, results).

    Args:
        start: Index of the first message, from 0.
        end: Index after the last message; omit for as many as one listing shows.
    """
    deps = ctx.deps
    total = len(deps.view.messages)
    with _tool_call(deps, "list_messages", {"ace.start": start, "ace.end": end}) as span:
        if not 0 <= start < total:
            raise ModelRetry(f"start={start} is out of range: the trace has {total} messages (0-{total - 1})")
        stop = total if end is None else end
        if stop <= start:
            raise ModelRetry(f"end={end} must be greater than start={start}")
        stop = min(stop, total, start + deps.config.max_list_messages)
        lines = [deps.view.message_line(i, deps.config.preview_chars) for i in range(start, stop)]
        if stop < total and (end is None or stop < end):
            lines.append(f"... {total - stop} more messages: list_messages({stop}, {total})")
        span.set_attribute("ace.results_count", stop - start)
        return "\n".join(lines)


def read_message(ctx: RunContext[RRDeps], index: int, offset: int = 0) -> str:
    """Read one message in full: its text, the tool calls it makes or the call it answers.

    Args:
        index: The message index (negative counts from the end: -1 is the last message).
        offset: Character to start from, to page through a very long message.
    """
    deps = ctx.deps
    total = len(deps.view.messages)
    with _tool_call(deps, "read_message", {"ace.index": index, "ace.offset": offset}) as span:
        if not -total <= index < total:
            raise ModelRetry(f"index={index} is out of range: the trace has {total} messages (0-{total - 1})")
        index %= total
        text = deps.view.message_text(index)
        if not 0 <= offset < max(len(text), 1):
            raise ModelRetry(f"offset={offset} is out of range: message {index} has {len(text)} characters")
        page = text[offset : offset + deps.config.max_read_chars]
        end = offset + len(page)
        span.set_attribute("ace.result_chars", len(page))
        if end < len(text):
            page += (
                f"\n[... characters {offset}-{end} of {len(text)}; "
                f"read_message(index={index}, offset={end}) for the rest ...]"
            )
        return page


def list_tool_calls(ctx: RunContext[RRDeps], name: str | None = None) -> str:
    """List the agent's tool calls in order: call number, message, tool, arguments, shortened result, failure.

    Args:
        name: Only calls of this tool (e.g. 'update_reservation_flights'); omit for every call.
    """
    deps = ctx.deps
    with _tool_call(deps, "list_tool_calls", {}, {"ace.name": name}) as span:
        calls = deps.view.tool_calls
        if name is not None:
            names = sorted(deps.view.tool_names())
            if name not in names:
                close = difflib.get_close_matches(name, names, n=3, cutoff=0.5)
                hint = f" Did you mean {', '.join(repr(c) for c in close)}?" if close else ""
                raise ModelRetry(f"the agent never called {name!r}; it called: {', '.join(names) or 'no tool'}.{hint}")
            calls = tuple(c for c in calls if c.name == name)
        span.set_attribute("ace.results_count", len(calls))
        if not calls:
            return "The agent made no tool call in this trace."
        return "\n".join(_call_line(c, deps.config.preview_chars) for c in calls)


def find_errors(ctx: RunContext[RRDeps]) -> str:
    """Find the tool results that are errors, exceptions or policy refusals, with the call that caused each."""
    deps = ctx.deps
    with _tool_call(deps, "find_errors", {}) as span:
        errors = deps.view.errors
        span.set_attribute("ace.results_count", len(errors) + len(deps.view.orphan_errors))
        lines = [
            f"#{c.index} [message {c.result_index}] {c.error_kind}: {c.name}({truncate(c.arguments, 300)})\n"
            f"  -> {truncate(c.result or '', _ERROR_TEXT_CHARS)}"
            for c in errors
        ]
        lines += [
            f"[message {i}] {kind}: a result answering no call\n"
            f"  -> {truncate(deps.view.message_text(i), _ERROR_TEXT_CHARS)}"
            for i, kind in deps.view.orphan_errors
        ]
        if not lines:
            return (
                "No tool result in this trace is an error, an exception or a refusal: look for wrong arguments, "
                "skipped checks or wrong replies instead (list_tool_calls, list_messages)."
            )
        return "\n".join(lines)


# ------------------------------------------------------------------------------------------- skillbook
def read_skill(ctx: RunContext[RRDeps], skill_id: str) -> str:
    """Read one skill of the skillbook: section, keywords, issue, insight, counters, whether it is active.

    Args:
        skill_id: The id of the skill, e.g. 'context-00003'.
    """
    deps = ctx.deps
    with _tool_call(deps, "read_skill", {"ace.skill_id": skill_id}) as span:
        skill = deps.skillbook.require_skill(skill_id)
        span.set_attribute("ace.active", skill.active)
        in_context = "yes" if skill.id in deps.tags.allowed else "no (do not tag it)"
        return f"{render_skills_xml([skill])}\nin the agent's context for this trace: {in_context}"


def search_skillbook(
    ctx: RunContext[RRDeps],
    query: str,
    top_k: int = 5,
    section: Literal["context", "harness"] | None = None,
    keywords: list[str] | None = None,
) -> str:
    """Find active skills whose issue, insight or keywords match a query, best first.

    Args:
        query: The problem, the action, or the domain and API involved.
        top_k: How many skills to return.
        section: Only 'context' (guidance for the agent) or 'harness' (runtime problems) skills; omit for both.
        keywords: Prefer skills carrying these labels, e.g. ['airline', 'refund_policy'].
    """
    deps = ctx.deps
    attrs: dict[str, AttributeInput] = {"ace.top_k": top_k, "ace.section": section}
    with _tool_call(deps, "search_skillbook", attrs, {"ace.query": query}) as span:
        if not 1 <= top_k <= deps.config.max_search_results:
            raise ModelRetry(f"top_k must be between 1 and {deps.config.max_search_results}, got {top_k}")
        if not deps.skillbook.active_count:
            span.set_attribute("ace.results_count", 0)
            return "The skillbook has no active skill yet."
        found = retrieve_top_k(
            deps.skillbook, query, top_k=top_k, section=section, keywords=keywords or None, embedder=deps.embedder
        )
        span.set_attribute("ace.results_count", len(found))
        span.set_attribute("ace.result_ids", [s.id for s in found])
        return render_skills_xml(found) if found else "No active skill matches this query."


# ---------------------------------------------------------------------------------------------- code
async def execute_code(ctx: RunContext[RRDeps], code: str) -> str:
    """Run Python 3 over the trace in a sandbox and return its output; use it to count, sum and compare.

    `trace` (a dict: question, messages, reward, feedback, ground_truth, metadata) and `messages` (its list of
    OpenAI-style messages, same indexes as list_messages) are defined. Standard library only (json, re, math,
    statistics, collections, itertools, datetime); no network, no files outside the working directory. print()
    what you need; a final bare expression is printed too. Limits: a few seconds, a few hundred MB, capped output.

    Args:
        code: The Python source to run.
    """
    deps = ctx.deps
    limits = deps.config.sandbox
    with _tool_call(deps, "execute_code", {"ace.code_chars": len(code)}, {"ace.code": code}) as span:
        if not code.strip():
            raise ModelRetry("code is empty: pass the Python source to run")
        try:
            result = await run_code(code, deps.trace_json, limits=limits)
        except OSError as e:  # the interpreter could not start: the model can still reflect without code
            deps.code_failures += 1
            span.set_attribute("ace.result", "unavailable")
            return f"execute_code is unavailable on this machine ({type(e).__name__}: {e}); reason from the messages."
        for key, value in {
            "ace.exit_code": result.exit_code,
            "ace.timed_out": result.timed_out,
            "ace.memory_exceeded": result.memory_exceeded,
            "ace.output_truncated": result.truncated,
            "ace.duration_ms": round(result.duration_s * 1000, 1),
            "ace.sandbox_refusals": result.refused_count,  # attempts the sandbox refused: a signal worth alerting on
        }.items():
            if value is not None:
                span.set_attribute(key, value)
        if not result.ok:
            deps.code_failures += 1
        return result.as_text()


def rr_tools() -> list[Tool[RRDeps]]:
    """Fresh tool objects for one recursive-reflector agent, each withdrawn when the budget is nearly spent."""
    functions = (list_messages, read_message, list_tool_calls, find_errors, read_skill, search_skillbook)
    tools: list[Tool[RRDeps]] = [Tool(f, takes_ctx=True, prepare=while_budget_left) for f in functions]
    tools.append(Tool(execute_code, takes_ctx=True, prepare=while_budget_left))
    return tools


# ------------------------------------------------------------------------------------------- helpers
def while_budget_left(ctx: RunContext[RRDeps], tool_def: ToolDefinition) -> ToolDefinition | None:
    """Offer the tool unless this is the session's last request or its tokens or tool calls are nearly spent."""
    config = ctx.deps.config
    usage = ctx.usage
    if usage.requests >= config.max_requests - 1:
        return None
    if config.max_tokens is not None and usage.total_tokens >= _WRAP_UP_TOKEN_SHARE * config.max_tokens:
        return None
    if config.max_tool_calls is not None and usage.tool_calls >= config.max_tool_calls:
        return None
    return tool_def


@contextmanager
def _tool_call(
    deps: RRDeps,
    tool: RRToolName,
    attributes: Mapping[str, AttributeInput],
    content: Mapping[str, AttributeInput] | None = None,
) -> Iterator[Span]:
    """The tool's span (`ace.result` "ok" unless the tool says otherwise); a refused call is sent back as a retry."""
    attrs = {"ace.tool": tool, **attributes, **(dict(content or {}) if deps.config.record_content else {})}
    with ace_span(tool, {**attrs, "ace.result": "ok"}, expected=(ModelRetry,)) as span:
        try:
            yield span
        except SkillbookError as e:
            span.set_attribute("ace.result", "refused")
            raise ModelRetry(str(e)) from None
        except ModelRetry:
            span.set_attribute("ace.result", "refused")
            raise
        deps.calls[tool] += 1


def _call_line(call: ToolCallView, width: int) -> str:
    result = "(no result)" if call.result is None else " ".join(call.result.split())
    if len(result) > width:
        result = result[: width - 3] + "..."
    flag = f" [{call.error_kind.upper()}]" if call.error_kind else ""
    arguments = call.arguments if len(call.arguments) <= width else call.arguments[: width - 3] + "..."
    return f"#{call.index} [message {call.message_index}] {call.name}({arguments}) -> {result}{flag}"
