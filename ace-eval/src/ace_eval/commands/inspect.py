"""`ace-eval inspect RUN_DIR`: the sessions of a run from its local span file, with no Logfire account."""

from __future__ import annotations

import difflib
import itertools
import json
from pathlib import Path
from typing import Any

import click

from ace.exceptions import UserError
from ace_eval.e2e.sample_text import operations_text
from ace_eval.run import Run, RunSkillbookError, read_run
from ace_eval.run.record import StepTiming
from ace_eval.run.sessions import RunView, SampleView, SessionView, ToolCallView
from ace_eval.text import plural, printable, tone

__all__ = ["format_run_view", "inspect"]


def _header(view: RunView, skillbook: str | None = None) -> list[str]:
    run = view.run
    counts = plural(len(view.samples), "sample")
    if run.training is not None:
        errors = run.training.errors
        counts += ", " + tone(plural(errors, "error"), "bad" if errors else "good")
    lines = [f"Run {run.run_id or view.path.name} ({run.status or 'unknown status'}): {counts}"]
    if skillbook is not None:
        lines.append(skillbook)
    if run.models:
        lines.append("Models: " + ", ".join(f"{role}={name}" for role, name in run.models_run().items()))
    if run.resolved_benchmark is not None:
        options = run.resolved_benchmark.options
        lines.append(f"Benchmark {run.resolved_benchmark.name}: " + ", ".join(f"{k}={v}" for k, v in options.items()))
    if run.step_timings:
        lines.append(
            "Steps: "
            + ", ".join(f"{name} {t.calls} x {_seconds(t)}" for name, t in run.step_timings.items() if t.calls)
        )
    if not view.has_spans:
        lines.append(f"(no spans.jsonl in {view.path}: tool calls are not shown)")
    return lines


def _seconds(timing: StepTiming) -> str:
    """Total and mean time of a step, e.g. `1.20s (40.0 ms each)`."""
    seconds, calls = timing.seconds, timing.calls
    return f"{seconds:.2f}s ({1000 * seconds / calls:.1f} ms each)" if calls else f"{seconds:.2f}s"


def _session_line(session: SessionView) -> str:
    took = "" if session.duration_ms is None else f" {session.duration_ms / 1000:.1f}s"
    status = "" if session.status in ("UNSET", "OK") else " " + tone(session.status, "bad")
    parts = [plural(len(session.tool_calls), "tool call")]
    usage = session.usage
    if usage is not None:
        parts.append(plural(usage["requests"], "request"))
        parts.append(f"{usage['input_tokens']:,}+{usage['output_tokens']:,} tokens")
    return f"    {session.name}{took}{status}: {', '.join(parts)}"


def _call_lines(calls: list[ToolCallView]) -> list[str]:
    """One line per call, runs of identical calls (same signature, same outcome) collapsed into one `xN` line."""
    lines: list[str] = []
    for (signature, refusal), run in itertools.groupby(calls, key=lambda c: (c.signature, c.refusal)):
        times = len(list(run))
        text = signature
        if signature.endswith((" -> refused", " -> conflict")):
            head, _, outcome = signature.rpartition(" -> ")
            text = f"{head} -> {tone(outcome, 'warn')}"
        lines.append(f"      {text}" + (f"  x{times}" if times > 1 else ""))
        if refusal:
            lines.append(f"        reason: {refusal}")
    return lines


def _sample_lines(n: int, view: SampleView) -> list[str]:
    sample = view.sample
    epoch = "" if view.epoch is None else f"  epoch {view.epoch}"
    if sample is None:
        state = tone("not recorded (interrupted)", "warn")
    elif sample.error is not None:
        state = tone("ERROR", "bad") + f" {sample.error}"
    elif sample.skipped is not None:
        state = tone("skipped", "warn") + f" ({sample.skipped})"
    else:
        state = tone("ok", "good") + f" ({sample.duration_s:.1f}s)"
    lines = [f"[{n}] {view.trace_uid}{epoch}  {state}"]
    if view.key_insight:
        lines.append(f"    reflection: {view.key_insight}")
    for session in view.sessions:
        lines.append(_session_line(session))
        lines.extend(_call_lines(session.tool_calls))
    if sample is not None and sample.operations:
        lines.append(f"    operations: {operations_text(sample.operations)}")
    changed = view.changed_ids
    lines.append(f"    skills changed: {', '.join(changed) if changed else 'none'}")
    return lines


