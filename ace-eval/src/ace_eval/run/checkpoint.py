"""The training checkpoint: a write-ahead journal of samples plus periodic skillbook snapshots.

Files in the checkpoint folder:

- `samples.jsonl`: one line per finished sample, appended in commit order. Each line is the sample's
  `SampleResult.to_dict()` plus a `"checkpoint"` key holding what the skillbook gained since the previous line,
  as the skillbook's own journal delta (`ace.core.journal.delta_since`). The line is the commit: a sample is
  done exactly when its line is in the file.
- `skillbook.snapshot.json` (+ `skillbook.snapshot.embeddings.npz`): a snapshot of the skillbook at some
  committed sample, written atomically (temp + rename) when a run starts, every `snapshot_every` samples (by
  default whenever the last snapshot is older than 20 times what it cost, so snapshots stay under ~5% of the
  run), and when the run ends. It is the checkpoint's own file: the run's published `skillbook.json` is the
  `persist` step's, written at the end of the run (or wherever `--step persist:path=...` puts it, or not at all
  with `--no-step persist`). A folder from before the snapshot had its own name (its `skillbook.json` beside
  the journal, no snapshot) resumes from that file.

Resuming loads the snapshot with every journal line's delta (`Skillbook.load_from_file(snapshot, journal=...)`,
idempotent: see `ace.core.journal`): the skillbook after the last committed sample, whichever snapshot was on
disk. This module only appends and fsyncs; the skillbook's format stays in `ace.core`. Per sample the cost is
one appended line, whatever the size of the skillbook.

Durability: each line is written with one `write` before the next sample starts, so a killed process loses
no committed sample. `fsync` runs in a background thread (group commit: one fsync covers every line written
while the previous one ran), so an OS crash can lose at most the last few milliseconds of lines; the journal is
fsynced before every snapshot, so the snapshot is never ahead of the journal. A torn last line (the process
died mid-write) is dropped on resume.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ace import json_safe
from ace.core.journal import check_delta
from ace.core.skillbook import Skillbook
from ace.core.storage import remove_stale_temps
from ace.exceptions import RunError, SkillbookFormatError

__all__ = [
    "LEGACY_SNAPSHOT_FILE",
    "SAMPLES_FILE",
    "SNAPSHOT_FILE",
    "Checkpoint",
    "CheckpointError",
    "journal_end",
    "journal_start",
    "load_checkpoint",
    "read_checkpoint",
    "snapshot_of",
]

SNAPSHOT_FILE = "skillbook.snapshot.json"
LEGACY_SNAPSHOT_FILE = "skillbook.json"
"""Where the snapshot was before it had a name of its own (a run folder's published skillbook since)."""
SAMPLES_FILE = "samples.jsonl"
_SNAPSHOT_COST_FACTOR = 20.0


class CheckpointError(RunError):
    """A checkpoint folder that cannot be resumed; the message says why and what to do."""


def journal_start(folder: Path) -> int | None:
    """Audit-log length when the checkpointed run began (`ops_before` of the first line); `None`: no line yet."""
    journal = folder / SAMPLES_FILE
    if not journal.is_file():
        return None
    lines, _ = _read_journal(journal)
    return int(lines[0].delta["ops_before"]) if lines else None


def journal_end(folder: Path) -> int | None:
    """Audit-log length after the last committed line (the skillbook a resume would rebuild); `None`: no line, or a
    journal that cannot be read (reading it for a resume says why)."""
    journal = folder / SAMPLES_FILE
    if not journal.is_file():
        return None
    try:
        lines, _ = _read_journal(journal)
    except (CheckpointError, OSError, RecursionError):
        return None
    return max((int(line.delta["ops_before"]) + len(line.delta["ops"]) for line in lines), default=None)


@dataclass
class _Line:
    sample: dict[str, Any]
    delta: dict[str, Any]


def _read_journal(path: Path) -> tuple[list[_Line], int]:
    """The journal's complete lines and the byte length they span (a torn last line is left out)."""
    data = path.read_bytes()
    lines: list[_Line] = []
    end = 0
    for number, raw in enumerate(data.split(b"\n"), 1):
        line_end = end + len(raw) + 1
        if line_end > len(data):  # no newline: the last write was cut short
            break
        try:
            obj = json_safe.loads(raw, file=str(path), line=number)
            delta = check_delta(obj.pop("checkpoint"))
        except (ValueError, KeyError, TypeError, AttributeError) as e:
            if line_end >= len(data):
                break
            raise CheckpointError(
                f"{path}, line {number}: not a checkpoint line ({type(e).__name__}: {e}); the journal is corrupt — "
                "start a fresh checkpoint folder"
            ) from None
        lines.append(_Line(sample=obj, delta=delta))
        end = line_end
    return lines, end


def load_checkpoint(folder: Path) -> tuple[Skillbook, list[dict[str, Any]]] | None:
    """The resumed skillbook and the recorded sample dicts, or `None` when `folder` holds no checkpoint yet.

    A torn last line is cut off the file so later appends start on a clean line.

    Raises:
        CheckpointError: `folder` holds a snapshot but no journal (a fresh start would overwrite that snapshot),
            a journal but no snapshot, or a corrupt journal.
    """
    journal = folder / SAMPLES_FILE
    snapshot = snapshot_of(folder)
    if not journal.is_file():
        if (folder / SNAPSHOT_FILE).is_file():
            raise CheckpointError(
                f"{folder / SNAPSHOT_FILE} exists but {journal} does not: the checkpoint's journal is gone, and "
                "starting here would overwrite its snapshot. To keep training that skillbook, load it "
                "(Skillbook.load_from_file), pass it to Trainer.run and give the trainer an empty checkpoint_dir; to "
                "start over, move it away"
            )
        return None
    if not snapshot.is_file() and journal.stat().st_size == 0:
        return None  # a fresh start stopped before its first snapshot: nothing was committed
    if not snapshot.is_file():
        raise CheckpointError(
            f"{journal} exists but {snapshot} does not: the checkpoint is incomplete; start a fresh checkpoint folder"
        )
    lines, good_bytes = _read_journal(journal)
    if good_bytes < journal.stat().st_size:
        with journal.open("r+b") as f:
            f.truncate(good_bytes)
    try:
        book = Skillbook.load_from_file(snapshot, journal=[line.delta for line in lines])
    except SkillbookFormatError as e:
        raise CheckpointError(f"cannot rebuild the skillbook from the checkpoint {folder}: {e}") from e
    return book, [line.sample for line in lines]


def snapshot_of(folder: Path) -> Path:
    """The checkpoint's snapshot in `folder`: `skillbook.snapshot.json`, or the `skillbook.json` of a folder
    checkpointed before the snapshot had a name of its own (a journal with lines, no snapshot)."""
    snapshot = folder / SNAPSHOT_FILE
    legacy = folder / LEGACY_SNAPSHOT_FILE
    journal = folder / SAMPLES_FILE
    if not snapshot.is_file() and legacy.is_file() and journal.is_file() and journal.stat().st_size > 0:
        return legacy
    return snapshot


def read_checkpoint(folder: Path) -> Skillbook:
    """The skillbook after the last committed sample, reading without writing anything: safe beside a running
    trainer (a line it is still writing is left out, not cut off as `load_checkpoint` does for a resume).

    Raises:
        CheckpointError: no snapshot, a corrupt journal, or a journal that does not fit the snapshot.
    """
    snapshot, journal = snapshot_of(folder), folder / SAMPLES_FILE
    if not snapshot.is_file():
        raise CheckpointError(f"{folder} has no {snapshot.name} yet: the run has not saved a skillbook")
    lines, _ = _read_journal(journal) if journal.is_file() else ([], 0)
    try:
        return Skillbook.load_from_file(snapshot, journal=[line.delta for line in lines])
    except SkillbookFormatError as e:
        raise CheckpointError(f"cannot rebuild the skillbook from the checkpoint {folder}: {e}") from e


def _fsync_file(path: Path) -> None:
    """Fsync a file through a descriptor of its own, so the writer may close its descriptor at any time."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


@dataclass
class Checkpoint:
    """An open checkpoint folder: `commit` appends a sample's line, `snapshot` saves the skillbook."""

    folder: Path
    snapshot_every: int | None = None
    """Snapshot after this many commits; `None`: when the last snapshot is older than 20x its cost."""
    clock: Callable[[], float] = field(default=time.perf_counter)
    _fd: int = field(default=-1, init=False)
    _since_snapshot: int = field(default=0, init=False)
    _last_snapshot_end: float = field(default=0.0, init=False)
    _last_snapshot_cost: float = field(default=0.0, init=False)
    _sync_task: asyncio.Task[None] | None = field(default=None, init=False)
    _dirty: bool = field(default=False, init=False)

    def open(self, book: Skillbook, *, fresh: bool) -> None:
        """Open the journal for appending; a fresh run starts an empty journal, then snapshots `book`.

        In that order, a start killed halfway leaves an empty journal and no skillbook (a fresh start again), never a
        skillbook without a journal (which `load_checkpoint` refuses). Temporaries of killed saves are removed.
        """
        self.folder.mkdir(parents=True, exist_ok=True)
        remove_stale_temps(self.folder)
        journal = self.folder / SAMPLES_FILE
        flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | (os.O_TRUNC if fresh else 0)
        self._fd = os.open(journal, flags, 0o666)
        if fresh:
            self._save(book)

    async def commit(self, line: dict[str, Any], book: Skillbook) -> None:
        """Append one sample's line (the commit point), then snapshot if it is due."""
        data = (json.dumps(line, ensure_ascii=False, separators=(",", ":")) + "\n").encode("utf-8")
        view = memoryview(data)
        while view:
            written = os.write(self._fd, view)
            view = view[written:]
        self._request_sync()
        self._since_snapshot += 1
        if self._snapshot_due():
            await self.snapshot(book)

    async def snapshot(self, book: Skillbook) -> None:
        """Fsync the journal, then save the skillbook atomically (so the snapshot is never ahead of it)."""
        await self._flush()
        os.fsync(self._fd)
        self._save(book)
        self._since_snapshot = 0

    async def close(self, book: Skillbook | None) -> None:
        """Final snapshot (when `book` is given and something was committed since the last one), fsync, close."""
        if self._fd < 0:
            return
        try:
            if book is not None and self._since_snapshot:
                await self.snapshot(book)
            await self._flush()
            os.fsync(self._fd)
        finally:
            os.close(self._fd)
            self._fd = -1

    def abandon(self) -> None:
        """Close without waiting (the run is being aborted); committed lines are already written."""
        if self._sync_task is not None:
            self._sync_task.cancel()  # its thread finishes on its own descriptor
            self._sync_task = None
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def _save(self, book: Skillbook) -> None:
        start = self.clock()
        book.save_to_file(self.folder / SNAPSHOT_FILE)
        self._last_snapshot_end = self.clock()
        self._last_snapshot_cost = self._last_snapshot_end - start

    def _snapshot_due(self) -> bool:
        if self.snapshot_every is not None:
            return self._since_snapshot >= self.snapshot_every
        return self.clock() - self._last_snapshot_end >= _SNAPSHOT_COST_FACTOR * self._last_snapshot_cost

    def _request_sync(self) -> None:
        """Group commit: at most one fsync runs; lines written meanwhile are covered by one more."""
        self._dirty = True
        if self._sync_task is None or self._sync_task.done():
            self._sync_task = asyncio.get_running_loop().create_task(self._sync_loop())

    async def _sync_loop(self) -> None:
        while self._dirty:
            self._dirty = False
            await asyncio.to_thread(_fsync_file, self.folder / SAMPLES_FILE)

    async def _flush(self) -> None:
        task = self._sync_task
        if task is not None:
            self._sync_task = None
            await task
