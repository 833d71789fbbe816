"""`ace-eval demo`: replay the demo trace collection through reflect -> update -> export with no API key and no
internet. A graded collection (every trace carries the grader's verdict, as the demo's does) is reflected on by the
grounded reflector and learned by the rule-based skill manager (no model); `--reflector-model local`, or a
collection without verdicts, runs the embedded offline LLM (SmolLM2) in both roles instead."""

from __future__ import annotations

import time
from pathlib import Path

import click

from ace.exceptions import UserError
from ace.reflector.verdict import read_verdict
from ace_eval.collection import read_collection
from ace_eval.e2e.config import DEFAULT_MODEL, DEFAULT_OUTPUT_DIR, E2ESettings
from ace_eval.e2e.profiles import with_profiles
from ace_eval.e2e.runner import E2EResult, RunInjections, run_e2e
from ace_eval.run.record import TrainingRecord
from ace_eval.text import plural

__all__ = [
    "DEMO_COLLECTION",
    "demo",
    "demo_injections",
    "find_demo_collection",
    "format_demo_summary",
]

DEMO_COLLECTION = Path("examples") / "demo-collection"
_WORKERS = 2
"""Two samples at once on the embedded LLM: one sample's reflection runs beside another's skill-manager session
(each role has its own model, one thread each), so both cores of a small machine work. The grounded demo needs no
model and takes one sample at a time: its skills are then numbered in the collection's order, the same every run
(two at once numbered them in the order the samples finished)."""
_SHOWN_SKILLS = 3
_SHOWN_ERRORS = 3


def find_demo_collection() -> Path | None:
    """`examples/demo-collection` of the source tree this package runs from, else of the current folder."""
    here = Path(__file__).resolve()
    candidates = [parent / DEMO_COLLECTION for parent in here.parents[:6]]
    candidates.append(Path.cwd() / DEMO_COLLECTION)
    for candidate in candidates:
        if (candidate / "manifest.json").is_file():
            return candidate
    return None


GROUNDED_NOTE = (
    "grounded reflections from the grader, rule-based skill manager: no model needed; "
    "`--reflector-model local` runs the embedded LLM instead"
)


def demo_injections(*, show_progress: bool | None = None, grounded: bool = False) -> RunInjections:
    """What `ace-eval e2e` gives the roles. `grounded`: nothing (the grounded reflector and the `rules` skill
    manager need no model). Else the embedded model's (the `small` profile of `ace_eval.e2e.profiles`), so that
    SmolLM2-135M replays the ten traces in about a minute and a half and writes sentences rather than the ids and
    JSON of its prompt; the reflector and the skill manager get a model each (one core each)."""
    if grounded:
        return RunInjections(show_progress=show_progress)
    settings = E2ESettings(reflector_type="simple", max_workers=_WORKERS)
    return with_profiles(settings, RunInjections(show_progress=show_progress))[1]


def is_graded(collection: Path) -> bool:
    """Whether every trace of `collection` carries a grader's structured verdict (what the grounded reflector
    reads); an unreadable collection is left to the run, which reports it."""
    try:
        _, traces = read_collection(collection)
    except Exception:
        return False
    return bool(traces) and all(read_verdict(t.model_dump()) is not None for t in traces)


