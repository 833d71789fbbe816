"""`ace-eval scan PATH`: list the detectable secrets in a collection, a run folder or a file."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from ace.exceptions import UserError
from ace.redaction import Redactor
from ace.redaction.scan import scan_path
from ace_eval.collection import MANIFEST_FILE, TRACES_FILE, CollectionError, iter_collection
from ace_eval.e2e.config import resolve_settings
from ace_eval.text import printable

__all__ = ["collection_refusal", "scan", "scan_redactor"]

_SHOWN = 200


def scan_redactor(config_file: Path | None) -> Redactor:
    """The built-in detectors plus the `[redaction]` patterns and allow-list of the config file (if any)."""
    settings = resolve_settings({}, config=config_file)
    return Redactor(
        extra_patterns=settings.redaction_patterns,
        allow=settings.redaction_allow,
        allow_patterns=settings.redaction_allow_patterns,
    )


def collection_refusal(path: Path, *, allow_empty: bool = False) -> CollectionError | None:
    """Why the collection at `path` is refused, as `collection stats` refuses it (a duplicate trace id, a missing
    field, counts the manifest disagrees with, ...), or an empty one unless `allow_empty`; `None` when it reads, or
    when `path` is no collection (a folder holding both manifest.json and traces.jsonl)."""
    if not ((path / MANIFEST_FILE).is_file() and (path / TRACES_FILE).is_file()):
        return None
    try:
        traces = sum(1 for _ in iter_collection(path))  # one trace at a time; the counts are checked at the end
    except CollectionError as e:
        return e
    if not traces and not allow_empty:
        return CollectionError(
            "holds no trace: check that this is the collection you meant, or pass --allow-empty to scan an empty "
            "collection",
            file=str(path / TRACES_FILE),
        )
    return None


def _about_collection(refusal: str, path: Path) -> bool:
    """Whether the safe reader's `refusal` (its text starts with the file) is about the collection's own files."""
    return any(refusal.startswith((f"{path / name}:", f"{path / name},")) for name in (MANIFEST_FILE, TRACES_FILE))


@click.command("scan")
@click.argument("path", type=click.Path(path_type=Path))
@click.option(
    "--config",
    "config_file",
    type=click.Path(path_type=Path),
    help="A TOML config file (default ./ace-eval.toml if present): its [redaction] patterns and allow-list apply.",
)
@click.option("--allow-empty", is_flag=True, help="Accept a collection that holds no trace (exit 0 when clean).")
def scan(path: Path, config_file: Path | None, allow_empty: bool) -> None:
    """List where detectable secrets and personal data are in PATH (a collection, a run folder or a file).

    One line per value: file, line, JSON path, kind and a masked preview (never the value). Text files may be
    UTF-8, latin-1 or UTF-16 (with its byte-order mark), or gzip-compressed; binary files are skipped. Any file is
    searched as text, as written and with its JSON strings decoded (JSON escapes hide nothing); a collection (a
    folder with manifest.json and traces.jsonl) is also validated as `collection stats` validates it: a duplicate
    trace id, a missing field, counts the manifest disagrees with or (unless --allow-empty) no trace at all refuse
    it, naming the file and line. A refused collection is still searched and its findings listed first: what it
    holds matters before it is shared, whatever its shape.

    \b
    Exit status:
      0  PATH is clean
      1  something was found
      2  PATH or the config cannot be read, no file in PATH is text, a JSON
         file is nested too deep or holds a too long integer, or the
         collection is refused (the findings are still listed above it)
    """
    redactor = scan_redactor(config_file)
    if not path.exists():
        raise UserError(f"{path} does not exist: pass a collection folder, a run folder or a file")
    invalid = collection_refusal(path, allow_empty=allow_empty)
    result = scan_path(path, redactor)
    for location in result.locations[:_SHOWN]:
        click.echo(printable(location.describe()))
    if len(result.locations) > _SHOWN:
        click.echo(f"... and {len(result.locations) - _SHOWN} more")
    for skipped in result.skipped:
        click.echo(printable(f"skipped (binary, not text): {skipped}"), err=True)
    if not result.files:
        what = f"all {len(result.skipped)} file(s) under it are binary" if result.skipped else "it holds no file"
        click.echo(f"Error: nothing was searched in {path}: {what}; pass a folder or file of text", err=True)
        sys.exit(2)
    # the collection reader's refusal names the first problem of its files; the scan's own would repeat it
    refused = [r for r in result.refused if invalid is None or not _about_collection(r, path)]
    for refusal in refused:
        click.echo(printable(f"Error: {refusal} (its text was still searched)"), err=True)
    if invalid is not None:
        click.echo(printable(f"Error: {invalid} (the collection is refused; its files were still searched)"), err=True)
    if result.locations:
        kinds: dict[str, int] = {}
        for location in result.locations:
            kinds[location.kind] = kinds.get(location.kind, 0) + 1
        summary = ", ".join(f"{n} {kind}" for kind, n in sorted(kinds.items()))
        click.echo(f"scan: {len(result.locations)} found in {result.files} file(s) under {path}: {summary}", err=True)
    else:
        click.echo(f"scan: no secret found in {result.files} file(s) under {path}")
    if refused or invalid is not None or result.locations:
        sys.exit(2 if refused or invalid is not None else 1)
