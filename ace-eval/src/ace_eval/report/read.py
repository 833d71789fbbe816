"""Everything the report shows about one run folder, read in one place (`read_report_run`).

The page holds only what the folder holds, read through `ace_eval.run.read.read_run`: `run.json`, `samples.jsonl`,
the sessions rebuilt from `spans.jsonl`, the learned skillbook, and the collections trained on and evaluated,
whose traces are shown redacted exactly as the run's `redact` step redacted them for the reflector.
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
from ace_eval.run.folder import RunFolderError
from ace_eval.run.read import RunSkillbookError, read_run
from ace_eval.run.record import RunRecord
from ace_eval.run.sessions import RunView

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
    """Read a run folder for the report (through `read_run`); raises `UserError` naming the fix when it is not one."""
    try:
        run = read_run(path)
    except RunFolderError as e:
        raise UserError(f"{e} (`ace-eval runs` lists the run folders)") from None
    try:
        skillbook: Skillbook | None = run.skillbook.book
    except RunSkillbookError:
        skillbook = None  # a run stopped before its first snapshot: the page shows its samples without skills
    config = run.record.config.model_dump(mode="json")
    redactor = _redactor(config) if config.get("redact", True) else None
    return ReportRun(
        path=path,
        record=run.record,
        view=run.view(),
        skillbook=skillbook,
        traces=_traces(_episodes(run.folder.collection), redactor),
        baseline=list(_episodes(run.folder.baseline)),
        evaluation=list(_episodes(run.folder.evaluation)),
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
