"""Importers: traces from tau-bench, tau2-bench and plain OpenAI-style JSONL, converted to `Trace`s."""

from __future__ import annotations

import os
from typing import Literal, assert_never

from ace_eval.collection.importers._common import ImportedCollection
from ace_eval.collection.importers.openai_jsonl import import_openai_jsonl
from ace_eval.collection.importers.tau2 import import_tau2
from ace_eval.collection.importers.tau_bench import import_tau_bench

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
    """Convert `path` from `format`; `source_system` overrides the importer's default name."""
    if format == "tau-bench":
        return import_tau_bench(path, source_system=source_system)
    if format == "tau2":
        return import_tau2(path, source_system=source_system)
    if format == "openai-jsonl":
        return import_openai_jsonl(path, source_system=source_system or "openai-jsonl")
    assert_never(format)
