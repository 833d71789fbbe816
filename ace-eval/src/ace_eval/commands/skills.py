"""`ace-eval skills stats|quarantine|release PATH`: each skill's KPIs, and a person's quarantine decisions.

PATH is a run folder or a skillbook file. In a run folder the skillbook is its checkpoint (the last snapshot plus
the journal in `samples.jsonl`), and a decision holds the folder's lock, so it never races a running `e2e`. A
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

from ace.core import json_safe
from ace.core.effectiveness import SkillKpis, skill_kpis
from ace.core.insight_source import InsightSource, utc_now
from ace.core.skillbook import Skillbook
from ace.exceptions import AceError, SkillbookError, UserError
from ace.pipeline.context import StepContext
from ace.redaction import Redactor
from ace.steps.export_markdown import ExportMarkdownStep
from ace_eval.e2e.config import E2ESettings
from ace_eval.run.checkpoint import SAMPLES_FILE, load_checkpoint, read_checkpoint, snapshot_of
from ace_eval.run.folder import RUN_JSON
from ace_eval.run.lock import folder_lock
from ace_eval.text import plural

__all__ = ["skills"]

_SKILLBOOK = "skillbook.json"


class _UsageFix(click.ClickException):
    """A mistake the user fixes (an unknown id, a skill already quarantined); nothing was written: exit 2."""

    exit_code = 2


def _target(path: Path) -> tuple[Path, Path | None]:
    """The skillbook file, and the run folder holding it (`None` for a skillbook file on its own)."""
    file = path / _SKILLBOOK if path.is_dir() else path
    if not file.is_file():
        raise _UsageFix(f"{path} is neither a run folder with a {_SKILLBOOK} nor a skillbook file: pass one of them")
    folder = file.parent if file.name == _SKILLBOOK and (file.parent / SAMPLES_FILE).is_file() else None
    return file, folder


def _load(file: Path, folder: Path | None, *, locked: bool) -> Skillbook:
    """The skillbook: a run folder's checkpoint (snapshot + journal), else the file. Only a caller holding the
    folder's lock may let `load_checkpoint` cut a torn journal line; a reader leaves the folder untouched."""
    try:
        if folder is not None and locked:
            loaded = load_checkpoint(folder)
            if loaded is not None:
                return loaded[0]
        elif folder is not None:
            return read_checkpoint(folder)
        return Skillbook.load_from_file(file)
    except (AceError, ValueError) as e:  # a damaged file (UserError) is the user's to fix: exit 2
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


def _redactor(folder: Path | None) -> Redactor | None:
    """The run's redaction settings (its `[redaction]` patterns and allow-list), else the built-in detectors."""
    run_json = folder / RUN_JSON if folder is not None else None
    if run_json is not None and run_json.is_file():
        try:
            config = json_safe.read_json(run_json).get("config") or {}
            return E2ESettings.from_dict(config).redactor()
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
    file, folder = _target(path)
    rows = skill_kpis(_load(file, folder, locked=False))
    if as_json:
        click.echo(json.dumps([r.to_dict() for r in rows], indent=1))
        return
    click.echo(_table(rows))
    quarantined = [r for r in rows if r.status == "quarantined"]
    for row in quarantined:
        click.echo(f"{row.skill_id} quarantined: {row.quarantine_reason}")
    click.echo(f"{plural(len(rows), 'skill')}, {len(quarantined)} quarantined ({file})")


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
    file, folder = _target(path)
    redactor = _redactor(folder) or Redactor()
    clean, _ = redactor.redact_data({"by": who.strip(), "reason": reason.strip()}, numbered=False)
    who, reason = str(clean["by"]), str(clean["reason"])
    with _locked(folder):
        book = _load(file, folder, locked=True)
        if folder is not None:
            published = _load(file, None, locked=True)
            if published.operations_count == book.operations_count:
                book = published  # the finished run's published skillbook: the same skills, with their vectors
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
        book.save_to_file(file)
        if folder is not None:  # a --resume rebuilds the skillbook from the checkpoint: the decision goes there too
            book.save_to_file(snapshot_of(folder))
        markdown = file.with_suffix(".md")
        if markdown.is_file():  # the run's own export step, so the file reads as the run wrote it
            export = ExportMarkdownStep(markdown, redactor=_redactor(folder))
            asyncio.run(export(StepContext(trace={}, skillbook=book)))
    done = "quarantined: out of every prompt and search" if verb == "quarantine" else "released: visible again"
    click.echo(f"{skill_id} {done} ({file}; logged with your reason)")


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
