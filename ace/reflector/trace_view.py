"""Reading a trace for reflectors: the whole trace as prompt text, and the slices the recursive reflector's tools show.

A trace is a `Mapping` in the collection format (`Trace.model_dump()`): `question`, OpenAI-style `messages`
(assistant `tool_calls`, `tool` results answering them by `tool_call_id`), `reward`, `feedback`,
`ground_truth`, `grader` (how the run differs from the gold, with its rendered `text`), `metadata`,
`skills_in_context`. Messages are numbered by their index in `messages`, so a
number the model reads in a prompt is the index it passes to a tool or uses in `execute_code`.
"""

from __future__ import annotations

import json
import re
from collections import Counter, deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal
from xml.sax.saxutils import escape

import ace.json_safe as json_safe
from ace.core.skill import Skill
from ace.core.skillbook import Skillbook
from ace.exceptions import UserError

__all__ = [
    "ErrorKind",
    "SkillsInContext",
    "ToolCallView",
    "TraceFormatError",
    "TraceView",
    "classify_tool_result",
    "content_text",
    "grader_block",
    "neutralize_tags",
    "render_grader",
    "render_ground_truth",
    "render_outcome",
    "render_trace",
    "skills_in_context",
    "task_block",
    "truncate",
    "without_grader",
]

ErrorKind = Literal["exception", "error", "refusal"]
"""How a tool result failed: a crash with a traceback, an error the tool reported, or a refusal by policy."""

_EXCEPTION = re.compile(r"Traceback \(most recent call last\)|^\s*[A-Z]\w*(?:Error|Exception)\b\s*[:(]", re.MULTILINE)
_ERROR = re.compile(r"^\s*(?:error|failed|failure)\b", re.IGNORECASE)
_REFUSAL = re.compile(
    r"\b(?:not allowed|not permitted|permission denied|forbidden|unauthori[sz]ed|refus(?:e|ed|al)|"
    r"against (?:the )?policy|violat\w* (?:the |our )?polic\w*|cannot be (?:cancel|modif|chang|updat|refund)\w*)",
    re.IGNORECASE,
)
_ERROR_KEYS = ("error", "errors", "exception")


class TraceFormatError(UserError, ValueError):
    """A trace mapping a reflector cannot read; the message names the key and the fix."""


