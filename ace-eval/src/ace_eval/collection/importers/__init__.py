"""Importers: traces from tau-bench, tau2-bench and plain OpenAI-style JSONL, converted to `Trace`s."""

from __future__ import annotations

import os
from typing import Literal, assert_never

from ace_eval.collection.importers._common import ImportedCollection
from ace_eval.collection.importers.openai_jsonl import import_openai_jsonl
from ace_eval.collection.importers.tau2 import import_tau2
from ace_eval.collection.importers.tau_bench import import_tau_bench
from ace_eval.collection.model import CollectionError

__all__ = [
    "IMPORT_FORMATS",
    "ImportFormat",
    "ImportedCollection",
    "import_openai_jsonl",
    "import_tau2",
    "import_tau_bench",
    "import_traces",
]

ImportFormat = Literal["tau-bench", "tau2", "openai-jsonl"]
IMPORT_FORMATS: tuple[ImportFormat, ...] = ("tau-bench", "tau2", "openai-jsonl")


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
    return imported
