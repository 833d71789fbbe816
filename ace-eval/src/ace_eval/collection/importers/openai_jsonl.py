"""Plain JSONL of OpenAI-style chat conversations: one per line, a list of messages or an object with `messages`.

An object line may also carry `id`, `task_id`, `question`, `reward`, `feedback`, `ground_truth` and
`metadata`; without `question`, the first user message is the question.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from ace_eval.collection.importers._common import ImportedCollection, build_trace
from ace_eval.collection.model import CollectionError

__all__ = ["ACCEPTED_KEYS", "import_openai_jsonl"]

ACCEPTED_KEYS = ("messages", "id", "task_id", "question", "reward", "feedback", "ground_truth", "metadata")


def _text(content: object) -> str | None:
    """A message content as text: the string, or the text parts of a multi-part content joined."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = [p["text"] for p in content if isinstance(p, dict) and isinstance(p.get("text"), str)]
        return "\n".join(texts) if texts else None
    return None


def import_openai_jsonl(path: str | os.PathLike[str], *, source_system: str = "openai-jsonl") -> ImportedCollection:
    """Convert a JSONL file of chat conversations; trace ids are the lines' `id`s, else `line-<n>`."""
    file = str(path)
    try:
        data = Path(path).read_bytes()
    except FileNotFoundError:
        raise CollectionError("no such file", file=file) from None
    traces = []
    for number, raw_line in enumerate(data.split(b"\n"), start=1):
        if not raw_line.strip():
            continue
        try:
            record = json.loads(raw_line.decode("utf-8"))
        except UnicodeDecodeError as e:
            raise CollectionError(f"not UTF-8 text (byte {e.start})", file=file, line=number) from None
        except json.JSONDecodeError as e:
            raise CollectionError(f"not valid JSON (column {e.colno}: {e.msg})", file=file, line=number) from None
        if isinstance(record, list):
            record = {"messages": record}
        if not isinstance(record, dict):
            raise CollectionError(
                f"a line is a list of messages or an object with `messages`, got {type(record).__name__}",
                file=file,
                line=number,
            )
        unknown = sorted(set(record) - set(ACCEPTED_KEYS))
        if unknown:
            raise CollectionError(
                f"unknown key (accepted: {', '.join(ACCEPTED_KEYS)}); move it under `metadata`",
                file=file,
                line=number,
                field=unknown[0],
            )
        if "messages" not in record:
            raise CollectionError("missing (required): the conversation", file=file, line=number, field="messages")
        messages = record["messages"]
        question = record.get("question")
        if question is None and isinstance(messages, list):
            question = next(
                (_text(m.get("content")) for m in messages if isinstance(m, dict) and m.get("role") == "user"), None
            )
            if question is None:
                raise CollectionError(
                    "no user message to take the question from: add a `question`",
                    file=file,
                    line=number,
                    field="question",
                )
        trace_id = record.get("id", f"line-{number}")
        task_id = record.get("task_id")
        traces.append(
            build_trace(
                {
                    "source_system": source_system,
                    "trace_id": str(trace_id) if isinstance(trace_id, int) else trace_id,
                    "task_id": str(task_id) if isinstance(task_id, int) else task_id,
                    "question": question,
                    "messages": messages,
                    "reward": record.get("reward"),
                    "feedback": record.get("feedback"),
                    "ground_truth": record.get("ground_truth"),
                    "metadata": record.get("metadata") or {},
                },
                file=file,
                line=number,
                locate=lambda f: "id" if f == "trace_id" else f,
            )
        )
    return ImportedCollection(
        traces=traces,
        source_system=source_system,
        metadata={"importer": "openai-jsonl", "source_file": Path(path).name},
    )
