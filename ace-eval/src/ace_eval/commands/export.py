"""`ace-eval export SKILLBOOK`: a skillbook file as markdown, each skill with the traces that taught it."""

from __future__ import annotations

from pathlib import Path

import click

from ace.core.skillbook import Skillbook
from ace.exceptions import UserError
from ace.redaction import Redactor
from ace.steps.export_markdown import write_markdown

__all__ = ["export"]


@click.command("export")
@click.argument("skillbook", type=click.Path(path_type=Path))
@click.option(
    "-o", "--output", type=click.Path(path_type=Path), help="The markdown file (default: SKILLBOOK with .md)."
)
@click.option("--title", default="Skillbook", show_default=True, help="The document's heading.")
def export(skillbook: Path, output: Path | None, title: str) -> None:
    """Write a skillbook (`skillbook.json`) as markdown: each skill, its evidence and the traces that taught it."""
    if not skillbook.is_file():
        raise UserError(
            f"{skillbook} is not a file: pass a skillbook, e.g. results/e2e/run_0123456789ab/skillbook.json"
        )
    target = output if output is not None else skillbook.with_suffix(".md")
    if target.resolve() == skillbook.resolve():
        raise UserError(f"-o {target} is the skillbook itself: pass another file, e.g. -o skillbook.md")
    if not target.parent.is_dir():
        raise UserError(f"{target.parent} does not exist: create it first or pass another -o")
    try:
        book = Skillbook.load_from_file(skillbook)
    except ValueError as e:
        raise UserError(f"{skillbook} is not a skillbook ({e}): pass a skillbook.json written by ACE") from None
    write_markdown(book, target, title=title, redactor=Redactor())
    click.echo(f"wrote {target} ({len(book.skills(include_inactive=True))} skills)")
