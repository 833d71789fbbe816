"""Importers: traces from tau-bench, tau2-bench, OpenAI-style JSONL, OpenTelemetry GenAI spans and Claude Code."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Literal, assert_never

from ace import json_safe
from ace_eval.collection.importers._common import ImportedCollection, check_writable, read_source
from ace_eval.collection.importers.claude_code import import_claude_code, looks_like_claude_code
from ace_eval.collection.importers.openai_jsonl import import_openai_jsonl
from ace_eval.collection.importers.otel import import_otel
from ace_eval.collection.importers.otlp import is_logfire_records
from ace_eval.collection.importers.tau2 import import_tau2
from ace_eval.collection.importers.tau_bench import import_tau_bench
from ace_eval.collection.model import CollectionError

__all__ = [
    "IMPORT_FORMATS",
    "ImportFormat",
    "ImportedCollection",
    "import_claude_code",
    "import_openai_jsonl",
    "import_otel",
    "import_tau2",
    "import_tau_bench",
    "import_traces",
    "sniff_format",
]

ImportFormat = Literal["tau-bench", "tau2", "openai-jsonl", "otel", "claude-code"]
IMPORT_FORMATS: tuple[ImportFormat, ...] = ("tau-bench", "tau2", "openai-jsonl", "otel", "claude-code")


def import_traces(
    format: ImportFormat, path: str | os.PathLike[str], *, source_system: str | None = None
) -> ImportedCollection:
    """Convert `path` from `format`; `source_system` overrides the importer's default name. Refuses a source in
    which two runs have the same trace id (before anything is written)."""
    if format == "tau-bench":
        imported = import_tau_bench(path, source_system=source_system)
    elif format == "tau2":
        imported = import_tau2(path, source_system=source_system)
    elif format == "openai-jsonl":
        imported = import_openai_jsonl(path, source_system=source_system or "openai-jsonl")
    elif format == "otel":
        imported = import_otel(path, source_system=source_system or "otel")
    elif format == "claude-code":
        imported = import_claude_code(path, source_system=source_system or "claude-code")
    else:
        assert_never(format)
    seen: dict[str, int] = {}
    for n, trace in enumerate(imported.traces):
        if trace.trace_id in seen:
            raise CollectionError(
                f"run {n + 1} has the trace id {trace.trace_id!r} of run {seen[trace.trace_id] + 1}: remove the "
                "repeated run, or give each its own id (tau-bench: task_id and trial; openai-jsonl: id)",
                file=str(path),
            )
        seen[trace.trace_id] = n
    check_writable(imported.traces, file=str(path))
    return imported


def _first_value(path: Path) -> tuple[object, json_safe.JsonInputError | None]:
    """The whole file parsed as JSON, else its first non-empty line parsed; when neither parses, None and why the
    whole file is not JSON (None when only its first MiB was read)."""
    limit = 1 << 20
    head = read_source(path, head=limit + 1)
    whole_read = len(head) <= limit
    head = head[:limit]
    text = head.decode("utf-8", errors="replace")
    try:
        return json_safe.loads(text), None
    except json_safe.JsonInputError as e:  # not JSON as a whole (a JSON-lines file), or over the limits
        why = e if whole_read else None
    line = next((line for line in text.split("\n") if line.strip()), "")
    try:
        return json_safe.loads(line), None
    except ValueError:
        return None, why


def sniff_format(path: str | os.PathLike[str]) -> ImportFormat:
    """The format of a trace file, told from its first record; raises naming `--format` when it is unknown, and
    where the JSON breaks when the file is not JSON at all."""
    p = Path(path)
    value, why = _first_value(p)
    if (isinstance(value, dict) and "resourceSpans" in value) or is_logfire_records(value):
        return "otel"
    if looks_like_claude_code(value):
        return "claude-code"
    if isinstance(value, dict) and "simulations" in value:
        return "tau2"
    if isinstance(value, list) and value and all(isinstance(v, dict) and "traj" in v for v in value[:5]):
        return "tau-bench"
    if isinstance(value, list) or (isinstance(value, dict) and "messages" in value):
        return "openai-jsonl"
    if why is not None and why.kind == "syntax" and why.line is not None:
        where = f"line {why.line}" + (f", column {why.column}" if why.column else "")
        raise CollectionError(
            f"not valid JSON at {where} ({why.reason.removeprefix('not valid JSON (').removesuffix(')')}): a trace "
            f"file is JSON or JSON lines ({', '.join(IMPORT_FORMATS)}); fix the file, or check that it is the one "
            "you meant",
            file=str(p),
        )
    raise CollectionError(
        f"cannot tell the format of this file: pass --format ({', '.join(IMPORT_FORMATS)}), "
        "or import it first with `ace-eval collection import`",
        file=str(p),
    )
