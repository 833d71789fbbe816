"""`ace-eval verify RUN_DIR`: the design's smoke-test checks on a run's skillbook, each printed PASS or FAIL."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import click
import numpy as np

from ace.core.skillbook import Skillbook
from ace.core.storage import sidecar_path
from ace.observability import read_spans_jsonl
from ace_eval.e2e.record import load_sample_lines
from ace_eval.e2e.training import SampleResult

__all__ = ["Check", "run_checks", "verify"]

_MUTATING_TOOLS = frozenset({"add_skill", "update_skill", "tag_skill", "remove_skill"})
_SHOWN = 5


@dataclass(frozen=True)
class Check:
    """One check: its name, whether it passed, and the detail (what failed, and the fix)."""

    name: str
    passed: bool
    detail: str = ""

    def line(self) -> str:
        return f"{'PASS' if self.passed else 'FAIL'}  {self.name}" + (f": {self.detail}" if self.detail else "")


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
            if stats["active"]
            else "the skillbook has no active skill: see `ace-eval inspect` for each sample's error and tool calls",
        ),
        Check(
            "every skill has >= 1 occurrence",
            not no_occ,
            f"no occurrence on {_ids(no_occ)}" if no_occ else f"{stats['occurrences']} occurrences",
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
        with np.load(path, allow_pickle=False) as npz:
            ids = [str(i) for i in npz["ids"]]
            shape = npz["embeddings"].shape
            model = str(npz["model"])
    except Exception as e:
        return Check(name, False, f"{path} cannot be read as an embeddings sidecar ({type(e).__name__}: {e})")
    missing = [s.id for s in book.skills() if s.id not in set(ids)]
    detail = f"{len(ids)} vectors of dimension {shape[1] if len(shape) == 2 else '?'} ({model or 'unknown model'})"
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
        return Check(name, False, f"{len(sessions)} sm.session spans but no add/update/tag/remove_skill call in them")
    return Check(name, True, f"{len(sessions)} sessions, {len(calls)} skill edits")


def _run_check(run_json: Path) -> Check | None:
    if not run_json.is_file():
        return None
    try:
        record = json.loads(run_json.read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        return Check("run finished without crashing", False, f"{run_json} cannot be read ({e})")
    status = record.get("status")
    training = record.get("training") or {}
    errors = training.get("errors", 0)
    detail = f"status {status}, {training.get('samples', 0)} samples, {errors} sample errors"
    if status != "completed":
        detail += f" ({record.get('error') or 'interrupted'}); continue it with ace-eval e2e --resume {run_json.parent}"
    return Check("run finished without crashing", status == "completed", detail)


def _samples_check(path: Path, run_json: Path) -> Check:
    """One result per (trace, epoch): a later line may only supersede a failed attempt (a resume's retry)."""
    name = "samples.jsonl records each sample once"
    lines = load_sample_lines(path)
    latest: dict[tuple[str, int], SampleResult] = {}
    bad: list[str] = []
    for sample in lines:
        key = (sample.trace_uid, sample.epoch)
        earlier = latest.get(key)
        if earlier is not None and (earlier.error is None or earlier.operations or sample.attempt <= earlier.attempt):
            bad.append(f"{sample.trace_uid} (epoch {sample.epoch})")
        latest[key] = sample
    if bad:
        return Check(name, False, f"recorded twice, not as a retry of a failed attempt: {_ids(bad)}")
    retried = len(lines) - len(latest)
    detail = f"{len(latest)} samples" + (f" ({retried} failed attempt(s) superseded by a retry)" if retried else "")
    try:
        recorded = json.loads(run_json.read_text(encoding="utf-8")).get("training", {}).get("samples")
    except (OSError, ValueError, AttributeError):
        recorded = None
    if isinstance(recorded, int) and recorded != len(latest):
        return Check(name, False, f"{detail}, but run.json counts {recorded}: resume the run to rewrite run.json")
    return Check(name, True, detail)


def run_checks(target: Path) -> list[Check]:
    """Every check for a run folder (or a `skillbook.json` file directly)."""
    skillbook_path = target if target.is_file() else target / "skillbook.json"
    folder = skillbook_path.parent
    checks: list[Check] = []
    run = _run_check(folder / "run.json")
    if run is not None:
        checks.append(run)
    try:
        book = Skillbook.load_from_file(skillbook_path)
    except ValueError as e:
        checks.append(Check("skillbook.json conforms to the v2 shape", False, str(e)))
        return checks
    checks.append(Check("skillbook.json conforms to the v2 shape", True, f"{len(book)} skills, schema_version 2"))
    steps: list[Callable[[], list[Check]]] = [
        lambda: [_sidecar_check(sidecar_path(skillbook_path), book)],
        lambda: _skill_checks(book),
    ]
    if not target.is_file():
        steps.append(lambda: [_spans_check(folder / "spans.jsonl")])
        if (folder / "samples.jsonl").is_file():
            steps.append(lambda: [_samples_check(folder / "samples.jsonl", folder / "run.json")])
    for step in steps:
        checks.extend(step())
    return checks


@click.command("verify")
@click.argument("run_dir", type=click.Path(path_type=Path, exists=True))
def verify(run_dir: Path) -> None:
    """Check a run's skillbook against the smoke-test list of the skillbook v2 design.

    v2 shape, embeddings sidecar present, every skill with >= 1 occurrence and >= 1 keyword, context skills
    with an insight, sm.session spans with skill edits, each sample recorded once in samples.jsonl (a failed
    attempt may be superseded by its retry). Exit status 1 when a check fails.
    """
    checks = run_checks(run_dir)
    for check in checks:
        click.echo(check.line())
    failed = [c for c in checks if not c.passed]
    if failed:
        click.echo(f"verify: {len(failed)} of {len(checks)} checks failed for {run_dir}", err=True)
        sys.exit(1)
    click.echo(f"verify: all {len(checks)} checks passed for {run_dir}")
