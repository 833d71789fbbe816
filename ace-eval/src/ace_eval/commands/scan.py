"""`ace-eval scan PATH`: list the detectable secrets in a collection, a run folder or a file."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from ace.exceptions import UserError
from ace.redaction import Redactor
from ace.redaction.scan import scan_path
from ace_eval.e2e.config import resolve_settings

__all__ = ["scan", "scan_redactor"]

_SHOWN = 200


def scan_redactor(config_file: Path | None) -> Redactor:
    """The built-in detectors plus the `[redaction]` patterns and allow-list of the config file (if any)."""
    settings = resolve_settings({}, config=config_file)
    return Redactor(
        extra_patterns=settings.redaction_patterns,
        allow=settings.redaction_allow,
        allow_patterns=settings.redaction_allow_patterns,
    )


@click.command("scan")
@click.argument("path", type=click.Path(path_type=Path))
@click.option("--config", "config_file", type=click.Path(path_type=Path), help="A TOML config file "
              "(default ./ace-eval.toml if present): its [redaction] patterns and allow-list apply.")  # fmt: skip
def scan(path: Path, config_file: Path | None) -> None:
    """List where detectable secrets and personal data are in PATH (a collection, a run folder or a file).

    One line per value: file, line, JSON path, kind and a masked preview (never the value). Text files may be
    UTF-8, latin-1 or UTF-16 (with its byte-order mark), or gzip-compressed; binary files are skipped. Exit status
    1 when something is found, 0 when PATH is clean, 2 when PATH or the config cannot be read, no file in PATH
    is text, or a JSON file is nested too deep or holds a too long integer (it is still searched as text).
    """
    redactor = scan_redactor(config_file)
    if not path.exists():
        raise UserError(f"{path} does not exist: pass a collection folder, a run folder or a file")
    result = scan_path(path, redactor)
    for location in result.locations[:_SHOWN]:
        click.echo(location.describe())
    if len(result.locations) > _SHOWN:
        click.echo(f"... and {len(result.locations) - _SHOWN} more")
    for skipped in result.skipped:
        click.echo(f"skipped (binary, not text): {skipped}", err=True)
    if not result.files:
        what = f"all {len(result.skipped)} file(s) under it are binary" if result.skipped else "it holds no file"
        click.echo(f"Error: nothing was searched in {path}: {what}; pass a folder or file of text", err=True)
        sys.exit(2)
    for refusal in result.refused:
        click.echo(f"Error: {refusal} (its text was still searched)", err=True)
    if result.locations:
        kinds: dict[str, int] = {}
        for location in result.locations:
            kinds[location.kind] = kinds.get(location.kind, 0) + 1
        summary = ", ".join(f"{n} {kind}" for kind, n in sorted(kinds.items()))
        click.echo(f"scan: {len(result.locations)} found in {result.files} file(s) under {path}: {summary}", err=True)
    else:
        click.echo(f"scan: no secret found in {result.files} file(s) under {path}")
    if result.refused or result.locations:
        sys.exit(2 if result.refused else 1)
