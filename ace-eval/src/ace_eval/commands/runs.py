"""`ace-eval runs [DIR]`: the run folders under DIR, newest first, one line each."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path

import click

from ace.exceptions import UserError
from ace_eval.run.record import RUN_JSON, RunRecord, read_run_record

__all__ = ["RunRow", "find_runs", "runs"]

_MAX_DEPTH = 4
"""How deep under DIR a run folder is looked for (`results/e2e/run_<id>` is 2 deep)."""


@dataclass(frozen=True, kw_only=True)
class RunRow:
    """One run folder as `ace-eval runs` lists it."""

    path: str
    status: str
    date: str
    samples: int
    errors: int
    skills: int | None
    score: float | None
    """pass^1 after learning, else before (a run without evaluation), else `None` (no benchmark)."""


def _folders(root: Path, depth: int = 0) -> Iterator[Path]:
    """Folders holding `run.json` under `root` (a run folder's own subfolders are not searched)."""
    if (root / RUN_JSON).is_file():
        yield root
        return
    if depth >= _MAX_DEPTH:
        return
    try:
        children = sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith("."))
    except OSError:
        return
    for child in children:
        yield from _folders(child, depth + 1)


def _score(record: RunRecord) -> float | None:
    bench = record.benchmark
    for phase in (bench.after, bench.before) if bench is not None else ():
        if phase is not None:
            value = phase.pass_hat_k_at(1)
            if value is not None:
                return value
    return None


def _row(folder: Path) -> RunRow:
    record = read_run_record(folder / RUN_JSON)
    if record is None:
        return RunRow(path=str(folder), status="unreadable", date="", samples=0, errors=0, skills=None, score=None)
    training = record.training
    book = training.skillbook if training is not None else None
    active = book.get("active") if isinstance(book, dict) else None
    return RunRow(
        path=str(folder),
        status=record.status or "unknown",
        date=record.created_at or record.updated_at or "",
        samples=training.samples if training is not None else 0,
        errors=training.errors if training is not None else 0,
        skills=active if isinstance(active, int) else None,
        score=_score(record),
    )


def find_runs(root: Path) -> list[RunRow]:
    """Every run folder under `root`, newest first (by the date in `run.json`, else the file's time)."""
    rows = [(_row(folder), folder) for folder in _folders(root)]

    def key(item: tuple[RunRow, Path]) -> str:
        row, folder = item
        return row.date or _mtime(folder)

    return [row for row, _ in sorted(rows, key=key, reverse=True)]


def _mtime(folder: Path) -> str:
    from datetime import UTC, datetime

    return datetime.fromtimestamp(os.stat(folder / RUN_JSON).st_mtime, UTC).isoformat()


@click.command("runs")
@click.argument("directory", required=False, type=click.Path(path_type=Path), default=Path("results"))
@click.option("--json", "as_json", is_flag=True, help="Print the runs as JSON.")
def runs(directory: Path, as_json: bool) -> None:
    """List the run folders under DIR (default results/): status, date, samples, skills, score; newest first.

    The score is pass^1 after learning (before, for a run without evaluation); `-` when the agent did not run.
    """
    if not directory.is_dir():
        raise UserError(f"{directory} is not a folder: pass the folder holding your runs, e.g. `ace-eval runs results`")
    rows = find_runs(directory)
    if as_json:
        click.echo(json.dumps([asdict(r) for r in rows], indent=1))
        return
    if not rows:
        click.echo(f"no run folder under {directory} (a run folder holds run.json; `ace-eval e2e` writes them)")
        return
    table = [("RUN", "STATUS", "DATE", "SAMPLES", "ERRORS", "SKILLS", "SCORE")]
    for r in rows:
        score = f"{r.score:.3f}" if r.score is not None else "-"
        skills = str(r.skills) if r.skills is not None else "-"
        table.append((r.path, r.status, r.date[:19].replace("T", " "), str(r.samples), str(r.errors), skills, score))
    widths = [max(len(row[i]) for row in table) for i in range(len(table[0]))]
    for row in table:
        click.echo("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip())
