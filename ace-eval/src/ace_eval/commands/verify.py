"""`ace-eval verify RUN_DIR`: the design's smoke-test checks on a run's skillbook, each printed PASS or FAIL."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

import click
import numpy as np

from ace.core.skillbook import Skillbook
from ace.core.storage import sidecar_path
from ace.core.vectors import load_sidecar
from ace.exceptions import SkillbookFormatError, UserError
from ace.redaction.scan import scan_path
from ace_eval.collection import CollectionError, read_collection
from ace_eval.e2e.training_results import SampleResult
from ace_eval.run import Run, RunSkillbook, RunSkillbookError, read_run
from ace_eval.run.checkpoint import snapshot_of
from ace_eval.run.folder import RUN_JSON
from ace_eval.run.quality import QualityWarning, quality_warnings
from ace_eval.run.record import TrainingRecord
from ace_eval.skill_lint import DEFAULT_MIN_WORDS, SkillWarning, degenerate_skills
from ace_eval.text import plural, tone

__all__ = ["Check", "run_checks", "run_quality", "skill_warnings", "verify"]

_MUTATING_TOOLS = frozenset({"add_skill", "update_skill", "tag_skill", "remove_skill"})
_RUN_CHECK = "run finished without crashing"
_SHOWN = 5


@dataclass(frozen=True)
class Check:
    """One check: its name, whether it passed, and the detail (what failed, and the fix)."""

    name: str
    passed: bool
    detail: str = ""

    def line(self) -> str:
        verdict = tone("PASS", "good") if self.passed else tone("FAIL", "bad")
        return f"{verdict}  {self.name}" + (f": {self.detail}" if self.detail else "")


def _ids(ids: list[str]) -> str:
    more = f" and {len(ids) - _SHOWN} more" if len(ids) > _SHOWN else ""
    return ", ".join(ids[:_SHOWN]) + more


def _skill_checks(book: Skillbook) -> list[Check]:
    skills = book.skills(include_inactive=True)
    no_occ = [s.id for s in skills if len(s.occurrences) < 1]
    no_kw = [s.id for s in skills if len(s.keywords) < 1]
    no_insight = [s.id for s in skills if s.section == "context" and not (s.insight or "").strip()]
    stats = book.stats()
    return [
        Check(
            "the run learned skills",
            stats["active"] > 0,
            f"{stats['active']} active ({stats['sections']['context']} context, {stats['sections']['harness']} "
            f"harness), {stats['inactive']} inactive"
            + (f", {stats['quarantined']} of the active quarantined" if stats["quarantined"] else "")
            if stats["active"]
            else "the skillbook has no active skill: see `ace-eval inspect` for each sample's error and tool calls",
        ),
        Check(
            "every skill has >= 1 occurrence",
            not no_occ,
            f"no occurrence on {_ids(no_occ)}" if no_occ else plural(stats["occurrences"], "occurrence"),
        ),
        Check("every skill has >= 1 keyword", not no_kw, f"no keyword on {_ids(no_kw)}" if no_kw else ""),
        Check(
            "context skills have an insight",
            not no_insight,
            f"context skill(s) without insight: {_ids(no_insight)}" if no_insight else "",
        ),
    ]


def _sidecar_check(path: Path, book: Skillbook, *, replayed: bool = False) -> Check:
    """The vectors beside the skillbook file; `replayed`: the book is a snapshot plus its journal, so a skill added
    since the snapshot has no vector in the snapshot's sidecar yet (a resume or the final save computes it)."""
    name = f"{path.name} present"
    if not path.is_file():
        return Check(name, False, f"{path} is missing: the run ended before its final save, or no skill was embedded")
    try:
        sidecar = load_sidecar(path, max_rows=len(book))  # its headers are checked before anything is loaded
    except SkillbookFormatError as e:
        return Check(name, False, f"{e}; delete it and the vectors are recomputed")
    if not np.isfinite(sidecar.matrix).all():
        return Check(name, False, f"{path} holds NaN or infinite vectors; delete it and the vectors are recomputed")
    ids = set(sidecar.ids)
    missing = [s.id for s in book.skills(include_inactive=True) if s.active and s.id not in ids]
    shape = sidecar.matrix.shape
    dimension = shape[1] if len(shape) == 2 else "?"
    detail = f"{plural(len(sidecar.ids), 'vector')} of dimension {dimension} ({sidecar.model or 'unknown model'})"
    if missing and replayed:
        later = f"{detail}; none yet for {_ids(missing)}, added or changed by the journal (a resume computes them)"
        return Check(name, True, later)
    if missing:
        return Check(name, False, f"{detail}, but no vector for active skill(s) {_ids(missing)}")
    return Check(name, True, detail)


