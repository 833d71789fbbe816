"""`ace-eval data`: download benchmark data for users who have internet."""

from __future__ import annotations

from pathlib import Path

import click

from ace_eval.benchmarks.tau_bench.fetch import DEFAULT_REF, UPSTREAM_REPO, RemoteFile, fetch_airline_data
from ace_eval.reporting import ReportingGroup

__all__ = ["DEFAULT_DEST", "data"]

DEFAULT_DEST = Path("data") / "tau-bench" / "airline"


@click.group("data", cls=ReportingGroup)
def data() -> None:
    """Download benchmark data."""


@data.command("fetch")
@click.argument("name", type=click.Choice(["tau-bench"]))
@click.option(
    "--dest",
    type=click.Path(path_type=Path, file_okay=False),
    default=DEFAULT_DEST,
    show_default=True,
    help="Folder to write the airline files to (created if missing).",
)
@click.option("--ref", default=DEFAULT_REF, show_default=True, help=f"Branch, tag or commit of {UPSTREAM_REPO}.")
@click.option("--force", is_flag=True, help="Download again even files already present with the right checksum.")
@click.option("--verify/--no-verify", default=True, help="Refuse files whose sha256 differs from the pinned one.")
def fetch(name: str, dest: Path, ref: str, force: bool, verify: bool) -> None:
    """Download the public tau-bench airline files (MIT, (c) Sierra) and check their sha256.

    Afterwards pass `--data-dir DEST` to the commands that need them.
    """

    def report(file: RemoteFile, status: str) -> None:
        click.echo(f"{status:7} {dest / file.name}", err=True)

    fetch_airline_data(dest, ref=ref, force=force, verify=verify, on_file=report)
    click.echo(str(dest))
