"""OpenTelemetry GenAI spans (OTLP JSON) as traces: one trace per agent run, with its tool calls and results.

An agent run is an `invoke_agent` span (the `gen_ai.*` semantic conventions: pydantic-ai, Logfire, the OpenAI
Agents SDK's instrumentation) under no other; a trace without one is one run. Its conversation comes from the
most complete of the agent span's `pydantic_ai.all_messages`, its model calls' `gen_ai.input.messages` and
`gen_ai.output.messages`, and the older `events` attribute (an errored pydantic-ai run records only its prompt in
`all_messages`); the results of the last tool calls come from their tool spans when the messages stop before them
(the call that raised, with its error); `gen_ai.system_instructions` becomes the system message. The run's
`ace.feedback` / `ace.reward` attributes are its judgement, else its errors and its failed tool calls are the
feedback. Spans must be exported with message content (the default of pydantic-ai and Logfire).
"""

from __future__ import annotations

import json
import os
from collections import defaultdict
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

from ace import json_safe
from ace_eval.collection.chat import tool_arguments
from ace_eval.collection.importers._common import ImportedCollection, build_trace
from ace_eval.collection.importers._otel_outcome import (
    FEEDBACK_ATTRIBUTE,
    REWARD_ATTRIBUTE,
    answer_trailing_calls,
    outcome,
)
from ace_eval.collection.importers.otlp import JsonAttr, Span, read_otlp_spans
from ace_eval.collection.model import CollectionError, Trace

__all__ = ["FEEDBACK_ATTRIBUTE", "REWARD_ATTRIBUTE", "import_otel", "is_agent_span", "traces_from_spans"]

_AGENT_OPERATIONS = ("invoke_agent",)
_ALL_MESSAGES = "pydantic_ai.all_messages"
_INPUT, _OUTPUT, _SYSTEM = "gen_ai.input.messages", "gen_ai.output.messages", "gen_ai.system_instructions"
_EVENT_ROLES = {
    "gen_ai.system.message": "system",
    "gen_ai.user.message": "user",
    "gen_ai.assistant.message": "assistant",
    "gen_ai.tool.message": "tool",
    "gen_ai.choice": "assistant",
}


def is_agent_span(span: Span) -> bool:
    """True for a span that is one agent run (`gen_ai.operation.name = invoke_agent`, or pydantic-ai's `agent run`)."""
    operation = span.attributes.get("gen_ai.operation.name")
    return operation in _AGENT_OPERATIONS or span.name.startswith("invoke_agent") or span.name == "agent run"


