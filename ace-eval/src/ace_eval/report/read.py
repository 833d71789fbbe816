"""Everything the report shows about one run folder, read in one place (`read_report_run`).

The page holds only what the folder holds, read through `ace_eval.run.read.read_run`: `run.json`, `samples.jsonl`,
the sessions rebuilt from `spans.jsonl`, the learned skillbook, and the collections trained on and evaluated (the
run redacted the collection it trained on when it installed it, with its own patterns and allow-list).
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeGuard

from ace import json_safe
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
    skipped_traces: int = 0
    """Lines of `collection/traces.jsonl` the page leaves out: not JSON within the safe reader's limits, or fields
    of other shapes (a hand-edited or hostile folder)."""


def read_report_run(path: Path) -> ReportRun:
    """Read a run folder for the report (through `read_run`); raises `UserError` naming the fix when it is not one."""
    _refuse_links_out(path)
    try:
        run = read_run(path)
    except RunFolderError as e:
        raise UserError(f"{e} (`ace-eval runs` lists the run folders)") from None
    try:
        skillbook: Skillbook | None = run.skillbook.book
    except RunSkillbookError:
        skillbook = None  # a run stopped before its first snapshot: the page shows its samples without skills
    traces, skipped = _traces(path, run.folder.collection)
    return ReportRun(
        path=path,
        record=run.record,
        view=run.view(),
        skillbook=skillbook,
        traces=traces,
        skipped_traces=skipped,
        baseline=list(_episodes(run.folder.baseline)) or _collected(run),
        evaluation=list(_episodes(run.folder.evaluation)),
    )


def _collected(run: Run) -> list[Trace]:
    """The episodes the agent ran to collect the traces (a run without `--traces`): the benchmark's "before"."""
    replayed = run.record.config.traces is not None
    return [] if replayed else list(_episodes(run.folder.collection))


def _episodes(directory: Path) -> Iterable[Trace]:
    if not (directory / MANIFEST_FILE).is_file():
        return iter(())
    for name in (MANIFEST_FILE, TRACES_FILE):
        _refuse_outside(directory.parent, directory / name)
    return iter_collection(directory)


def _traces(run_path: Path, directory: Path) -> tuple[dict[str, dict[str, Any]], int]:
    """The traces trained on, by uid, as `collection/traces.jsonl` holds them (redacted when the run was: the run
    installs the collection through its redactor), and how many lines were skipped. Each line is read by the safe
    reader and only the fields the page shows are kept; a line that is not JSON within its limits (a torn last
    line, nesting too deep, a 10,000-digit integer) or whose fields have other shapes is skipped and counted. A
    10,000-trace folder reads in a second this way."""
    path = directory / TRACES_FILE
    out: dict[str, dict[str, Any]] = {}
    if not path.is_file():
        return out, 0
    _refuse_outside(run_path, path)
    try:
        data = json_safe.read_bytes(path)
    except json_safe.JsonInputError as e:
        raise UserError(str(e)) from None
    skipped = 0
    for number, line in enumerate(data.split(b"\n"), start=1):
        if not line.strip():
            continue
        try:
            record = json_safe.loads(line, file=str(path), line=number)
        except json_safe.JsonInputError:
            skipped += 1
            continue
        if not _shown_shape(record):
            skipped += 1
            continue
        uid = record.get("trace_uid") or f"{record.get('source_system')}:{record.get('trace_id')}"
        out[str(uid)] = {key: record.get(key) for key in _TRACE_FIELDS} | {"trace_uid": uid}
    return out, skipped


def _shown_shape(record: object) -> TypeGuard[dict[str, Any]]:
    """Whether a record's fields the page shows have the collection's shapes (a list of message objects...)."""
    if not isinstance(record, dict):
        return False
    messages, reward = record.get("messages"), record.get("reward")
    return (
        isinstance(messages, list)
        and all(isinstance(m, dict) for m in messages)
        and all(isinstance(record.get(k), str | None) for k in ("question", "trace_uid", "source_system"))
        and isinstance(record.get("task_id"), str | int | None)
        and isinstance(record.get("trace_id"), str | int | None)
        and (reward is None or (isinstance(reward, int | float) and not isinstance(reward, bool)))
    )


def _refuse_links_out(run_path: Path) -> None:
    """Refuse a run folder holding a link (to a file or a folder) that leads out of it: `run.json`, `spans.jsonl`,
    the skillbook and the collections are all read into the page."""
    if not run_path.is_dir():
        return  # `read_run` says what is wrong
    for folder, dirs, files in os.walk(run_path):  # links to folders are listed, not followed
        for name in (*dirs, *files):
            entry = Path(folder, name)
            if entry.is_symlink():
                _refuse_outside(run_path, entry)


def _refuse_outside(run_path: Path, path: Path) -> None:
    """Refuse a file that is, or lies under, a link leading out of the run folder: the page holds what the folder
    holds, never a file elsewhere on the machine."""
    target, root = path.resolve(), run_path.resolve()
    if not target.is_relative_to(root):
        raise UserError(
            f"{path} links outside the run folder (to {target}): the report reads only what the folder holds; "
            "copy the file into the folder instead of linking it"
        )


_TRACE_FIELDS = ("task_id", "question", "messages", "reward", "feedback")
