"""Redaction at the run's sinks: the traces the run folder keeps, `run.json`, and what `run.json` says was redacted.

The trainer's `redact` step cleans each trace before reflection and the skillbook redacts what it stores; these
helpers cover the rest of the folder (`collection/`, `baseline/`, `evaluation/`); `RunRecord.write` redacts
`run.json`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from ace.redaction import Redactor, count_kinds
from ace.steps.redact import TRACE_ID_FIELDS
from ace_eval.collection import CollectionManifest, Trace, write_collection
from ace_eval.run.folder import RunFolder
from ace_eval.run.record import RedactionRecord
from ace_eval.run.sample import SampleResult

__all__ = ["install_run_collection", "redact_trace", "redact_traces", "redaction_summary"]


def redact_trace(trace: Trace, redactor: Redactor | None) -> tuple[Trace, dict[str, int]]:
    """The trace with numbered placeholders (one numbering per trace), and the counts per kind."""
    if redactor is None:
        return trace, {}
    data, findings = redactor.redact_data(trace.model_dump(mode="json"), skip_keys=TRACE_ID_FIELDS)
    if not findings:
        return trace, {}
    return Trace.model_validate(data), count_kinds(findings)


def install_run_collection(
    folder: RunFolder,
    source: Path,
    manifest: CollectionManifest,
    selected: Sequence[Trace],
    *,
    redactor: Redactor | None,
    limit: int | None,
) -> dict[str, int]:
    """Put the traces trained on in the run's `collection/`: redacted (when `redactor` is set) and/or the first
    `limit` ones, else a plain copy. Returns the values replaced per kind."""
    subset = len(selected) < manifest.counts.traces
    if redactor is None and not subset and source.is_dir():
        folder.install_collection(source)
        return {}
    kept, totals = redact_traces(selected, redactor)
    write_collection(
        folder.collection,
        kept,
        source_system=manifest.source_system,
        benchmark=manifest.benchmark,
        models=manifest.models,
        description=manifest.description,
        metadata={
            **manifest.metadata,
            **({"subset_of": str(source), "limit": limit} if subset else {}),
            **({"redacted": True} if redactor is not None else {}),
        },
        redactor=redactor,
    )
    return totals


def redact_traces(traces: Iterable[Trace], redactor: Redactor | None) -> tuple[list[Trace], dict[str, int]]:
    """Each trace through `redact_trace`, and the values replaced per kind in all of them (sorted by kind)."""
    totals: dict[str, int] = {}
    kept: list[Trace] = []
    for trace in traces:
        clean, counts = redact_trace(trace, redactor)
        kept.append(clean)
        for kind, n in counts.items():
            totals[kind] = totals.get(kind, 0) + n
    return kept, dict(sorted(totals.items()))


def redaction_summary(
    enabled: bool, samples: Iterable[SampleResult], collection: Mapping[str, int] | None = None
) -> RedactionRecord:
    """`run.json`'s `redaction`: whether it was on, and how many values of each kind were replaced (never which)."""
    steps: dict[str, int] = {}
    for sample in samples:
        for kind, n in sample.redactions.items():
            steps[kind] = steps.get(kind, 0) + n
    return RedactionRecord(
        enabled=enabled, collection=dict(sorted((collection or {}).items())), redact_step=dict(sorted(steps.items()))
    )