def _spans_check(run: Run) -> Check:
    name = "spans.jsonl holds sm.session spans with their tool calls"
    path = run.folder.spans
    if not run.has_spans:
        return Check(name, False, f"{path} is missing: the run did not record its spans")
    spans = run.spans()
    if not spans:  # readable, but nothing in it (as `inspect` says when it refuses the file)
        return Check(
            name, False, f"{path} holds no span: the run stopped before its first span ended, or it was emptied"
        )
    sessions = {s["span_id"] for s in spans if s.get("name") == "sm.session"}
    parents = {s["span_id"]: s.get("parent_span_id") for s in spans}

    def session_of(span_id: str | None) -> str | None:
        seen = 0
        while span_id is not None and seen < 100:
            if span_id in sessions:
                return span_id
            span_id, seen = parents.get(span_id), seen + 1
        return None

    calls = [s for s in spans if s.get("name") in _MUTATING_TOOLS and session_of(s.get("parent_span_id"))]
    if not sessions:
        return Check(name, False, f"no sm.session span in {path}: the skill manager never ran")
    if not calls:
        return Check(
            name, False, f"{plural(len(sessions), 'sm.session span')} but no add/update/tag/remove_skill call in them"
        )
    return Check(name, True, f"{plural(len(sessions), 'session')}, {plural(len(calls), 'skill edit')}")


def _numbers(numbers: list[int]) -> str:
    return ", ".join(str(n) for n in numbers)


def _run_check(run: Run) -> Check:
    record = run.record
    status, training = record.status, record.training or TrainingRecord()
    detail = f"status {status}, {plural(training.samples, 'sample')}, {plural(training.errors, 'sample error')}"
    if status != "completed":
        detail += f" ({record.error or 'interrupted'}); continue it with ace-eval e2e --resume {run.path}"
    return Check(_RUN_CHECK, status == "completed", detail)


def _secrets_check(target: Path) -> Check:
    name = "no detectable secret in the run folder" if target.is_dir() else f"no detectable secret in {target.name}"
    result = scan_path(target)
    if not result.locations:
        return Check(name, True, f"{result.files} files scanned")
    lines = [location.describe() for location in result.locations[:_SHOWN]]
    more = f" and {len(result.locations) - _SHOWN} more" if len(result.locations) > _SHOWN else ""
    return Check(
        name,
        False,
        f"{len(result.locations)} found: {'; '.join(lines)}{more} (ace-eval scan {target} lists them all; rerun "
        "without --no-redact, and do not share this folder)",
    )


def _samples_check(run: Run) -> Check:
    """One result per (trace, epoch) and per index: a later line may only supersede a failed attempt (a resume's
    retry). Two processes training in one folder at once record samples twice, and their edits land twice."""
    name = "samples.jsonl records each sample once"
    records = run.sample_lines()  # a damaged line raises: exit 2
    latest: dict[tuple[str, int], SampleResult] = {}
    lines_of: dict[tuple[str, int], list[int]] = {}
    by_index: dict[int, list[int]] = {}
    twice: set[tuple[str, int]] = set()
    for number, sample in records:
        key = (sample.trace_uid, sample.epoch)
        earlier = latest.get(key)
        retry = earlier is not None and _supersedes(sample, earlier)
        if earlier is not None and not retry:
            twice.add(key)
        latest[key] = sample
        lines_of.setdefault(key, []).append(number)
        by_index.setdefault(sample.index, []).append(number)
    keys_at = {number: key for key, numbers in lines_of.items() for number in numbers}
    bad = [
        f"index {i} on lines {_numbers(n)}"
        for i, n in by_index.items()
        if len({keys_at[k] for k in n}) > 1 or keys_at[n[0]] in twice
    ]
    bad += [f"{uid} epoch {epoch} on lines {_numbers(lines_of[(uid, epoch)])}" for uid, epoch in sorted(twice)]
    if bad:
        return Check(
            name,
            False,
            f"{_ids(bad)} recorded more than once, not as a retry of a failed attempt: two processes trained in this "
            "folder at once (or the journal was edited), so the skillbook may hold their edits twice; start a new run",
        )
    retried = len(records) - len(latest)
    superseded = f" ({plural(retried, 'failed attempt')} superseded by a retry)" if retried else ""
    detail = plural(len(latest), "sample") + superseded
    training = run.record.training
    recorded = training.samples if training is not None and "samples" in training.model_fields_set else None
    if recorded is not None and recorded != len(latest):
        return Check(name, False, f"{detail}, but run.json counts {recorded}: resume the run to rewrite run.json")
    return Check(name, True, detail)


