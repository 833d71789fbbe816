"""Everything the report shows about one run folder, read in one place (`read_report_run`).

The page holds only what the folder holds, read through `ace_eval.run.read.read_run`: `run.json`, `samples.jsonl`,
the sessions rebuilt from `spans.jsonl`, the learned skillbook, and the collections trained on and evaluated (the
run redacted the collection it trained on when it installed it, with its own patterns and allow-list).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ace.core.skillbook import Skillbook
from ace.exceptions import UserError
from ace_eval.collection import MANIFEST_FILE, TRACES_FILE, Trace, iter_collection
from ace_eval.run.folder import RunFolderError
from ace_eval.run.read import Run, RunSkillbookError, read_run
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
    """The traces trained on, by `trace_uid` as the samples name them (as the folder holds them: redacted when the
    run redacted)."""
    baseline: list[Trace]
    """The benchmark episodes before learning: `baseline/`, or the collected episodes of a run without `--traces`
    (empty when the agent did not run)."""
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
    return ReportRun(
        path=path,
        record=run.record,
        view=run.view(),
        skillbook=skillbook,
        traces=_traces(run.folder.collection),
        baseline=list(_episodes(run.folder.baseline)) or _collected(run),
        evaluation=list(_episodes(run.folder.evaluation)),
    )


def _collected(run: Run) -> list[Trace]:
    """The episodes the agent ran to collect the traces (a run without `--traces`): the benchmark's "before"."""
    replayed = (run.record.config.model_extra or {}).get("traces") is not None
    return [] if replayed else list(_episodes(run.folder.collection))


def _episodes(directory: Path) -> Iterable[Trace]:
    if not (directory / MANIFEST_FILE).is_file():
        return iter(())
    return iter_collection(directory)


def _traces(directory: Path) -> dict[str, dict[str, Any]]:
    """The traces trained on, by uid, as `collection/traces.jsonl` holds them (redacted when the run was: the run
    installs the collection through its redactor). Read as plain JSON, the fields the page shows: the run checked
    the collection when it installed it, and a 10,000-trace folder reads in a second this way."""
    path = directory / TRACES_FILE
    out: dict[str, dict[str, Any]] = {}
    if not path.is_file():
        return out
    with path.open(encoding="utf-8") as f:
        for line in f:
            try:
                data = json.loads(line)
            except json.JSONDecodeError:
                continue  # a torn last line
            if not isinstance(data, dict):
                continue
            uid = data.get("trace_uid") or f"{data.get('source_system')}:{data.get('trace_id')}"
            out[str(uid)] = {key: data.get(key) for key in _TRACE_FIELDS} | {"trace_uid": uid}
    return out


_TRACE_FIELDS = ("task_id", "question", "messages", "reward", "feedback")
