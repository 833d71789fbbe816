"""OpenAI-style chat conversations: JSON lines (one record per line), or one JSON document of them.

A record is a list of messages or an object with `messages`; an object may also carry `id`, `task_id`,
`question`, `reward`, `feedback`, `ground_truth` and `metadata`; without `question`, the first user message is the
question. The whole file may also be one JSON document: an array of records (`[{"question": ..., "messages":
[...]}, ...]`, the shape many tools export), a single record object, or one conversation's array of messages.
The shape read is in the collection's metadata (`shape`) and in what the commands print.
"""

from __future__ import annotations

import os
from pathlib import Path

from ace import json_safe
from ace_eval.collection.importers._common import ImportedCollection, build_trace
from ace_eval.collection.model import CollectionError, Trace

__all__ = ["ACCEPTED_KEYS", "import_openai_jsonl"]

ACCEPTED_KEYS = ("messages", "id", "task_id", "question", "reward", "feedback", "ground_truth", "metadata")
JSON_LINES, RECORD_ARRAY = "JSON lines, one chat record per line", "a JSON array of chat records"
ONE_DOCUMENT = "one JSON document holding one chat record"
_EXPECTED = (
    'expected JSON lines of chat records, or one JSON array of them: [{"question": ..., "messages": [{"role": '
    '"user", "content": ...}, ...]}, ...]'
)


def _text(content: object) -> str | None:
    """A message content as text: the string, or the text parts of a multi-part content joined."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = [p["text"] for p in content if isinstance(p, dict) and isinstance(p.get("text"), str)]
        return "\n".join(texts) if texts else None
    return None


def import_openai_jsonl(path: str | os.PathLike[str], *, source_system: str = "openai-jsonl") -> ImportedCollection:
    """Convert a file of chat conversations (JSON lines, or a JSON array of records); trace ids are the records'
    `id`s, else `line-<n>` (`record-<n>` in an array)."""
    file = str(path)
    traces: list[Trace] = []
    try:
        data = json_safe.read_bytes(path)
        whole = _whole_document(data, file)
        if isinstance(whole, list) and whole and all(isinstance(r, dict) and "role" not in r for r in whole):
            shape = RECORD_ARRAY
            for index, record in enumerate(whole):
                traces.append(_trace(record, number=index + 1, file=file, source_system=source_system, array=True))
        elif whole is not None and len([line for line in data.split(b"\n") if line.strip()]) > 1:
            shape = ONE_DOCUMENT  # a record or a conversation, pretty-printed over several lines
            traces.append(_trace(whole, number=1, file=file, source_system=source_system))
        else:
            shape = JSON_LINES
            for number, record in json_safe.iter_json_lines(data, file=file):
                traces.append(_trace(record, number=number, file=file, source_system=source_system))
    except json_safe.JsonInputError as e:
        raise CollectionError.from_json(e) from None
    return ImportedCollection(
        traces=traces,
        source_system=source_system,
        metadata={"importer": "openai-jsonl", "source_file": Path(path).name, "shape": shape},
    )


def _kind(item: object) -> str:
    if isinstance(item, dict):
        return "a message" if "role" in item else "a record"
    names = {bool: "a boolean", int: "a number", float: "a number", str: "a string", list: "a list"}
    return names.get(type(item), "null")


def _whole_document(data: bytes, file: str) -> object:
    """The file parsed as one JSON document, None when it is not one (JSON lines); an array mixing records with
    messages or other values is refused naming the shape expected."""
    try:
        whole = json_safe.loads(data, file=file)
    except json_safe.JsonInputError as e:
        if e.kind in ("depth", "integer"):
            raise
        return None  # JSON lines: each line is read (and refused, naming its line) on its own
    if isinstance(whole, list) and whole:
        kinds = [_kind(item) for item in whole]
        bad = next(
            (i for i, kind in enumerate(kinds) if kind not in ("a record", "a message") or kind != kinds[0]), None
        )
        if bad is not None:
            raise CollectionError(
                f"a JSON array of chat records or of one conversation's messages, but item {bad + 1} is {kinds[bad]}"
                f"{f' and item 1 {kinds[0]}' if bad and kinds[0] != kinds[bad] else ''}: {_EXPECTED}",
                file=file,
                field=f"[{bad}]",
            )
    return whole


def _trace(record: object, *, number: int, file: str, source_system: str, array: bool = False) -> Trace:
    """The trace of one record (a list of messages or an object with `messages`): line `number` of JSON lines,
    or item `number` (from 1) of a JSON array, whose errors name the field `[index].field`."""
    line = None if array else number

    def at(name: str | None) -> str | None:
        return f"[{number - 1}]" + (f".{name}" if name else "") if array else name

    if isinstance(record, list):
        record = {"messages": record}
    if not isinstance(record, dict):
        raise CollectionError(
            f"a {'record' if array else 'line'} is a list of messages or an object with `messages`, got "
            f"{type(record).__name__}: {_EXPECTED}",
            file=file,
            line=line,
            field=at(None),
        )
    unknown = sorted(set(record) - set(ACCEPTED_KEYS))
    if unknown:
        raise CollectionError(
            f"unknown key (accepted: {', '.join(ACCEPTED_KEYS)}); move it under `metadata`",
            file=file,
            line=line,
            field=at(unknown[0]),
        )
    if "messages" not in record:
        raise CollectionError(
            f"missing (required): the conversation; {_EXPECTED}", file=file, line=line, field=at("messages")
        )
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
                line=line,
                field=at("question"),
            )
    trace_id = record.get("id", f"record-{number}" if array else f"line-{number}")
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
        line=line,
        locate=lambda f: str(at("id" if f == "trace_id" else f)),
    )