def format_demo_summary(result: E2EResult, seconds: float) -> str:
    """What the demo prints: counts, the first learned skills and how many more skillbook.md holds, a few errors,
    the `ace-eval report` command for the run; the skillbook.md path comes last."""
    record = result.record
    training = record.training or TrainingRecord()
    stats = result.skillbook.stats()
    stopped = {(s.trace_uid, s.epoch) for s in record.samples if s.error_kind == "stopped"}
    early = f", {plural(len(stopped), 'session')} stopped early on a budget or retry limit (edits kept)"
    lines = [
        f"Replayed {plural(record.collection.traces_used if record.collection else 0, 'trace')} in {seconds:.0f} s: "
        f"{plural(training.samples, 'sample')}, {plural(training.errors - len(stopped), 'error')}"
        f"{early if stopped else ''}.",
        f"Skillbook: {plural(stats['active'], 'active skill')} ({stats['sections']['context']} context, "
        f"{stats['sections']['harness']} harness), {plural(stats['occurrences'], 'occurrence')}.",
    ]
    learned = result.skillbook.skills()
    for skill in learned[:_SHOWN_SKILLS]:
        lines.append(f"  [{skill.id}] {skill.issue}")
        if skill.insight:
            lines.append(f"      -> {skill.insight}")
    markdown = result.folder.step_output(record, "export_markdown", result.folder.markdown.name)
    if len(learned) > _SHOWN_SKILLS:
        lines.append(f"  ... {len(learned) - _SHOWN_SKILLS} more in {markdown or 'skillbook.json'}")
    if not stats["active"]:
        lines.append(
            "  The tiny offline model learned no skill this time (`ace-eval inspect` shows what it tried); a hosted "
            "model does: ace-eval e2e --traces examples/demo-collection --no-benchmark --reflector-model MODEL "
            "--skill-manager-model MODEL"
        )
    failed = [e for e in record.errors if (e.trace_uid, e.epoch) not in stopped]
    for error in failed[:_SHOWN_ERRORS]:
        lines.append(f"  error on {error.trace_uid}: {error.error}")  # whole: it may end with the fix
    lines.append(f"Run folder: {result.folder.path} (ace-eval inspect / ace-eval verify it)")
    lines.append(f"See what it learned and from which traces: ace-eval report {result.folder.path}")
    if markdown is not None:
        lines.append(f"Skillbook: {markdown}")
    return "\n".join(lines)


@click.command("demo")
@click.option("--traces", type=click.Path(path_type=Path, file_okay=False), help="Another collection to replay.")
@click.option(
    "--output-dir", type=click.Path(path_type=Path, file_okay=False), default=DEFAULT_OUTPUT_DIR, show_default=True
)
@click.option("--limit", type=click.IntRange(min=1), help="Only the first N traces.")
@click.option("--verbose", "-v", is_flag=True, help="One line per finished sample.")
@click.option(
    "--reflector-model",
    type=click.Choice(["local"]),
    help="local: reflect and learn with the embedded LLM (SmolLM2-135M) instead of the grader's verdicts.",
)
def demo(traces: Path | None, output_dir: Path, limit: int | None, verbose: bool, reflector_model: str | None) -> None:
    """Learn a skillbook from examples/demo-collection (10 airline traces), with no key and no internet.

    The demo's traces carry the grader's verdict: the grounded reflector turns it into reflections and the
    rule-based skill manager into skills (no model; MiniLM embeds them), in seconds. `--reflector-model local`
    (or a collection without verdicts) runs reflect -> update with SmolLM2-135M (llama.cpp) instead, about a
    minute and a half on 2 cores: the same run as `ace-eval e2e --traces examples/demo-collection` (the
    embedded model's `small` profile, two workers). Ends with the path of the exported skillbook.md.
    """
    collection = traces or find_demo_collection()
    if collection is None:
        raise UserError(
            f"the demo collection ({DEMO_COLLECTION}) was not found next to this ace-eval or in the current folder: "
            "run from the repository root, or pass --traces DIR"
        )
    grounded = reflector_model is None and is_graded(collection)
    settings = E2ESettings(
        traces=collection,
        no_benchmark=True,
        reflector_type="grounded" if grounded else "simple",
        skill_manager_model="rules" if grounded else DEFAULT_MODEL,
        max_workers=1 if grounded else _WORKERS,
        output_dir=output_dir,
        limit=limit,
        verbose=verbose,
        sources={"traces": "flag" if traces else "demo"},
    )
    if grounded:
        click.echo(f"Replaying {collection}: {GROUNDED_NOTE} ...", err=True)
    else:
        click.echo(f"Replaying {collection} on the embedded models (SmolLM2-135M + MiniLM) ...", err=True)
    started = time.monotonic()
    result = run_e2e(settings, injections=demo_injections(grounded=grounded))
    click.echo(format_demo_summary(result, time.monotonic() - started))