def _supersedes(sample: SampleResult, earlier: SampleResult) -> bool:
    """A resume's retry: the earlier attempt failed without an edit, and this one is a later attempt of its index."""
    return (
        earlier.error is not None
        and not earlier.operations
        and sample.attempt > earlier.attempt
        and sample.index == earlier.index
    )


def _skillbook_checks(run: Run) -> list[Check]:
    """The run's skillbook as `read_run` reads it (the published file, else the checkpoint's snapshot and journal).

    Raises:
        RunSkillbookError: a skillbook file is there but cannot be read, the published one included when the
            snapshot could stand in for it (verify checks what the run publishes, not a stand-in).
    """
    try:
        loaded = run.skillbook
    except RunSkillbookError as e:
        if e.damaged:
            raise
        published = run.step_output("persist", run.folder.skillbook.name)  # not saved yet: a failed check
        named = published if published is not None and published.is_file() else snapshot_of(run.path)
        return [Check(f"{named.name} conforms to the v2 shape", False, str(e))]
    if loaded.published is not None and loaded.published_error is not None:
        held = loaded.source.name + (f" and {loaded.journal.name}" if loaded.journal is not None else "")
        raise RunSkillbookError(
            f"{loaded.published} cannot be read ({loaded.published_error}): restore it from a copy (the checkpoint's "
            f"{held} still hold the run's skills; `ace-eval inspect {run.path}` shows them). Nothing was checked",
            damaged=True,
        )
    return _book_checks(loaded.source, loaded.book, loaded)


def _book_checks(file: Path, book: Skillbook, loaded: RunSkillbook | None = None) -> list[Check]:
    """The v2 shape of a loaded skillbook (`loaded`: read by `read_run`, with its source), its sidecar, its skills."""
    shape = f"{plural(len(book), 'skill')}, schema_version 2"
    if loaded is not None and loaded.journal is not None:
        shape += f", with {loaded.journal.name} replayed"
    return [
        Check(f"{file.name} conforms to the v2 shape", True, shape),
        _sidecar_check(sidecar_path(file), book, replayed=loaded is not None and loaded.journal is not None),
        *_skill_checks(book),
    ]


def run_checks(target: Path) -> list[Check]:
    """Every check for a run folder (read with `read_run`: a folder without `run.json` is refused), or for a
    `skillbook.json` file directly (with its folder's `run.json` check when it has one).

    Raises:
        UserError: a file the checks read cannot be read (`run.json`, a skillbook file, `samples.jsonl`,
            `spans.jsonl`), naming it and the reader's reason: nothing is checked then (exit 2, not a FAIL).
    """
    folder = target.parent if target.is_file() else target
    if target.is_file() and not (folder / RUN_JSON).is_file():
        return _file_checks(target)
    run = read_run(folder)
    if target.is_file():
        return [_run_check(run), *_file_checks(target)]
    checks = [_run_check(run), *_skillbook_checks(run), _spans_check(run)]
    if run.folder.samples.is_file():
        checks.append(_samples_check(run))
    return [*checks, _secrets_check(target)]


