"""`ace-eval collection`: import traces from other systems, summarise a collection, repair an interrupted one."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import click

from ace_eval import __version__
from ace_eval.collection import (
    MANIFEST_FILE,
    TRACES_FILE,
    CollectionError,
    CollectionManifest,
    read_collection,
    repair_collection,
    write_collection,
)
from ace_eval.collection.importers import (
    IMPORT_FORMATS,
    ImportFormat,
    import_traces,
    sniff_folder_format,
    sniff_format,
)
from ace_eval.collection.outcomes import apply_outcomes, read_outcomes
from ace_eval.collection.stats import CollectionStats, collection_stats
from ace_eval.commands.scan import scan_redactor
from ace_eval.reporting import ReportingGroup
from ace_eval.run.redaction import redact_traces
from ace_eval.text import plural, printable

__all__ = ["collection"]


def _parse_models(values: tuple[str, ...]) -> dict[str, str]:
    models: dict[str, str] = {}
    for value in values:
        role, sep, name = value.partition("=")
        if not sep or not role.strip() or not name.strip():
            raise click.BadParameter(f"{value!r}: write ROLE=MODEL, e.g. agent=gpt-4o", param_hint="--model")
        models[role.strip()] = name.strip()
    return models


@click.group("collection", cls=ReportingGroup)
def collection() -> None:
    """Trace collections: a folder with manifest.json and traces.jsonl (one trace per line)."""


@collection.command("import")
@click.argument("src", type=click.Path(exists=True, path_type=Path))
@click.option(
    "--format",
    "fmt",
    type=click.Choice(IMPORT_FORMATS),
    help="The format of SRC (default: told from the file, as `e2e --traces FILE` does, or from a folder's files).",
)
@click.option("--out", type=click.Path(path_type=Path), required=True, help="The new collection folder.")
@click.option("--source-system", help="Name of the source (default: from the data).")
@click.option("--benchmark", help="Benchmark name for the manifest (default: from the data).")
@click.option("--model", "models", multiple=True, metavar="ROLE=MODEL", help="A model that produced the traces.")
@click.option("--allow-empty", is_flag=True, help="Write the collection even when SRC holds no trace.")
@click.option(
    "--no-redact",
    is_flag=True,
    help="Keep the traces raw (secrets and personal data included); by default they are redacted as a run redacts.",
)
@click.option(
    "--outcomes",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="Reward and feedback per trace id: JSON lines of {trace_id, reward, feedback}, or a JSON object of trace "
    "id -> {reward, feedback}; they override what SRC says.",
)
def import_command(
    src: Path,
    fmt: ImportFormat | None,
    out: Path,
    source_system: str | None,
    benchmark: str | None,
    models: tuple[str, ...],
    allow_empty: bool,
    no_redact: bool,
    outcomes: Path | None,
) -> None:
    """Convert SRC into a collection: a benchmark's results file or folder (the --format choices name them),
    OpenAI-style JSONL, OpenTelemetry GenAI spans as OTLP JSON (otel), or Claude Code session transcripts (a file
    or a folder).

    Secrets and personal data are redacted as a run redacts them (the built-in detectors and ace-eval.toml's
    [redaction]), in the traces and in every field of the manifest; --no-redact keeps them raw."""
    model_map = _parse_models(models)
    if (out / MANIFEST_FILE).exists() or (out / TRACES_FILE).exists():
        raise click.BadParameter(
            f"{out} already holds a trace collection: choose another folder, or delete that one first",
            param_hint="--out",
        )
    if fmt is None:
        fmt = sniff_folder_format(src) if src.is_dir() else sniff_format(src)
    imported = import_traces(fmt, src, source_system=source_system)
    judged = ""
    if outcomes is not None:
        by_id, outcomes_shape = read_outcomes(outcomes)
        imported = dataclasses.replace(imported, traces=apply_outcomes(imported.traces, by_id, file=str(outcomes)))
        judged = f"\nOutcomes: {plural(len(by_id), 'trace')} judged from {outcomes} ({outcomes_shape})."
    if not imported.traces and not allow_empty:
        raise CollectionError(
            f"holds no trace (read as {fmt}): check the file and --format, or pass --allow-empty to write an empty "
            "collection",
            file=str(src),
        )
    redactor = None if no_redact else scan_redactor(None)
    traces, replaced = redact_traces(imported.traces, redactor)
    manifest = write_collection(
        out,
        traces,
        source_system=imported.source_system,
        benchmark=benchmark or imported.benchmark,
        models={**imported.models, **model_map},
        metadata={**imported.metadata, "ace_eval_version": __version__, "redacted": redactor is not None},
        redactor=redactor,
    )
    counts = manifest.counts
    shape = f": {imported.metadata['shape']}" if imported.metadata.get("shape") else ""
    successes = plural(counts.successes, "success", "successes")
    click.echo(
        f"Imported {plural(counts.traces, 'trace')} from {src} ({fmt}{shape}): {successes} of "
        f"{counts.with_reward} with a reward, {plural(counts.tasks, 'task')}.{judged}"
    )
    if redactor is None:
        click.echo(
            "Not redacted (--no-redact): the collection holds the traces raw, secrets and personal data included."
        )
    else:
        kinds = ", ".join(f"{kind}: {n}" for kind, n in replaced.items())
        found = f" {plural(sum(replaced.values()), 'value')} ({kinds})" if replaced else ": no secret found"
        click.echo(f"Redacted{found} (--no-redact keeps the traces raw).")
    click.echo(f"Collection: {out}")


def _rate(value: float | None) -> str:
    return "-" if value is None else f"{value:.1%}"


def _number(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def format_stats(directory: Path, manifest: CollectionManifest, stats: CollectionStats, *, top_tools: int = 10) -> str:
    """The text `ace-eval collection stats` prints."""
    models = ", ".join(f"{role}={name}" for role, name in manifest.models.items()) or "-"
    rows = [
        ("source system", manifest.source_system),
        ("benchmark", manifest.benchmark or "-"),
        ("models", models),
        ("traces", f"{stats.traces} ({stats.with_reward} with a reward)"),
        ("successes", f"{stats.successes} ({_rate(stats.success_rate)}, reward >= {manifest.success_threshold:g})"),
        ("mean reward", _number(stats.mean_reward)),
        ("messages/trace", f"{stats.messages.mean:.1f} (min {stats.messages.min}, max {stats.messages.max})"),
        ("tool calls/trace", f"{stats.tool_calls.mean:.1f} (min {stats.tool_calls.min}, max {stats.tool_calls.max})"),
    ]
    if stats.tools:
        rows.append(("tools", ", ".join(f"{name} {n}" for name, n in list(stats.tools.items())[:top_tools])))
    lines = [f"Collection {directory}", *(f"  {label:<17} {value}" for label, value in rows)]
    if stats.tasks:
        width = max(len("task"), *(len(t.task_id) for t in stats.tasks))
        lines += ["", f"  {'task':<{width}}  runs  successes  mean reward"]
        lines += [
            f"  {t.task_id:<{width}}  {t.traces:>4}  {t.successes:>9}  {_number(t.mean_reward):>11}"
            for t in stats.tasks
        ]
    return "\n".join(lines)


@collection.command("stats")
@click.argument("directory", type=click.Path(path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="Print the numbers as JSON.")
def stats_command(directory: Path, as_json: bool) -> None:
    """Validate the collection in DIRECTORY and print its traces, success rate, sizes and results per task."""
    manifest, traces = read_collection(directory)
    stats = collection_stats(traces, manifest.success_threshold)
    if as_json:
        payload = {"manifest": manifest.model_dump(mode="json"), "stats": stats.to_dict()}
        click.echo(printable(json.dumps(payload, indent=1, ensure_ascii=False)))
    else:
        click.echo(printable(format_stats(directory, manifest, stats)))


@collection.command("repair")
@click.argument("directory", type=click.Path(path_type=Path))
@click.option("--allow-empty", is_flag=True, help="Recount even when no complete trace is left (the manifest says 0).")
def repair_command(directory: Path, allow_empty: bool) -> None:
    """Make an interrupted collection readable: drop a line cut off mid-write and recount the manifest.

    A folder with traces.jsonl and no manifest.json gets one (source_system from the first trace)."""
    created = not (directory / MANIFEST_FILE).exists()
    manifest, dropped = repair_collection(directory, allow_empty=allow_empty)
    if created:
        click.echo(f"Wrote the missing {MANIFEST_FILE} (source_system {manifest.source_system!r}).")
    if dropped:
        click.echo("Dropped the unfinished last line (a trace the interrupted run had not finished writing).")
    click.echo(f"Manifest recounted: traces {manifest.counts.traces}, successes {manifest.counts.successes}.")
