"""`ace-eval skillbook publish|versions|path|diff|rollback`: a store of immutable skillbook versions.

A store is a folder (`store.json`, `versions/NNNN/`, `current`); see docs/versions.md. Publishing by hand is
ungated and `version.json` says so; the gate (`ace-eval gate run --publish STORE`) publishes gated versions.
"""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path

import click

from ace.exceptions import UserError

__all__ = ["skillbook"]

_HAND_REASON = "published by hand (ace-eval skillbook publish): no gate compared it with the version before"


@click.group("skillbook")
def skillbook() -> None:
    """Skillbook versions: publish to a store, list, diff, roll back (a store holds immutable versions).

    An agent reads a store's current version (`SkillInstructions(STORE)`, `ace-eval e2e --skillbook STORE`).
    """


@skillbook.command("publish")
@click.argument("source", type=click.Path(path_type=Path))
@click.option(
    "--to",
    "store",
    required=True,
    type=click.Path(path_type=Path),
    help="The store (a folder; created when missing or empty).",
)
@click.option("--no-gate", is_flag=True, help="Say that this version is published without the gate (always so here).")
@click.option("--reason", help="Why it is published ungated (recorded in version.json, redacted).")
def publish(source: Path, store: Path, no_gate: bool, reason: str | None) -> None:
    """Publish SOURCE (a skillbook.json, or a run folder's skillbook) as the store's new current version.

    The skillbook, its .embeddings.npz and .index.npz are copied into versions/NNNN/ with version.json (parent,
    time, this command, the SHA-256 of every file, and that it is ungated and why), then `current` moves to it.
    A SOURCE that does not read as a skillbook is refused before anything is written.
    """
    from ace.integrations.store_format import SKILLBOOK_FILE
    from ace_eval.store import ProducedBy, SkillbookStore, read_source

    read_source(source)  # refuse a bad source before the store folder is even created
    command = ["ace-eval", "skillbook", "publish", str(source), "--to", str(store)]
    if no_gate:
        command.append("--no-gate")
    if reason:
        command += ["--reason", reason]
    target = SkillbookStore.open_or_create(store)
    version = target.publish(
        source,
        produced_by=ProducedBy(kind="command", command=shlex.join(command)),
        ungated_reason=reason or _HAND_REASON,
    )
    if not no_gate and not reason:
        click.echo("note: published without the gate (pass --no-gate --reason TEXT to say why)", err=True)
    parent = f" (parent {version.parent})" if version.parent is not None else " (the first)"
    click.echo(f"published version {version.number}{parent} to {store}; current is {version.number}")
    if version.parent is not None and target.version(version.parent).files.get(SKILLBOOK_FILE) == version.files.get(
        SKILLBOOK_FILE
    ):
        click.echo(
            f"note: its skillbook.json is the same, byte for byte, as version {version.parent}'s: the agent reads "
            "the same skills (`skillbook diff` shows no change)",
            err=True,
        )
    click.echo(str(version.skillbook_path))


