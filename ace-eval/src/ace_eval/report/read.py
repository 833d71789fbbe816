"""Everything the report shows about one run folder, read in one place (`read_report_run`).

The page holds only what the folder holds: `run.json`, `samples.jsonl`, `spans.jsonl` (through the sessions of
`ace_eval.run.sessions`), the learned skillbook, and the collections trained on and evaluated, whose traces are
shown redacted exactly as the run's `redact` step redacted them for the reflector.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ace.core.skillbook import Skillbook
from ace.exceptions import UserError
from ace.redaction import Redactor
from ace.steps.redact import TRACE_ID_FIELDS
from ace_eval.collection import MANIFEST_FILE, Trace, iter_collection
from ace_eval.run.folder import RunFolder
from ace_eval.run.record import RunRecord, RunRecordError, load_run_record
from ace_eval.run.sessions import RunView, load_run_view

__all__ = ["ReportRun", "read_report_run"]


@dataclass(frozen=True, kw_only=True)
class ReportRun:
    """One run folder as the report reads it."""

    path: Path
    record: RunRecord
    view: RunView
    """The samples, each with its sessions (tool calls, refusals)."""
    skillbook: Skillbook | None
    """The learned skillbook (published, else the checkpoint's snapshot); `None` when the folder has none."""
    traces: dict[str, dict[str, Any]]
    """The traces trained on, by `trace_uid` as the samples name them (redacted when the run redacted)."""
    baseline: list[Trace]
    """The benchmark episodes before learning (empty when the agent did not run)."""
    evaluation: list[Trace]
    """The benchmark episodes after learning."""


def read_report_run(path: Path) -> ReportRun:
    """Read a run folder for the report; raises `UserError` naming the fix when it is not one."""
    folder = RunFolder(path)
    if not folder.run_json.is_file():
        raise UserError(
            f"{path} is not a run folder (it has no run.json): pass a folder written by `ace-eval e2e`, "
            "e.g. results/e2e/run_0123456789ab (`ace-eval runs` lists them)"
        )
    try:
        record = load_run_record(folder.run_json)
    except RunRecordError as e:
        raise UserError(str(e)) from None
    data = record.model_dump(mode="json", exclude_unset=True)
    book_path = folder.learned_skillbook(data)
    skillbook = Skillbook.load_from_file(book_path) if book_path.is_file() else None
    config = record.config.model_dump(mode="json")
    redactor = _redactor(config) if config.get("redact", True) else None
    return ReportRun(
        path=path,
        record=record,
        view=load_run_view(path),
        skillbook=skillbook,
        traces=_traces(_episodes(folder.collection), redactor),
        baseline=list(_episodes(folder.baseline)),
        evaluation=list(_episodes(folder.evaluation)),
    )


def _redactor(config: dict[str, Any]) -> Redactor:
    """The run's own redaction settings (its extra patterns and allow-list)."""
    return Redactor(
        extra_patterns=config.get("redaction_patterns") or {},
        allow=config.get("redaction_allow") or (),
        allow_patterns=config.get("redaction_allow_patterns") or (),
    )


def _episodes(directory: Path) -> Iterable[Trace]:
    if not (directory / MANIFEST_FILE).is_file():
        return iter(())
    return iter_collection(directory)


def _traces(traces: Iterable[Trace], redactor: Redactor | None) -> dict[str, dict[str, Any]]:
    """Each trace as JSON, redacted as the `redact` step redacts (ids by their stable placeholder)."""
    out: dict[str, dict[str, Any]] = {}
    for trace in traces:
        data = trace.model_dump(mode="json", include={"trace_uid", "task_id", "question", "messages", "reward"})
        if redactor is not None:
            data, _ = redactor.redact_data(data, skip_keys=TRACE_ID_FIELDS)
        out[str(data["trace_uid"])] = data
    return out
