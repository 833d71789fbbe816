"""`ace-eval skills stats|quarantine|release PATH`: each skill's KPIs, and a person's quarantine decisions.

PATH is a run folder or a skillbook file. A run folder is read by `ace_eval.run.read_run`: its published skillbook,
else (missing, damaged, or older than the journal) its checkpoint's snapshot plus the journal in `samples.jsonl`,
and the output names the file read. A decision holds the folder's lock, so it never races a running `e2e`. A
decision is an audited operation (`QUARANTINE` / `RELEASE` in the skillbook's operation log and the skill's
occurrences, with the person's reason); the skillbook file is rewritten atomically and a `skillbook.md` beside
it is exported again.
"""

from __future__ import annotations

import asyncio
import getpass
import json
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from pathlib import Path

import click

from ace.core.effectiveness import SkillKpis, skill_kpis
from ace.core.insight_source import InsightSource, utc_now
from ace.core.skillbook import Skillbook
from ace.exceptions import AceError, SkillbookError, UserError
from ace.pipeline.context import StepContext
from ace.redaction import Redactor
from ace.steps.export_markdown import ExportMarkdownStep
from ace_eval.e2e.config import E2ESettings
from ace_eval.run import Run, read_run
from ace_eval.run.checkpoint import snapshot_of
from ace_eval.run.folder import RUN_JSON, RunFolderError
from ace_eval.run.lock import folder_lock
from ace_eval.text import plural

__all__ = ["skills"]

_SKILLBOOK = "skillbook.json"


class _UsageFix(click.ClickException):
    """A mistake the user fixes (an unknown id, a skill already quarantined); nothing was written: exit 2."""

    exit_code = 2


def _target(path: Path) -> Path | Run:
    """A skillbook file on its own, or the run folder `path` (read with `read_run`)."""
    if path.is_file():
        return path
    try:
        return read_run(path)
    except RunFolderError:
        hint = f": pass {path / _SKILLBOOK} itself" if (path / _SKILLBOOK).is_file() else ": pass one of them"
        raise _UsageFix(f"{path} is neither a run folder (it has no {RUN_JSON}) nor a skillbook file{hint}") from None


def _load_file(file: Path) -> Skillbook:
    try:
        return Skillbook.load_from_file(file)
    except (AceError, ValueError, RecursionError) as e:  # a damaged file (UserError) is the user's to fix: exit 2
        error = _UsageFix if isinstance(e, UserError) else click.ClickException
        raise error(f"cannot read the skillbook {file}: {e}") from None


@contextmanager
def _locked(folder: Path | None) -> Iterator[None]:
    try:
        with folder_lock(folder) if folder is not None else nullcontext():
            yield
    except AceError as e:
        if isinstance(e, UserError):
            raise _UsageFix(str(e)) from None
        raise


def _redactor(run: Run | None) -> Redactor | None:
    """The run's redaction settings (its `[redaction]` patterns and allow-list), else the built-in detectors."""
    if run is not None:
        try:
            return E2ESettings.from_dict(run.record.config.as_dict()).redactor()
        except (ValueError, TypeError, AttributeError):
            pass
    return Redactor()


@click.group("skills")
def skills() -> None:
    """Each skill's KPIs from the reflections' tags, and quarantine decisions by a person."""


