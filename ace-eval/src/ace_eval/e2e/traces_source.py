"""What `--traces` names: a collection folder, or a trace file of a known format imported on the fly."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path

from ace_eval import __version__
from ace_eval.collection import TRACES_FILE, CollectionError, CollectionManifest, Trace, count_traces, read_collection
from ace_eval.collection.importers import IMPORT_FORMATS, ImportFormat, import_traces, sniff_format
from ace_eval.collection.outcomes import apply_outcomes, read_outcomes
from ace_eval.run.folder import file_sha256

__all__ = ["TracesSource", "load_traces_source"]


@dataclass(frozen=True, kw_only=True)
class TracesSource:
    """The traces of a run, with the manifest they come with and the hash of the file they were read from."""

    path: Path
    manifest: CollectionManifest
    traces: list[Trace]
    sha256: str
    imported_from: str | None = None
    """The format of a `--traces` file (with the shape read, e.g. `openai-jsonl: a JSON array of chat records`),
    None for a collection folder."""


def load_traces_source(path: Path, traces_format: str | None = None, outcomes: Path | None = None) -> TracesSource:
    """Read a collection folder, or import a file (its format named or told from it, its traces judged by an
    `outcomes` file when one is given: `ace_eval.collection.outcomes`); every error names the fix."""
    if path.is_dir():
        manifest, traces = read_collection(path)
        return TracesSource(path=path, manifest=manifest, traces=traces, sha256=file_sha256(path / TRACES_FILE))
    if not path.is_file():
        raise CollectionError(
            "no such collection folder or trace file: pass --traces DIR or --traces FILE", file=str(path)
        )
    if traces_format is not None and traces_format not in IMPORT_FORMATS:
        raise CollectionError(f"unknown format {traces_format!r}: use one of {', '.join(IMPORT_FORMATS)}")
    fmt: ImportFormat = sniff_format(path) if traces_format is None else traces_format
    imported = import_traces(fmt, path)
    if outcomes is not None:
        by_id, _ = read_outcomes(outcomes)
        imported = dataclasses.replace(imported, traces=apply_outcomes(imported.traces, by_id, file=str(outcomes)))
    manifest = CollectionManifest(
        source_system=imported.source_system,
        benchmark=imported.benchmark,
        models=imported.models,
        counts=count_traces(imported.traces),
        metadata={**imported.metadata, "ace_eval_version": __version__},
    )
    shape = imported.metadata.get("shape")
    return TracesSource(
        path=path,
        manifest=manifest,
        traces=imported.traces,
        sha256=file_sha256(path),
        imported_from=f"{fmt}: {shape}" if shape else fmt,
    )