@skillbook.command("versions")
@click.argument("store", type=click.Path(path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="Print the versions as JSON (version.json plus folder, current).")
@click.option("--verify", is_flag=True, help="Recompute every file's SHA-256; exit 1 naming each file that differs.")
def versions(store: Path, as_json: bool, verify: bool) -> None:
    """List the versions of STORE, oldest first: number, parent, time, who produced it, gated or why not."""
    from ace_eval.store import SkillbookStore

    opened = SkillbookStore(store)
    all_versions = opened.versions()
    current = opened.current_number()
    problems = opened.verify() if verify else []
    if as_json:
        rows = [{**v.to_dict(), "current": v.number == current} for v in all_versions]
        out: dict[str, object] = {"store": str(store), "current": current, "versions": rows}
        if verify:
            out["problems"] = [{"path": str(p.path), "message": p.message} for p in problems]
        click.echo(json.dumps(out, indent=2, ensure_ascii=False))
    else:
        if not all_versions:
            click.echo(f"{store}: no versions yet")
        for v in all_versions:
            mark = "*" if v.number == current else " "
            parent = f"parent {v.parent}" if v.parent is not None else "first"
            how = _gate_line(v.gate) if v.gate is not None else f"ungated: {v.ungated_reason}"
            by = v.produced_by.run_id or v.produced_by.kind
            click.echo(f"{mark} {v.number:>4}  {parent:<10} {v.created_at[:19]}  {by:<18} {how}")
        if verify:
            for p in problems:
                click.echo(f"problem: {p}", err=True)
            if not problems:
                click.echo(f"verified: every file of {len(all_versions)} version(s) matches its SHA-256")
    if problems:
        sys.exit(1)


def _gate_line(gate: object) -> str:
    """`gated: promote (delta +0.150, p 0.012)` from the gate's evidence, whatever else it holds."""
    if not isinstance(gate, dict):
        return "gated"
    parts = []
    delta = gate.get("delta")
    mean = delta.get("mean") if isinstance(delta, dict) else delta
    if isinstance(mean, int | float):
        parts.append(f"delta {mean:+.3f}")
    if isinstance(gate.get("p_value"), int | float):
        parts.append(f"p {gate['p_value']:.3g}")
    decision = f" {gate['decision']}" if isinstance(gate.get("decision"), str) else ""
    return f"gated:{decision}" + (f" ({', '.join(parts)})" if parts else "")


@skillbook.command("path")
@click.argument("store", type=click.Path(path_type=Path))
@click.option("--version", "number", type=click.IntRange(min=1), help="This version instead of the current one.")
def path(store: Path, number: int | None) -> None:
    """Print the skillbook file of STORE's current version (or --version N), as the last line."""
    from ace_eval.store import SkillbookStore

    click.echo(str(SkillbookStore(store).skillbook_path(number)))


@skillbook.command("diff")
@click.argument("store", type=click.Path(path_type=Path))
@click.argument("a", type=click.IntRange(min=1))
@click.argument("b", type=click.IntRange(min=1))
@click.option("--json", "as_json", is_flag=True, help="Print the difference as JSON.")
def diff(store: Path, a: int, b: int, as_json: bool) -> None:
    """What changed from version A to version B of STORE: skills added, removed and changed, by id."""
    from ace_eval.store import SkillbookStore, diff_skillbooks

    opened = SkillbookStore(store)
    result = diff_skillbooks(opened.load(a), opened.load(b))
    if as_json:
        click.echo(json.dumps({"from": a, "to": b, **result.to_dict()}, indent=2, ensure_ascii=False))
        return
    click.echo(
        f"version {a} -> {b}: {len(result.added)} added, {len(result.removed)} removed, {len(result.changed)} "
        f"changed, {result.unchanged} unchanged"
    )
    for s in result.added:
        click.echo(f"+ {s.id} [{s.section}] {s.issue}" + (f"\n    -> {s.insight}" if s.insight else ""))
    for s in result.removed:
        click.echo(f"- {s.id} [{s.section}] {s.issue}")
    for c in result.changed:
        click.echo(f"~ {c.skill_id}")
        for name, (before, after) in c.fields.items():
            click.echo(f"    {name}: {before!r} -> {after!r}")


@skillbook.command("rollback")
@click.argument("store", type=click.Path(path_type=Path))
@click.option("--to", "to", type=click.IntRange(min=1), help="The version to make current (default: current's parent).")
def rollback(store: Path, to: int | None) -> None:
    """Make an earlier version of STORE current again (default: the current one's parent). Deletes nothing."""
    from ace_eval.store import SkillbookStore, StoreFormatError

    opened = SkillbookStore(store)
    try:
        before: int | str | None = opened.current_number()
    except StoreFormatError:  # a damaged or dangling pointer: `--to N` is its fix
        if to is None:
            raise
        before = "(damaged)"
    if to is not None and to == before:
        raise UserError(f"version {to} is current already: nothing to roll back")
    version = opened.rollback(to)
    click.echo(f"current: {before} -> {version.number} ({store}); no version was deleted")
    click.echo(str(version.skillbook_path))