class _Converter:
    """Turns the `gen_ai` message lists of one span into OpenAI-style chat messages."""

    def __init__(self, span: Span, file: str) -> None:
        self.span = span
        self.file = file
        self.called: set[str] = set()

    def error(self, message: str, field: str) -> CollectionError:
        return CollectionError(message, file=self.file, line=self.span.line, field=f"{self.span.path}.{field}")

    def attribute(self, key: str) -> list[JsonAttr] | None:
        """A message-list attribute, parsed when it is JSON text; None when absent."""
        value = self.span.attributes.get(key)
        if value is None:
            return None
        if isinstance(value, str):
            try:
                value = json_safe.loads(value)
            except json_safe.JsonInputError as e:
                raise self.error(e.reason, f"attributes[{key}]") from None
        if not isinstance(value, list):
            raise self.error(f"must be a list of messages, got {type(value).__name__}", f"attributes[{key}]")
        return value

    def messages(self, raw: list[JsonAttr], key: str) -> Iterator[dict[str, object]]:
        for i, message in enumerate(raw):
            field = f"attributes[{key}][{i}]"
            if not isinstance(message, dict):
                raise self.error(f"a message is an object, got {type(message).__name__}", field)
            role = message.get("role")
            if key == "events" and role is None:
                role = _EVENT_ROLES.get(str(message.get("event.name", "")))
                if role == "assistant" and isinstance(message.get("message"), dict):
                    message = message["message"]  # gen_ai.choice wraps the assistant's message
                    assert isinstance(message, dict)
            if role not in ("system", "user", "assistant", "tool"):
                raise self.error(
                    f"must be one of 'system', 'user', 'assistant', 'tool', got {role!r:.40}", f"{field}.role"
                )
            parts = message.get("parts")
            if isinstance(parts, list):
                yield from self.from_parts(str(role), parts, field)
            else:
                yield from self.from_openai(str(role), message, field)

    def from_parts(self, role: str, parts: list[JsonAttr], field: str) -> Iterator[dict[str, object]]:
        """A semantic-conventions message: `{"role", "parts": [{"type": "text" | "tool_call" | ...}]}`."""
        texts: list[str] = []
        calls: list[dict[str, object]] = []
        results: list[dict[str, object]] = []
        for j, part in enumerate(parts):
            if not isinstance(part, dict):
                raise self.error(f"a part is an object, got {type(part).__name__}", f"{field}.parts[{j}]")
            kind = part.get("type")
            if kind == "text":
                texts.append(str(part.get("content", "")))
            elif kind == "tool_call":
                calls.append(self.call(part.get("id"), part.get("name"), part.get("arguments"), f"{field}.parts[{j}]"))
            elif kind == "tool_call_response":
                result = part.get("result", part.get("response"))
                results.append(self.result(part.get("id"), result, part.get("name")))
            elif kind not in ("thinking", "reasoning"):
                texts.append(f"[{kind}]")
        yield from self.emit(role, "\n".join(texts) if texts else None, calls, results)

    def from_openai(self, role: str, message: dict[str, JsonAttr], field: str) -> Iterator[dict[str, object]]:
        """An OpenAI-like message (`content`, `tool_calls`, `tool_call_id`), as older instrumentations wrote."""
        content = message.get("content")
        text = content if isinstance(content, str) or content is None else json.dumps(content, ensure_ascii=False)
        calls = []
        raw_calls = message.get("tool_calls")
        for j, call in enumerate(raw_calls if isinstance(raw_calls, list) else []):
            function = call.get("function") if isinstance(call, dict) else None
            if not isinstance(call, dict) or not isinstance(function, dict):
                raise self.error("a tool call needs a `function` object", f"{field}.tool_calls[{j}].function")
            calls.append(
                self.call(call.get("id"), function.get("name"), function.get("arguments"), f"{field}.tool_calls[{j}]")
            )
        results = [self.result(message.get("id", message.get("tool_call_id")), text, None)] if role == "tool" else []
        yield from self.emit(role, None if role == "tool" else text, calls, results)

    def call(self, call_id: object, name: object, arguments: object, field: str) -> dict[str, object]:
        if not isinstance(name, str) or not name:
            raise self.error(f"a tool call needs a `name`, got {name!r:.40}", f"{field}.name")
        identifier = str(call_id) if call_id else f"call-{len(self.called) + 1}"
        self.called.add(identifier)
        args = arguments if isinstance(arguments, str | dict) else None
        return {"id": identifier, "type": "function", "function": {"name": name, "arguments": tool_arguments(args)}}

    def result(self, call_id: object, content: JsonAttr, name: object) -> dict[str, object]:
        text = content if isinstance(content, str) else json.dumps(content, ensure_ascii=False)
        return {"id": str(call_id) if call_id else "", "content": text, "name": name}

    def emit(
        self, role: str, text: str | None, calls: list[dict[str, object]], results: list[dict[str, object]]
    ) -> Iterator[dict[str, object]]:
        for result in results:
            if result["id"] in self.called:
                yield {"role": "tool", "tool_call_id": result["id"], "content": result["content"]}
            else:  # a result whose call is not in the conversation (cut by the agent's history processor)
                yield {"role": "user", "content": f"[result of tool {result['name'] or '?'}] {result['content']}"}
        if role == "assistant":
            if text is not None or calls:
                yield {"role": "assistant", "content": text, **({"tool_calls": calls} if calls else {})}
        elif text is not None and role != "tool":
            yield {"role": role, "content": text}


def _candidates(run: Span, below: list[Span]) -> list[tuple[Span, list[str]]]:
    """Where a run's conversation can come from, most trusted first: the run's `pydantic_ai.all_messages`, each
    model call's input and output (latest first), the `events` of older instrumentations (latest first)."""
    sources: list[tuple[Span, list[str]]] = [(run, [_ALL_MESSAGES])]
    model_calls = sorted((s for s in [run, *below] if _INPUT in s.attributes), key=lambda s: -s.start_ns)
    sources += [(s, [_INPUT, _OUTPUT]) for s in model_calls]
    sources += [(s, ["events"]) for s in sorted(below, key=lambda s: -s.start_ns) if "events" in s.attributes]
    return sources


def _conversation(run: Span, below: list[Span], file: str) -> list[dict[str, object]]:
    """The run's messages, from the most complete source its spans hold (the longest; on a tie the most trusted),
    with the results of its last tool calls from their tool spans when the messages stop before them.

    On an errored run pydantic-ai's `all_messages` may hold only the prompt while the model calls hold the tool
    call that failed: the longest source wins. A malformed first source is an error; a malformed later one, which
    the run does not need, is left out."""
    found: list[list[dict[str, object]]] = []
    for span, keys in _candidates(run, below):
        converter = _Converter(span, file)
        try:
            lists = [(key, converter.attribute(key)) for key in keys]
            if lists[0][1] is None:
                continue
            messages = [m for key, raw in lists if raw is not None for m in converter.messages(raw, key)]
        except CollectionError:
            if found:
                continue
            raise
        system = _Converter(span, file).attribute(_SYSTEM) or _Converter(run, file).attribute(_SYSTEM)
        if system and not any(m["role"] == "system" for m in messages):
            texts = [str(p.get("content", "")) for p in system if isinstance(p, dict)]
            messages.insert(0, {"role": "system", "content": "\n".join(texts)})
        found.append(messages)
    if found:
        return answer_trailing_calls(max(found, key=len), below)  # max keeps the first of the longest
    raise CollectionError(
        "the agent run holds no messages: export the spans with message content (pydantic-ai and Logfire include "
        "it by default; set OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true for OpenTelemetry's own)",
        file=file,
        line=run.line,
        field=run.path,
    )