def _file_checks(file: Path) -> list[Check]:
    """The checks of a skillbook file on its own: shape, sidecar, skills, secrets; raises `UserError` when it cannot
    be read."""
    try:
        book = Skillbook.load_from_file(file)
    except (ValueError, RecursionError) as e:
        text = "nested too deep" if isinstance(e, RecursionError) else str(e)
        named = text if text.startswith(str(file)) else f"{file}: {text}"
        fix = "verify cannot read it; fix it or restore it from a copy. Nothing was checked"
        raise UserError(f"{named}: {fix}") from None
    return [*_book_checks(file, book), _secrets_check(file)]


def run_quality(target: Path) -> list[QualityWarning]:
    """The quality section of a run folder (`ace_eval.run.quality`); none for a skillbook file or an unreadable
    run (`run_checks` refuses that first)."""
    if target.is_file():
        return []
    try:
        run = read_run(target)
        book = run.skillbook.book
        _, traces = read_collection(run.folder.collection)
    except (OSError, ValueError, RecursionError, CollectionError):
        return []
    return quality_warnings(book.skills(), run.samples, {t.trace_uid: t.model_dump() for t in traces})


def skill_warnings(target: Path, *, min_words: int = DEFAULT_MIN_WORDS) -> list[SkillWarning]:
    """A warning per degenerate active skill of a run folder's (or a file's) skillbook; none when it cannot
    be read (`run_checks` refuses it first)."""
    try:
        book = Skillbook.load_from_file(target) if target.is_file() else read_run(target).skillbook.book
    except (OSError, ValueError, RecursionError):
        return []
    return degenerate_skills(book.skills(), min_words=min_words)


@click.command("verify")
@click.argument("run_dir", type=click.Path(path_type=Path, exists=True))
@click.option("--strict", is_flag=True, help="Fail (exit 1) on degenerate skills too, not only warn.")
@click.option(
    "--min-words",
    type=click.IntRange(min=1),
    default=DEFAULT_MIN_WORDS,
    show_default=True,
    help="An issue or insight with fewer words is degenerate.",
)
def verify(run_dir: Path, strict: bool, min_words: int) -> None:
    """Check a run's skillbook against the smoke-test list of the skillbook v2 design.

    RUN_DIR is a run folder (its published skillbook; when that is missing or older than the journal, the
    checkpoint's snapshot with the journal replayed) or a skillbook file. v2 shape, embeddings sidecar present,
    every skill with >= 1 occurrence and >= 1 keyword, context skills with an insight, sm.session spans with skill
    edits, each sample recorded once in samples.jsonl (a failed attempt may be superseded by its retry), no
    detectable secret in any file of the folder (its JSON strings decoded too). Then a WARN line per degenerate
    skill (issue equal to insight, numbers or punctuation only, under --min-words words, keywords that are numbers
    only). Then the quality section, a WARN line with a count per kind: skills repeating one token (`urn urn urn`),
    reflections claiming a failure on a trace whose reward is 1, skills sharing no keyword with the traces that
    taught them (warnings, never failures; --strict does not change that).

    \b
    Exit status:
      0  every check passed
      1  a check failed (with --strict, also a degenerate skill)
      2  an input could not be read: run.json, a skillbook file (a damaged
         skillbook.json too, even when the checkpoint's snapshot could stand
         in), samples.jsonl (a damaged line before its last) or spans.jsonl.
         The message names the file, the line and the reason; nothing is
         checked. (A damaged embeddings sidecar is a failed
         check: ACE recomputes it.)
    """
    checks = run_checks(run_dir)
    for check in checks:
        click.echo(check.line())
    warnings = skill_warnings(run_dir, min_words=min_words)
    for warning in warnings:
        click.echo(warning.line())
    quality = run_quality(run_dir)
    for problem in quality:
        click.echo(problem.line())
    failed = [c for c in checks if not c.passed]
    warned = f"; {plural(len(warnings), 'degenerate skill')}" if warnings else ""
    if failed or (strict and warnings):
        click.echo(
            f"verify: {len(failed)} of {plural(len(checks), 'check')} failed{warned} for {run_dir}"
            + (" (--strict)" if strict and warnings else ""),
            err=True,
        )
        sys.exit(1)
    hint = " (warnings only: --strict makes them fail)" if warnings else ""
    click.echo(f"verify: all {plural(len(checks), 'check')} passed{warned} for {run_dir}{hint}")
