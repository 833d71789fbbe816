"""Claude Code session transcripts (`~/.claude/projects/<project>/<session>.jsonl`), one trace per session.

Each line is an entry: `user` and `assistant` entries carry an Anthropic `message` (`content` a string or
blocks: `text`, `tool_use`, `tool_result`, `thinking`); an assistant message streamed over several lines (same
`message.id`) becomes one message. Side-chain (sub-agent) and meta entries are left out; `summary` lines go to
the metadata. SRC is a session file or a folder of them.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path

from ace_eval.collection.chat import tool_arguments
from ace_eval.collection.importers._common import ImportedCollection, build_trace, parse_source, read_source
from ace_eval.collection.model import CollectionError, Trace

__all__ = ["import_claude_code", "looks_like_claude_code"]


def looks_like_claude_code(entry: object) -> bool:
    """True for a parsed line that is a Claude Code transcript entry."""
    if not isinstance(entry, dict):
        return False
    return ("sessionId" in entry and entry.get("type") in ("user", "assistant")) or (
        entry.get("type") == "summary" and "leafUuid" in entry
    )


@dataclass
class _Session:
    session_id: str
    messages: list[dict[str, object]] = field(default_factory=list[dict[str, object]])
    called: set[str] = field(default_factory=set[str])
    last_message_id: str | None = None
    metadata: dict[str, object] = field(default_factory=dict[str, object])
    first_line: int = 0


def _text_of(content: object) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [
            b.get("text") if b.get("type") == "text" else f"[{b.get('type')}]" for b in content if isinstance(b, dict)
        ]
        return "\n".join(str(p) for p in parts)
    return json.dumps(content, ensure_ascii=False)


class _Reader:
    def __init__(self, file: str) -> None:
        self.file = file
        self.sessions: dict[str, _Session] = {}
        self.summaries: list[str] = []

    def error(self, message: str, line: int, field: str | None = None) -> CollectionError:
        return CollectionError(message, file=self.file, line=line, field=field)

    def entry(self, raw: object, line: int) -> None:
        if not isinstance(raw, dict):
            raise self.error(f"an entry is a JSON object, got {type(raw).__name__}", line)
        kind = raw.get("type")
        if kind == "summary" and isinstance(raw.get("summary"), str):
            self.summaries.append(raw["summary"])
        if not isinstance(kind, str):
            raise self.error("missing: the entry's kind (user, assistant, summary...)", line, "type")
        if kind not in ("user", "assistant") or raw.get("isSidechain") or raw.get("isMeta"):
            return
        session_id = raw.get("sessionId")
        if not isinstance(session_id, str) or not session_id:
            raise self.error(f"missing or not a string, got {session_id!r:.40}", line, "sessionId")
        session = self.sessions.setdefault(session_id, _Session(session_id, first_line=line))
        for key, name in (("cwd", "cwd"), ("gitBranch", "git_branch"), ("version", "claude_code_version")):
            if isinstance(raw.get(key), str):
                session.metadata.setdefault(name, raw[key])
        if isinstance(raw.get("timestamp"), str):
            session.metadata.setdefault("started_at", raw["timestamp"])
        message = raw.get("message")
        if not isinstance(message, dict):
            raise self.error(f"missing or not an object, got {message!r:.40}", line, "message")
        content = message.get("content")
        if not isinstance(content, str | list):
            raise self.error(f"must be a string or a list of blocks, got {content!r:.40}", line, "message.content")
        if kind == "user":
            self.user(session, content, line)
        else:
            if isinstance(message.get("model"), str):
                session.metadata.setdefault("model", message["model"])
            self.assistant(session, message.get("id"), content, line)

    def user(self, session: _Session, content: str | list[object], line: int) -> None:
        session.last_message_id = None
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
        texts = []
        for i, block in enumerate(blocks):
            if not isinstance(block, dict):
                raise self.error("a content block is an object", line, f"message.content[{i}]")
            if block.get("type") == "tool_result":
                call_id = block.get("tool_use_id")
                if not isinstance(call_id, str) or call_id not in session.called:
                    raise self.error(
                        f"{call_id!r:.40} answers no earlier tool_use of the session",
                        line,
                        f"message.content[{i}].tool_use_id",
                    )
                text = _text_of(block.get("content", ""))
                error = "[error] " if block.get("is_error") else ""
                session.messages.append({"role": "tool", "tool_call_id": call_id, "content": error + text})
            elif block.get("type") == "text":
                texts.append(str(block.get("text", "")))
            else:
                texts.append(f"[{block.get('type')}]")
        if texts:
            session.messages.append({"role": "user", "content": "\n".join(texts)})

    def assistant(self, session: _Session, message_id: object, content: str | list[object], line: int) -> None:
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
        same = isinstance(message_id, str) and message_id == session.last_message_id
        if same and session.messages and session.messages[-1]["role"] == "assistant":
            current = session.messages[-1]
        else:
            current = {"role": "assistant", "content": None}
            session.messages.append(current)
        session.last_message_id = message_id if isinstance(message_id, str) else None
        for i, block in enumerate(blocks):
            if not isinstance(block, dict):
                raise self.error("a content block is an object", line, f"message.content[{i}]")
            if block.get("type") == "text":
                previous = current["content"]
                current["content"] = f"{previous}\n{block.get('text', '')}" if previous else str(block.get("text", ""))
            elif block.get("type") == "tool_use":
                name, call_id = block.get("name"), block.get("id")
                if not isinstance(name, str) or not name or not isinstance(call_id, str) or not call_id:
                    raise self.error("a tool_use block needs a string `id` and `name`", line, f"message.content[{i}]")
                arguments = block.get("input")
                session.called.add(call_id)
                calls = current.setdefault("tool_calls", [])
                assert isinstance(calls, list)
                calls.append(
                    {
                        "id": call_id,
                        "type": "function",
                        "function": {
                            "name": name,
                            "arguments": tool_arguments(arguments if isinstance(arguments, dict) else None),
                        },
                    }
                )
        if current["content"] is None and "tool_calls" not in current:
            session.messages.remove(current)  # a thinking-only block

    def trace(self, session: _Session, source_system: str) -> Trace:
        question = next((m["content"] for m in session.messages if m["role"] == "user"), None)
        if not question:
            raise self.error("the session has no user message to take the question from", session.first_line, "message")
        metadata = {**session.metadata, **({"summary": self.summaries[-1]} if self.summaries else {})}
        return build_trace(
            {
                "source_system": source_system,
                "trace_id": session.session_id,
                "question": question,
                "messages": session.messages,
                "metadata": metadata,
            },
            file=self.file,
            line=session.first_line,
            locate=lambda f: "sessionId" if f == "trace_id" else f,
        )


def _read_file(path: Path, source_system: str) -> list[Trace]:
    reader = _Reader(str(path))
    data = read_source(path)
    for number, raw_line in enumerate(data.split(b"\n"), start=1):
        if raw_line.strip():
            reader.entry(parse_source(raw_line, file=str(path), line=number), number)
    return [reader.trace(s, source_system) for s in reader.sessions.values() if s.messages]


def import_claude_code(path: str | os.PathLike[str], *, source_system: str = "claude-code") -> ImportedCollection:
    """Convert a Claude Code session file, or every `*.jsonl` session in a folder; one trace per session."""
    src = Path(path)
    files = sorted(src.glob("*.jsonl")) if src.is_dir() else [src]
    traces = [t for f in files for t in _read_file(f, source_system)]
    if not traces:
        raise CollectionError("no Claude Code session with a user message found", file=str(src))
    models = {str(t.metadata["model"]) for t in traces if "model" in t.metadata}
    return ImportedCollection(
        traces=traces,
        source_system=source_system,
        models={"agent": models.pop()} if len(models) == 1 else {},
        metadata={"importer": "claude-code", "source_file": src.name},
    )
