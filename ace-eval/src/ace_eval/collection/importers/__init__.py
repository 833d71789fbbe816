"""Importers: traces from tau-bench, tau2-bench, OpenAI-style JSONL, OpenTelemetry GenAI spans and Claude Code."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Literal, assert_never

from ace_eval.collection.importers._common import ImportedCollection
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
    """Convert `path` from `format`; `source_system` overrides the importer's default name."""
    if format == "tau-bench":
        return import_tau_bench(path, source_system=source_system)
    if format == "tau2":
        return import_tau2(path, source_system=source_system)
    if format == "openai-jsonl":
        return import_openai_jsonl(path, source_system=source_system or "openai-jsonl")
    if format == "otel":
        return import_otel(path, source_system=source_system or "otel")
    if format == "claude-code":
        return import_claude_code(path, source_system=source_system or "claude-code")
    assert_never(format)


def _first_value(path: Path) -> object:
    """The whole file parsed as JSON, else its first non-empty line parsed; None when neither parses."""
    with path.open("rb") as f:
        head = f.read(1 << 20)
    text = head.decode("utf-8", errors="replace")
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        pass
    line = next((line for line in text.split("\n") if line.strip()), "")
    try:
        return json.loads(line)
    except json.JSONDecodeError:
        return None


def sniff_format(path: str | os.PathLike[str]) -> ImportFormat:
    """The format of a trace file, told from its first record; raises naming `--format` when it is unknown."""
    p = Path(path)
    value = _first_value(p)
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
    raise CollectionError(
        f"cannot tell the format of this file: pass --format ({', '.join(IMPORT_FORMATS)}), "
        "or import it first with `ace-eval collection import`",
        file=str(p),
    )