def _int(value: JsonAttr) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _trace(run: Span, below: list[Span], above: list[Span], file: str, source_system: str) -> Trace:
    messages = _conversation(run, below, file)
    question = next((m["content"] for m in messages if m["role"] == "user" and m["content"]), None)
    if question is None:
        raise CollectionError(
            "the agent run has no user message to take the question from", file=file, line=run.line, field=run.path
        )
    attrs = run.attributes
    model = attrs.get("gen_ai.request.model") or attrs.get("model_name")
    if model is None:
        model = next(
            (s.attributes["gen_ai.request.model"] for s in below if "gen_ai.request.model" in s.attributes), None
        )
    tools = sorted({str(s.attributes["gen_ai.tool.name"]) for s in below if "gen_ai.tool.name" in s.attributes})
    metadata: dict[str, object] = {
        "otel_trace_id": run.trace_id,
        "otel_span_id": run.span_id,
        "agent_name": attrs.get("gen_ai.agent.name") or attrs.get("agent_name"),
        "model": model,
        "input_tokens": _int(attrs.get("gen_ai.aggregated_usage.input_tokens", attrs.get("gen_ai.usage.input_tokens"))),
        "output_tokens": _int(
            attrs.get("gen_ai.aggregated_usage.output_tokens", attrs.get("gen_ai.usage.output_tokens"))
        ),
        "tools": tools,
        "started_at": datetime.fromtimestamp(run.start_ns / 1e9, UTC).isoformat() if run.start_ns else None,
    }
    judged = outcome(run, below, above)
    return build_trace(
        {
            "source_system": source_system,
            "trace_id": f"{run.trace_id}-{run.span_id}",
            "question": question,
            "messages": messages,
            "feedback": judged.feedback,
            "reward": judged.reward,
            "metadata": {k: v for k, v in metadata.items() if v not in (None, [])},
        },
        file=file,
        line=run.line,
        locate=lambda f: f"{run.path} ({f})",
    )


def import_otel(path: str | os.PathLike[str], *, source_system: str = "otel") -> ImportedCollection:
    """Convert an OTLP JSON file of GenAI spans; one trace per agent run, in the order the runs started."""
    traces = traces_from_spans(read_otlp_spans(path), file=str(path), source_system=source_system)
    models = {str(t.metadata["model"]) for t in traces if "model" in t.metadata}
    return ImportedCollection(
        traces=traces,
        source_system=source_system,
        models={"agent": models.pop()} if len(models) == 1 else {},
        metadata={"importer": "otel", "source_file": Path(path).name},
    )


def traces_from_spans(spans: list[Span], *, file: str, source_system: str = "otel") -> list[Trace]:
    """One trace per agent run among `spans` (of one or more OTel traces), in the order the runs started; `file`
    names where the spans came from in errors. `ace-eval serve` assembles the spans it receives with it."""
    children: dict[str, list[Span]] = defaultdict(list)
    by_id = {s.span_id: s for s in spans}
    for span in spans:
        if span.parent_id:
            children[span.parent_id].append(span)

    def below(span: Span) -> list[Span]:
        """The spans inside `span` that belong to its run: a nested agent run's span is one of them, what that run
        did is not (its model calls must not stand for this run's conversation)."""
        out, todo = [], list(children[span.span_id])
        while todo:
            child = todo.pop()
            out.append(child)
            if not is_agent_span(child):
                todo += children[child.span_id]
        return out

    def above(span: Span) -> list[Span]:
        """The spans around `span`, nearest first."""
        out: list[Span] = []
        parent = by_id.get(span.parent_id or "")
        while parent is not None and parent not in out:
            out.append(parent)
            parent = by_id.get(parent.parent_id or "")
        return out

    def inside_agent(span: Span) -> bool:
        return any(is_agent_span(parent) for parent in above(span))

    runs = [s for s in spans if is_agent_span(s) and not inside_agent(s)]
    covered = {s.trace_id for s in runs}
    for trace_id in dict.fromkeys(s.trace_id for s in spans if s.trace_id not in covered):
        roots = [s for s in spans if s.trace_id == trace_id and s.parent_id not in by_id]
        runs += [r for r in roots if any(_INPUT in s.attributes for s in [r, *below(r)])]
    if not runs:
        raise CollectionError(
            f"no agent run among {len(spans)} spans: no `invoke_agent` span and no model call with "
            "`gen_ai.input.messages`; instrument the agent (logfire.instrument_pydantic_ai()) and export its spans",
            file=file,
        )
    runs.sort(key=lambda s: s.start_ns)
    return [_trace(r, below(r), above(r), file, source_system) for r in runs]
