"""`ace-eval verify RUN_DIR`: the design's smoke-test checks on a run's skillbook, each printed PASS or FAIL."""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import click
import numpy as np

from ace.core import json_safe
from ace.core.skillbook import Skillbook
from ace.core.storage import load_sidecar, sidecar_path
from ace.exceptions import SkillbookFormatError
from ace.observability import read_spans_jsonl
from ace.redaction.scan import scan_path
from ace_eval.e2e.training import SampleResult
from ace_eval.run.folder import RunFolder, RunFolderError
from ace_eval.run.record import RunRecordError, TrainingRecord, load_run_record
from ace_eval.skill_lint import DEFAULT_MIN_WORDS, SkillWarning, degenerate_skills
from ace_eval.text import plural, tone

__all__ = ["Check", "run_checks", "skill_warnings", "verify"]

_MUTATING_TOOLS = frozenset({"add_skill", "update_skill", "tag_skill", "remove_skill"})
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


def _sidecar_check(path: Path, book: Skillbook) -> Check:
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
    if missing:
        return Check(name, False, f"{detail}, but no vector for active skill(s) {_ids(missing)}")
    return Check(name, True, detail)


def _spans_check(path: Path) -> Check:
    name = "spans.jsonl holds sm.session spans with their tool calls"
    if not path.is_file():
        return Check(name, False, f"{path} is missing: the run did not record its spans")
    spans = read_spans_jsonl(path)
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


def _run_check(run_json: Path) -> Check | None:
    if not run_json.is_file():
        return None
    try:
        record = load_run_record(run_json)
    except RunRecordError as e:
        return Check("run finished without crashing", False, str(e))
    status, training = record.status, record.training or TrainingRecord()
    detail = f"status {status}, {plural(training.samples, 'sample')}, {plural(training.errors, 'sample error')}"
    if status != "completed":
        detail += f" ({record.error or 'interrupted'}); continue it with ace-eval e2e --resume {run_json.parent}"
    return Check("run finished without crashing", status == "completed", detail)


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


def _samples_check(path: Path, run_json: Path) -> Check:
    """One result per (trace, epoch) and per index: a later line may only supersede a failed attempt (a resume's
    retry). Two processes training in one folder at once record samples twice, and their edits land twice."""
    name = "samples.jsonl records each sample once"
    records = _journal_records(path)
    if isinstance(records, int):
        return Check(name, False, f"{path}:{records} is not a sample record: the journal is damaged; start a new run")
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
    try:
        recorded = json_safe.read_json(run_json).get("training", {}).get("samples")
    except (OSError, ValueError, AttributeError):
        recorded = None
    if isinstance(recorded, int) and recorded != len(latest):
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


def _journal_records(path: Path) -> list[tuple[int, SampleResult]] | int:
    """`(line number, result)` for every line, a torn last line skipped; or the number of a damaged line."""
    records: list[tuple[int, SampleResult]] = []
    lines = path.read_bytes().split(b"\n")
    for number, raw in enumerate(lines, 1):
        if not raw.strip():
            continue
        try:
            data = json_safe.loads(raw)
            if not isinstance(data, dict):
                raise ValueError("not an object")
            data.pop("checkpoint", None)  # the trainer's journal keeps the skillbook delta beside the result
            records.append((number, SampleResult.from_dict(data)))
        except (ValueError, TypeError, KeyError, AttributeError, RecursionError):
            if number == len(lines):
                continue  # a torn last line (the run was killed mid-write): the resume drops it
            return number
    return records


def skillbook_of(target: Path) -> Path:
    """The skillbook file to check: `target` itself, or a run folder's (the one its `persist` step published,
    else the checkpoint's snapshot of a run without it, or of an interrupted one)."""
    if target.is_file():
        return target
    folder = RunFolder(target)
    try:
        record = folder.read_run_json()
    except RunFolderError:
        record = {}  # the run.json check says what is wrong with it
    return folder.learned_skillbook(record)


def run_checks(target: Path) -> list[Check]:
    """Every check for a run folder (or a `skillbook.json` file directly)."""
    skillbook_path = skillbook_of(target)
    folder = target.parent if target.is_file() else target
    shape_check = f"{skillbook_path.name} conforms to the v2 shape"
    checks: list[Check] = []
    run = _run_check(folder / "run.json")
    if run is not None:
        checks.append(run)
    if skillbook_path.is_file():
        json_safe.read_json(skillbook_path)  # not JSON within the reader's limits: nothing to check (exit 2)
    try:
        book = Skillbook.load_from_file(skillbook_path)
    except ValueError as e:
        checks.append(Check(shape_check, False, str(e)))
        return checks
    shape = f"{plural(len(book), 'skill')}, schema_version 2"
    checks.append(Check(shape_check, True, shape))
    steps: list[Callable[[], list[Check]]] = [
        lambda: [_sidecar_check(sidecar_path(skillbook_path), book)],
        lambda: _skill_checks(book),
    ]
    if not target.is_file():
        steps.append(lambda: [_spans_check(folder / "spans.jsonl")])
        if (folder / "samples.jsonl").is_file():
            steps.append(lambda: [_samples_check(folder / "samples.jsonl", folder / "run.json")])
    steps.append(lambda: [_secrets_check(target)])
    for step in steps:
        checks.extend(step())
    return checks


def skill_warnings(target: Path, *, min_words: int = DEFAULT_MIN_WORDS) -> list[SkillWarning]:
    """A warning per degenerate active skill of a run folder's (or a file's) skillbook; none when it cannot
    be read (the v2 check reports that)."""
    try:
        book = Skillbook.load_from_file(skillbook_of(target))
    except (OSError, ValueError):
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

    v2 shape, embeddings sidecar present, every skill with >= 1 occurrence and >= 1 keyword, context skills
    with an insight, sm.session spans with skill edits, each sample recorded once in samples.jsonl (a failed
    attempt may be superseded by its retry), no detectable secret in any file of the folder. Exit status 1 when a
    check fails. Then a WARN line per degenerate skill (issue equal to insight, numbers or punctuation only, under
    --min-words words, keywords that are numbers only); with --strict these fail the run too.
    """
    checks = run_checks(run_dir)
    for check in checks:
        click.echo(check.line())
    warnings = skill_warnings(run_dir, min_words=min_words)
    for warning in warnings:
        click.echo(warning.line())
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
