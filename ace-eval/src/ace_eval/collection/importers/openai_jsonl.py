"""Plain JSONL of OpenAI-style chat conversations: one per line, a list of messages or an object with `messages`.

An object line may also carry `id`, `task_id`, `question`, `reward`, `feedback`, `ground_truth` and
`metadata`; without `question`, the first user message is the question.
"""

from __future__ import annotations

import os
from pathlib import Path

from ace import json_safe
from ace_eval.collection.importers._common import ImportedCollection, build_trace
from ace_eval.collection.model import CollectionError, Trace

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
    traces: list[Trace] = []
    try:
        data = json_safe.read_bytes(path)
        for number, record in json_safe.iter_json_lines(data, file=file):
            traces.append(_trace(record, number=number, file=file, source_system=source_system))
    except json_safe.JsonInputError as e:
        raise CollectionError.from_json(e) from None
    return ImportedCollection(
        traces=traces,
        source_system=source_system,
        metadata={"importer": "openai-jsonl", "source_file": Path(path).name},
    )


def _trace(record: object, *, number: int, file: str, source_system: str) -> Trace:
    """The trace of one line (a list of messages or an object with `messages`)."""
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
    return build_trace(
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
