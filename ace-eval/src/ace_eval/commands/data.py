"""`ace-eval data`: download benchmark data for users who have internet (a benchmark's `DataSource`)."""

from __future__ import annotations

from pathlib import Path

import click

from ace.exceptions import UserError
from ace_eval.benchmarks import BenchmarkRegistry, DataSource
from ace_eval.reporting import ReportingGroup

__all__ = ["data", "data_source"]


@click.group("data", cls=ReportingGroup)
def data() -> None:
    """Download benchmark data."""


@data.command("fetch")
@click.argument("name", metavar="NAME")
@click.option(
    "--dest",
    type=click.Path(path_type=Path, file_okay=False),
    help="Folder to write the files to (created if missing); default: the data's own folder, printed at the end.",
)
@click.option("--ref", help="Branch, tag or commit of the data's upstream repository (default: the one it pins).")
@click.option("--force", is_flag=True, help="Download again even files already present with the right checksum.")
@click.option("--verify/--no-verify", default=True, help="Refuse files whose sha256 differs from the pinned one.")
def fetch(name: str, dest: Path | None, ref: str | None, force: bool, verify: bool) -> None:
    """Download the public data NAME (or benchmark NAME's) and check each file's sha256.

    A name that no installed benchmark fetches lists the ones that can. Afterwards pass `--data-dir DEST` to the
    commands that need them; the last line printed is the folder.
    """
    source = data_source(name)
    folder = dest if dest is not None else source.dest

    def report(file: str, status: str) -> None:
        click.echo(f"{status:7} {folder / file}", err=True)

    source.fetch(folder, ref=ref or source.default_ref, force=force, verify=verify, on_file=report)
    click.echo(str(folder))


def data_source(name: str) -> DataSource:
    """The data `ace-eval data fetch NAME` downloads: a source's name, or a benchmark's that has one.

    Raises:
        UserError: no installed benchmark fetches data of that name (the message lists the ones that do).
    """
    sources: dict[str, tuple[DataSource, list[str]]] = {}
    for registered in BenchmarkRegistry.from_entry_points():
        source = registered.factory.data
        if source is not None:
            sources.setdefault(source.name, (source, []))[1].append(registered.name)
    for source, benchmarks in sources.values():
        if name == source.name or name in benchmarks:
            return source
    known = "; ".join(f"{s.name} (for {', '.join(b)}): {s.description}" for s, b in sources.values())
    raise UserError(
        f"no installed benchmark fetches data called {name!r}: pass one of these names: {known or 'none installed'} "
        "(`ace-eval benchmarks list` shows every benchmark; the others ship their data)"
    )