def truncate(text: str, limit: int) -> str:
    """`text` cut to about `limit` characters, keeping the head and the tail, with a marker saying what went."""
    if limit < 1:
        raise ValueError(f"truncation limit must be a positive number of characters, got {limit}")
    if len(text) <= limit:
        return text
    head = max(1, (limit * 2) // 3)
    tail = max(0, limit - head)
    dropped = len(text) - head - tail
    return f"{text[:head]}\n[... {dropped:,} characters truncated ...]\n{text[len(text) - tail :] if tail else ''}"


def content_text(content: object) -> str:
    """A message content as text: a string as it is, multi-part content joined (non-text parts as `[type]`)."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, Sequence):
        pieces: list[str] = []
        for part in content:
            if isinstance(part, Mapping):
                text = part.get("text")
                pieces.append(text if isinstance(text, str) else f"[{part.get('type', 'part')}]")
            else:
                pieces.append(str(part))
        return "\n".join(pieces)
    return json.dumps(content, ensure_ascii=False, default=str)


def classify_tool_result(text: str, *, flagged: bool = False) -> ErrorKind | None:
    """Whether a tool result is an exception, an error, a policy refusal, or (`None`) a normal result.

    Args:
        text: The tool result as text.
        flagged: The source marked this result as an error (tau2's `metadata.tool_errors`).
    """
    if _EXCEPTION.search(text):
        return "exception"
    payload = _json_value(text)
    if isinstance(payload, Mapping):
        failed = any(payload.get(k) for k in _ERROR_KEYS) or payload.get("success") is False
        return "error" if failed or flagged or str(payload.get("status", "")).lower() == "error" else None
    if payload is not None:  # a JSON list or scalar is data, whatever words it contains
        return "error" if flagged else None
    if _ERROR.match(text) or flagged:
        return "error"
    return "refusal" if _REFUSAL.search(text) else None


@dataclass(frozen=True, kw_only=True)
class ToolCallView:
    """One tool call the agent made, with the result that answered it."""

    index: int
    """Its position among the trace's tool calls, from 0."""
    call_id: str
    name: str
    arguments: str
    """The arguments as the agent sent them (JSON text)."""
    message_index: int
    """The assistant message that made the call."""
    result_index: int | None
    """The tool message that answered it (`None`: never answered)."""
    result: str | None
    error_kind: ErrorKind | None


@dataclass(frozen=True, kw_only=True)
class TraceView:
    """A trace indexed for reading: its messages as text, its tool calls matched with their results."""

    question: str
    messages: tuple[Mapping[str, Any], ...]
    tool_calls: tuple[ToolCallView, ...]
    orphan_results: tuple[int, ...]
    """Indexes of tool messages that answer no call of the trace."""
    orphan_errors: tuple[tuple[int, ErrorKind], ...]
    """Orphan tool results that failed, with how."""

    @classmethod
    def from_trace(cls, trace: Mapping[str, Any]) -> TraceView:
        """Index `trace`; raises `TraceFormatError` when it has no message list.

        A tool message answers the oldest unanswered call with its `tool_call_id`: real traces reuse call ids
        (tau-bench's GPT-4o runs do), so an id alone does not identify a call.
        """
        messages = _messages(trace)
        flagged = _flagged_ids(trace)
        calls: list[dict[str, Any]] = []
        pending: dict[str, deque[int]] = {}
        orphans: list[int] = []
        orphan_errors: list[tuple[int, ErrorKind]] = []
        for i, message in enumerate(messages):
            for j, call in enumerate(_tool_calls(message)):
                raw = call.get("function")
                function: Mapping[str, Any] = raw if isinstance(raw, Mapping) else {}
                call_id = str(call.get("id") or f"call-{i}-{j}")
                arguments = function.get("arguments", "")
                pending.setdefault(call_id, deque()).append(len(calls))
                calls.append(
                    {
                        "call_id": call_id,
                        "name": str(function.get("name") or "?"),
                        "arguments": arguments if isinstance(arguments, str) else json.dumps(arguments, default=str),
                        "message_index": i,
                        "result_index": None,
                        "result": None,
                        "error_kind": None,
                    }
                )
            if message.get("role") == "tool":
                text = content_text(message.get("content"))
                call_id = str(message.get("tool_call_id") or "")
                kind = classify_tool_result(text, flagged=call_id in flagged)
                waiting = pending.get(call_id)
                if not waiting:
                    orphans.append(i)
                    if kind is not None:
                        orphan_errors.append((i, kind))
                    continue
                calls[waiting.popleft()].update(result_index=i, result=text, error_kind=kind)
        return cls(
            question=str(trace.get("question") or ""),
            messages=tuple(messages),
            tool_calls=tuple(ToolCallView(index=k, **entry) for k, entry in enumerate(calls)),
            orphan_results=tuple(orphans),
            orphan_errors=tuple(orphan_errors),
        )

    @property
    def errors(self) -> tuple[ToolCallView, ...]:
        """The tool calls whose result is an exception, an error or a refusal, in order."""
        return tuple(c for c in self.tool_calls if c.error_kind is not None)

    def tool_names(self) -> Counter[str]:
        """How often each tool was called."""
        return Counter(c.name for c in self.tool_calls)

    def call_by_result(self, index: int) -> ToolCallView | None:
        """The call a tool message answers."""
        return next((c for c in self.tool_calls if c.result_index == index), None)

    def message_text(self, index: int, *, max_tool_result_chars: int | None = None) -> str:
        """Message `index` in full: `[i] role` header, its text, its tool calls or the call it answers."""
        message = self.messages[index]
        role = str(message.get("role", "?"))
        text = content_text(message.get("content"))
        if role == "tool":
            call = self.call_by_result(index)
            name = call.name if call is not None else str(message.get("name") or "?")
            status = f" [{call.error_kind.upper()}]" if call is not None and call.error_kind else ""
            if max_tool_result_chars is not None:
                text = truncate(text, max_tool_result_chars)
            return f"[{index}] tool result of {name} (call {message.get('tool_call_id', '?')}){status}:\n{text}"
        lines = [f"[{index}] {role}:" + (f" {text}" if text and "\n" not in text else "")]
        if text and "\n" in text:
            lines.append(text)
        for call in (c for c in self.tool_calls if c.message_index == index):
            lines.append(f"  -> call {call.name}({call.arguments}) id={call.call_id}")
        return "\n".join(lines)

    def message_line(self, index: int, width: int) -> str:
        """Message `index` on one line, shortened to about `width` characters of content."""
        message = self.messages[index]
        role = str(message.get("role", "?"))
        if role == "tool":
            call = self.call_by_result(index)
            name = call.name if call is not None else str(message.get("name") or "?")
            flag = f" [{call.error_kind.upper()}]" if call is not None and call.error_kind else ""
            return f"[{index}] tool {name}{flag}: {_one_line(content_text(message.get('content')), width)}"
        parts = [_one_line(content_text(message.get("content")), width)] if message.get("content") else []
        parts += [f"-> {c.name}({_one_line(c.arguments, width)})" for c in self.tool_calls if c.message_index == index]
        return f"[{index}] {role}: " + " ".join(p for p in parts if p)


_PROMPT_TAGS = re.compile(
    r"<(/?\s*(?:task|conversation|outcome|ground_truth|grader_diff|outline|skills_in_context)\b)", re.IGNORECASE
)
"""The opening or closing tag of an element of the reflector prompt, where a trace's own text could forge one."""


def neutralize_tags(text: str) -> str:
    """`text` with every tag of the prompt's own elements (`</conversation>`, `<grader_diff>`, ...) made inert
    (`&lt;/conversation>`): a message or tool result cannot close the conversation and forge an outcome, a ground
    truth or a grader's verdict. Everything else stays as written (code and JSON keep their `<` and `&`)."""
    return _PROMPT_TAGS.sub(r"&lt;\1", text)


def task_block(question: str) -> str:
    """The `<task>` element of a reflector prompt, the trace's question escaped (`<`, `>`, `&`): a question cannot
    close the element and forge an `<outcome>` or a `<ground_truth>`."""
    return f"<task>\n{escape(question.strip()) or '(no question recorded)'}\n</task>"


def render_outcome(trace: Mapping[str, Any]) -> str:
    """The reward and feedback lines (`unjudged` when the trace has neither)."""
    lines: list[str] = []
    if trace.get("reward") is not None:
        lines.append(f"reward: {trace['reward']}")
    if trace.get("feedback"):
        lines.append(f"feedback: {escape(str(trace['feedback']).strip())}")
    return "\n".join(lines) or "unjudged: the trace has no reward and no feedback"


def render_grader(trace: Mapping[str, Any], *, max_chars: int = 4_000) -> str | None:
    """The grader's comparison of the run with the gold (`trace["grader"]["text"]`), or `None` when there is none.

    It names the missing, extra and different actions with the differing arguments and both values, and the
    required outputs the agent never said: what the reward alone does not tell the reflector.
    """
    grader = trace.get("grader")
    text = grader.get("text") if isinstance(grader, Mapping) else None
    return truncate(text.strip(), max_chars) if isinstance(text, str) and text.strip() else None


def without_grader(trace: Mapping[str, Any]) -> Mapping[str, Any]:
    """`trace` without its `grader` comparison: what a reflector sees with `grader_feedback=False`."""
    return {k: v for k, v in trace.items() if k != "grader"} if "grader" in trace else trace


def grader_block(trace: Mapping[str, Any]) -> list[str]:
    """`<grader_diff>` as a prompt part, or nothing when the trace has no comparison with the gold."""
    text = render_grader(trace)
    return [] if text is None else [f"<grader_diff>\n{text}\n</grader_diff>"]


def render_ground_truth(trace: Mapping[str, Any], *, max_chars: int = 4_000) -> str | None:
    """The ground truth as indented JSON (truncated), or `None` when the benchmark gives none."""
    truth = trace.get("ground_truth")
    if truth in (None, {}, []):
        return None
    text = truth if isinstance(truth, str) else json.dumps(truth, ensure_ascii=False, indent=1, default=str)
    return neutralize_tags(truncate(text, max_chars))


def render_trace(
    trace: Mapping[str, Any],
    *,
    max_tool_result_chars: int = 3_000,
    max_system_chars: int = 8_000,
    max_message_chars: int = 6_000,
    conversation: bool = True,
) -> str:
    """The whole trace as prompt text: task, numbered conversation, outcome, ground truth and the grader's
    comparison with it when present (last, so a model that trims the middle of a long prompt keeps it).

    Args:
        trace: The trace mapping.
        max_tool_result_chars: Longer tool results keep their head and tail around a truncation marker.
        max_system_chars: Same for the system prompt (the agent's policy).
        max_message_chars: Same for any other message.
        conversation: `False` leaves the conversation out (task, outcome and the comparison with the gold only):
            for a small model, which copies ids and JSON of a long transcript into its answer.
    """
    view = TraceView.from_trace(trace)
    body: list[str] = []
    for i, message in enumerate(view.messages):
        role = message.get("role")
        if role == "tool":
            body.append(view.message_text(i, max_tool_result_chars=max_tool_result_chars))
            continue
        text = view.message_text(i)
        body.append(truncate(text, max_system_chars if role == "system" else max_message_chars))
    for i in view.orphan_results:
        body.append(f"(message [{i}] answers no tool call of this trace)")
    parts = [task_block(view.question)]
    if conversation:
        parts.append(
            f'<conversation messages="{len(view.messages)}" tool_calls="{len(view.tool_calls)}" '
            f'failed_tool_calls="{len(view.errors)}">\n' + neutralize_tags("\n".join(body)) + "\n</conversation>"
        )
    parts.append(f"<outcome>\n{render_outcome(trace)}\n</outcome>")
    truth = render_ground_truth(trace)
    if truth is not None:
        parts.append(f"<ground_truth>\n{truth}\n</ground_truth>")
    parts += grader_block(trace)
    return "\n\n".join(parts)


# ------------------------------------------------------------------------------------------------ helpers
def _messages(trace: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    if not isinstance(trace, Mapping):
        raise TraceFormatError(f"a trace must be a mapping (pass Trace.model_dump()), got {type(trace).__name__}")
    messages = trace.get("messages")
    if not isinstance(messages, Sequence) or isinstance(messages, str):
        raise TraceFormatError(
            "the trace has no 'messages' list: pass a collection trace (Trace.model_dump()) with its "
            "OpenAI-style chat messages"
        )
    bad = next((i for i, m in enumerate(messages) if not isinstance(m, Mapping)), None)
    if bad is not None:
        raise TraceFormatError(f"messages[{bad}] is not a chat message object (role, content, ...)")
    return list(messages)


def _tool_calls(message: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    calls = message.get("tool_calls") if message.get("role") == "assistant" else None
    return [c for c in calls if isinstance(c, Mapping)] if isinstance(calls, Sequence) else []


def _flagged_ids(trace: Mapping[str, Any]) -> frozenset[str]:
    metadata = trace.get("metadata")
    ids = metadata.get("tool_errors") if isinstance(metadata, Mapping) else None
    return frozenset(str(i) for i in ids) if isinstance(ids, Sequence) and not isinstance(ids, str) else frozenset()


def _json_value(text: str) -> object:
    """The parsed JSON object or list `text` holds, else `None`."""
    stripped = text.strip()
    if not stripped.startswith(("{", "[")):
        return None
    try:
        value: object = json_safe.loads(stripped)
    except json_safe.JsonInputError:  # not JSON, or nested too deep / too long an integer to look into
        return None
    return value


def _one_line(text: str, width: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: max(1, width - 3)] + "..."


@dataclass(frozen=True, kw_only=True)
class SkillsInContext:
    """The skillbook skills the agent had in its context for a trace (`trace["skills_in_context"]`)."""

    skills: tuple[Skill, ...]
    """The listed skills the skillbook still holds as active, in the trace's order."""
    missing: tuple[str, ...]
    """Listed ids the skillbook does not hold, or holds as removed."""

    @property
    def ids(self) -> frozenset[str]:
        """Ids a reflection may tag: the active in-context skills."""
        return frozenset(s.id for s in self.skills)


def skills_in_context(trace: Mapping[str, Any], skillbook: Skillbook) -> SkillsInContext:
    """Look the trace's `skills_in_context` ids up in `skillbook` (no list: no skill was in context)."""
    listed = trace.get("skills_in_context")
    ids = [str(i) for i in listed] if isinstance(listed, Sequence) and not isinstance(listed, str) else []
    found: list[Skill] = []
    missing: list[str] = []
    for skill_id in dict.fromkeys(ids):
        skill = skillbook.get_skill(skill_id)
        if skill is not None and skill.active:
            found.append(skill)
        else:
            missing.append(skill_id)
    return SkillsInContext(skills=tuple(found), missing=tuple(missing))