@skills.command("stats")
@click.argument("path", type=click.Path(exists=True, path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object per skill.")
def stats(path: Path, as_json: bool) -> None:
    """Uses, helpful / harmful / neutral tags and distinct harmful traces of every skill in PATH (a run folder or
    a skillbook file), with each quarantined skill's reason."""
    target = _target(path)
    if isinstance(target, Run):
        loaded = target.skillbook
        book, source = loaded.book, loaded.describe()
    else:
        book, source = _load_file(target), str(target)
    rows = skill_kpis(book)
    if as_json:
        click.echo(json.dumps([r.to_dict() for r in rows], indent=1))
        return
    click.echo(_table(rows))
    quarantined = [r for r in rows if r.status == "quarantined"]
    for row in quarantined:
        click.echo(f"{row.skill_id} quarantined: {row.quarantine_reason}")
    click.echo(f"{plural(len(rows), 'skill')}, {len(quarantined)} quarantined ({source})")


def _table(rows: list[SkillKpis]) -> str:
    head = ("skill", "status", "uses", "helpful", "harmful", "neutral", "harmful traces")
    cells = [
        (r.skill_id, r.status, *(str(v) for v in (r.uses, r.helpful, r.harmful, r.neutral, r.harmful_traces)))
        for r in rows
    ]
    widths = [max(len(c[i]) for c in [head, *cells]) for i in range(len(head))]
    lines = ("  ".join(c.ljust(w) for c, w in zip(line, widths, strict=True)).rstrip() for line in [head, *cells])
    return "\n".join(lines)


def _who(by: str | None) -> str:
    """`--by`, else the login name (`unknown` where there is none)."""
    if by is not None:
        return by
    try:
        return getpass.getuser()
    except (OSError, KeyError):
        return "unknown"


def _decide(path: Path, skill_id: str, reason: str, verb: str, by: str | None) -> None:
    """Apply a person's QUARANTINE / RELEASE to the skillbook at `path`, then rewrite its files; the person
    (`--by`, default the login name) and the reason pass the run's redaction first."""
    if not reason.strip():
        raise _UsageFix(f"--reason must say why you {verb} {skill_id}: it goes into the audit log")
    who = _who(by)
    if not who.strip():
        raise _UsageFix(f"--by is blank: name who decides to {verb} {skill_id} (recorded in the audit log)")
    target = _target(path)
    redactor = _redactor(target if isinstance(target, Run) else None) or Redactor()
    clean, _ = redactor.redact_data({"by": who.strip(), "reason": reason.strip()}, numbered=False)
    who, reason = str(clean["by"]), str(clean["reason"])
    with _locked(target.path if isinstance(target, Run) else None):
        run = read_run(target.path) if isinstance(target, Run) else None  # again, now that no run can change it
        book = run.skillbook.book if run is not None else _load_file(path)
        source = InsightSource(
            trace_uid="manual",
            source_system="ace-eval skills",
            trace_id=verb,
            learning_text=reason,
            reviewer=who,
            reviewed_at=utc_now(),
        )
        try:
            if verb == "quarantine":
                book.quarantine_skill(skill_id, reason, insight_source=source)
            else:
                book.release_skill(skill_id, reason, insight_source=source)
        except SkillbookError as e:
            raise _UsageFix(str(e)) from None
        written = _save(book, run, path)
    done = "quarantined: out of every prompt and search" if verb == "quarantine" else "released: visible again"
    click.echo(f"{skill_id} {done} ({', '.join(str(p) for p in written)}; logged with your reason)")


def _save(book: Skillbook, run: Run | None, file: Path) -> list[Path]:
    """Write the decided skillbook: a skillbook file, or a run's published skillbook (when there is one) and its
    checkpoint's snapshot (a --resume rebuilds the skillbook from it); then its markdown export, when there is one.
    Returns the skillbook files written."""
    if run is None:
        files, markdown = [file], file.with_suffix(".md")
    else:
        published, files = run.skillbook.published, [snapshot_of(run.path)]
        if published is not None and published.is_file() and published != files[0]:
            files.insert(0, published)  # a damaged one is replaced too; a run still to publish gets none
        exported = run.folder.step_output(run.record, "export_markdown", run.folder.markdown.name)
        markdown = exported if exported is not None else run.folder.markdown
    for skillbook_file in files:
        book.save_to_file(skillbook_file)
    if markdown.is_file():  # the run's own export step, so the file reads as the run wrote it
        export = ExportMarkdownStep(markdown, redactor=_redactor(run))
        asyncio.run(export(StepContext(trace={}, skillbook=book)))
    return files


@skills.command("quarantine")
@click.argument("path", type=click.Path(exists=True, path_type=Path))
@click.argument("skill_id")
@click.option("--reason", required=True, help="Why the skill must stay out of prompts (recorded in the audit log).")
@click.option("--by", help="Who decides (recorded in the audit log, redacted; default: the login name).")
def quarantine(path: Path, skill_id: str, reason: str, by: str | None) -> None:
    """Quarantine SKILL_ID in PATH (a run folder or a skillbook file): kept, but out of every prompt and search."""
    _decide(path, skill_id, reason, "quarantine", by)


@skills.command("release")
@click.argument("path", type=click.Path(exists=True, path_type=Path))
@click.argument("skill_id")
@click.option("--reason", required=True, help="Why the skill may come back (recorded in the audit log).")
@click.option("--by", help="Who decides (recorded in the audit log, redacted; default: the login name).")
def release(path: Path, skill_id: str, reason: str, by: str | None) -> None:
    """Release the quarantined SKILL_ID in PATH: visible again; only evidence after the release can quarantine it."""
    _decide(path, skill_id, reason, "release", by)