def skillbook_line(run: Run) -> str:
    """`Skillbook: 3 skills (1 quarantined) from <file>`, naming the file read (the checkpoint's snapshot when the
    published one is missing or damaged), or why none can be read."""
    try:
        loaded = run.skillbook
    except RunSkillbookError as e:
        return "Skillbook: " + tone(str(e), "warn")
    stats = loaded.book.stats()
    held = f" ({stats['quarantined']} quarantined)" if stats["quarantined"] else ""
    source = loaded.describe()
    return f"Skillbook: {plural(stats['active'], 'active skill')}{held} from " + (
        tone(source, "warn") if loaded.published_error else source
    )


def format_run_view(view: RunView, skillbook: str | None = None) -> str:
    """The text `inspect` prints (coloured unless NO_COLOR; `click.echo` drops colour off a terminal); `skillbook`:
    the `skillbook_line` to show under the run's line."""
    lines = _header(view, skillbook)
    for n, sample in enumerate(view.samples, start=1):
        lines.append("")
        lines.extend(_sample_lines(n, sample))
    return "\n".join(lines)


@click.command("inspect")
@click.argument("run_dir", type=click.Path(path_type=Path, exists=True, file_okay=False))
@click.option("--trace", "trace_uid", help="Only this trace (its trace_uid, e.g. airline:task-3-trial-0).")
@click.option("--errors", "errors_only", is_flag=True, help="Only samples that failed.")
@click.option("--json", "as_json", is_flag=True, help="Print the sessions as JSON.")
def inspect(run_dir: Path, trace_uid: str | None, errors_only: bool, as_json: bool) -> None:
    """Show each session of a run: which trace, which reflection (key insight), which tool calls with their
    atomic signature, which skills changed.

    Each session shows its model requests and tokens (input+output); a refused or conflicting tool call shows
    the reason the model was given; identical consecutive calls show once with their count (x19). Reads
    RUN_DIR/run.json, samples.jsonl, spans.jsonl and the skillbook (the published one, else the checkpoint's
    snapshot with its journal; the header names the file read). Colour unless NO_COLOR is set or the output is
    not a terminal. A run without spans.jsonl is shown without its sessions; an empty one (the run stopped
    before its first span ended) or a damaged one is refused, exit 2.
    """
    run = read_run(run_dir)
    spans = run.spans()
    if run.has_spans and not spans:
        raise UserError(_no_span(run))
    view = run.view(spans)
    samples = view.samples
    if trace_uid is not None:
        samples = [s for s in samples if s.trace_uid == trace_uid]
        if not samples:
            known = sorted({s.trace_uid for s in view.samples})
            close = difflib.get_close_matches(trace_uid, known, n=3, cutoff=0.6)
            hint = f" Did you mean {', '.join(close)}?" if close else f" The run has {plural(len(known), 'trace')}."
            raise UserError(f"no trace {trace_uid!r} in {run_dir}.{hint}")
    if errors_only:
        samples = [s for s in samples if s.sample is not None and s.sample.error is not None]
    view = RunView(path=view.path, run=view.run, samples=samples, has_spans=view.has_spans)
    if as_json:
        payload: dict[str, Any] = {
            "run_id": view.run.run_id,
            "status": view.run.status,
            "resolved_benchmark": (rb.model_dump(mode="json") if (rb := view.run.resolved_benchmark) else None),
            "skillbook": _skillbook_json(run),
            "samples": [s.to_dict() for s in samples],
        }
        click.echo(printable(json.dumps(payload, indent=1, ensure_ascii=False, default=str)))
        return
    click.echo(printable(format_run_view(view, skillbook_line(run)), keep_style=True))


def _no_span(run: Run) -> str:
    """Why a run's `spans.jsonl` holds no span, and what to do: a run writes one when its first span ends (the
    `ace.run` span ends last, so a completed run always has one)."""
    if run.record.status == "completed":
        return (
            f"{run.folder.spans}: holds no span, yet run.json says the run completed (its ace.run span ended): the "
            "file was emptied since. Restore it from a copy, or move it away to see the samples without their sessions"
        )
    return (
        f"{run.folder.spans}: holds no span: the run recorded none, it stopped (or is still running) before its first "
        f"span ended, so there is no session to show. `ace-eval verify {run.path}` checks what it left; "
        f"`ace-eval e2e --resume {run.path}` continues it"
    )


def _skillbook_json(run: Run) -> dict[str, Any]:
    """The skillbook's counts and the file they were read from, or why it cannot be read (for `--json`)."""
    try:
        loaded = run.skillbook
    except RunSkillbookError as e:
        return {"error": str(e)}
    return {
        "source": str(loaded.source),
        "journal": None if loaded.journal is None else str(loaded.journal),
        "published_error": loaded.published_error,
        **loaded.book.stats(),
    }
