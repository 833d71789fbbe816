"""`read_run(path)`: the one typed reader of a run folder, for every command that looks at one (as inspect_ai's
`read_eval_log` is for its logs). It writes nothing: a torn journal line is left for `--resume` to cut.

`Run` holds the folder, its `run.json` (`RunRecord`) and its samples; the skillbook, the journal's numbered lines,
the spans and the sessions are read on first use, so `inspect` never loads a skillbook it does not show.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

from ace.core.skillbook import Skillbook
from ace.exceptions import AceError
from ace.observability import read_spans_jsonl
from ace_eval.run.checkpoint import CheckpointError, journal_end, read_checkpoint, snapshot_of
from ace_eval.run.folder import RunFolder, RunFolderError
from ace_eval.run.record import RunRecord, load_run_record
from ace_eval.run.sample import SampleResult
from ace_eval.run.samples import load_samples, numbered_sample_lines
from ace_eval.run.sessions import RunView, sample_views

__all__ = ["Run", "RunSkillbook", "RunSkillbookError", "read_run"]

_UNREADABLE = (AceError, OSError, ValueError, RecursionError)
"""What loading a skillbook file raises when the file is damaged (`SkillbookFormatError`, bad JSON, too deep)."""


class RunSkillbookError(RunFolderError):
    """A run folder none of whose skillbook files can be read; the message names each file and the fix."""

    def __init__(self, message: str, *, damaged: bool) -> None:
        super().__init__(message)
        self.damaged = damaged
        """A skillbook file is there but cannot be read; `False`: the run saved none yet (it stopped early)."""


@dataclass(frozen=True, kw_only=True)
class RunSkillbook:
    """A run's skillbook and the file it came from."""

    book: Skillbook
    source: Path
    """The file read: the published skillbook, or the checkpoint's snapshot (with `journal` replayed over it)."""
    journal: Path | None = None
    """The samples journal replayed over the snapshot; `None` when `source` is the published file as it is."""
    published: Path | None = None
    """The file the run publishes (its `persist` step's); `None` for a run that left the step out."""
    passed_over: str | None = None
    """Why the published file was not read (missing, damaged, or older than the journal); `None` when it was."""
    published_error: str | None = None
    """Why the published file cannot be read, when it is there but damaged."""

    def describe(self) -> str:
        """Where the skillbook came from, e.g. `<run>/skillbook.snapshot.json + samples.jsonl (skillbook.json cannot
        be read: ...)`, for a command's output."""
        text = str(self.source) + (f" + {self.journal.name}" if self.journal is not None else "")
        return text + (f" ({self.passed_over})" if self.passed_over else "")


@dataclass(frozen=True)
class Run:
    """A run folder as its readers see it; read with `read_run`."""

    folder: RunFolder
    record: RunRecord
    """`run.json`."""
    samples: tuple[SampleResult, ...]
    """One result per (trace_uid, epoch) from `samples.jsonl` (a retry replaces its failed attempt), first recorded
    first; a torn last line is left out."""

    @property
    def path(self) -> Path:
        return self.folder.path

    @cached_property
    def skillbook(self) -> RunSkillbook:
        """The learned skillbook: the published file, else (missing, damaged, or older than the journal: a resumed
        run still training) the checkpoint's snapshot with the journal replayed; raises `RunSkillbookError`."""
        return _load_skillbook(self.folder, self.step_output("persist", self.folder.skillbook.name))

    def step_output(self, step: str, default: str) -> Path | None:
        """The file the end-of-run `step` wrote (its `path` option), `None` when the run left the step out."""
        return self.folder.step_output(self.record, step, default)

    def sample_lines(self) -> list[tuple[int, SampleResult]]:
        """Every line of the samples journal with its number, superseded attempts included; raises
        `SamplesJournalError` naming a damaged line."""
        return numbered_sample_lines(self.folder.samples) if self.folder.samples.is_file() else []

    @property
    def has_spans(self) -> bool:
        return self.folder.spans.is_file()

    def spans(self) -> list[dict[str, Any]]:
        """Every span of `spans.jsonl` (none when the run recorded no spans)."""
        return read_spans_jsonl(self.folder.spans) if self.has_spans else []

    def view(self, spans: list[dict[str, Any]] | None = None) -> RunView:
        """The samples with their sessions and tool calls, rebuilt from the spans (what `ace-eval inspect` shows);
        `spans`: `spans()` already read (the file is read once)."""
        return RunView(
            path=self.path,
            run=self.record,
            samples=sample_views(self.samples, self.spans() if spans is None else spans),
            has_spans=self.has_spans,
        )


def read_run(path: Path) -> Run:
    """The run folder at `path`, read without writing anything.

    Raises:
        RunFolderError: `path` is not a run folder (no `run.json`).
        RunRecordError: its `run.json` cannot be read or does not have the shape `ace-eval e2e` writes.
    """
    folder = RunFolder.open(path)
    return Run(folder, load_run_record(folder.run_json), tuple(load_samples(folder.samples)))


def _load_skillbook(folder: RunFolder, published: Path | None) -> RunSkillbook:
    passed_over: str | None = None
    error: str | None = None
    if published is None:
        passed_over = "the run publishes no skillbook: it left out the persist step"
    elif not published.is_file():
        passed_over = f"{published.name} is not there yet: the run has not finished"
    else:
        try:
            book = Skillbook.load_from_file(published)
        except _UNREADABLE as e:
            error = _reason(e).removeprefix(f"{published}: ").removeprefix(f"{published}, ")  # named once
            passed_over = f"{published.name} cannot be read: {error}"
        else:
            end = journal_end(folder.path)
            if end is None or book.operations_count >= end:
                return RunSkillbook(book=book, source=published, published=published)
            passed_over = f"{published.name} is older than the journal: the run was resumed and has not finished"
    snapshot = snapshot_of(folder.path)  # a folder from before the snapshot's own name: the published file itself
    if not snapshot.is_file() or (snapshot == published and error is not None):
        raise RunSkillbookError(_no_skillbook(folder, published, passed_over, error), damaged=error is not None)
    try:
        book = read_checkpoint(folder.path)
    except (CheckpointError, *_UNREADABLE) as e:
        raise RunSkillbookError(
            f"{_reason(e)} ({passed_over}): the run's skillbook cannot be read; restore {snapshot.name} and "
            f"{folder.samples.name} from a copy, or start a new run. Nothing was changed",
            damaged=True,
        ) from None
    journal = folder.samples if folder.samples.is_file() else None
    return RunSkillbook(
        book=book, source=snapshot, journal=journal, published=published, passed_over=passed_over, published_error=error
    )


def _no_skillbook(folder: RunFolder, published: Path | None, passed_over: str | None, error: str | None) -> str:
    """Why a run folder has no skillbook to read, and the fix."""
    snapshot = folder.snapshot.name
    if published is not None and error is not None:
        return (
            f"{published} cannot be read ({error}), and {folder.path} has no checkpoint snapshot ({snapshot}) to "
            f"rebuild the skillbook from: restore {published.name} from a copy, or start a new run. Nothing was changed"
        )
    return (
        f"{folder.path} holds no skillbook yet ({passed_over}, and no {snapshot}): the run stopped before its first "
        f"snapshot; continue it with `ace-eval e2e --resume {folder.path}`"
    )


def _reason(e: BaseException) -> str:
    return "nested too deep" if isinstance(e, RecursionError) else str(e)
