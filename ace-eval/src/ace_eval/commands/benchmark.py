"""`ace-eval benchmark`: validate a benchmark's data folder (and recorded runs) offline."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from ace.exceptions import UserError
from ace_eval.benchmarks import BenchmarkRegistry, GoldCheck
from ace_eval.reporting import ReportingGroup

__all__ = ["benchmark"]


@click.group("benchmark", cls=ReportingGroup)
def benchmark() -> None:
    """Check benchmark data offline."""


@benchmark.command("check")
@click.argument("name", metavar="NAME")
@click.option(
    "--data-dir",
    type=click.Path(path_type=Path, file_okay=False),
    help="The benchmark's data folder, for a benchmark that takes the option data_dir (its default and the "
    "environment variable it reads: `ace-eval benchmarks list`).",
)
@click.option(
    "--trajectories",
    type=click.Path(path_type=Path, dir_okay=False),
    help="A results file of recorded runs whose tool calls are re-executed and re-scored (for a benchmark that "
    "re-scores recorded runs).",
)
@click.option("--progress/--no-progress", default=True, help="Show a progress bar on stderr.")
def check(name: str, data_dir: Path | None, trajectories: Path | None, progress: bool) -> None:
    """Replay every task's gold actions of benchmark NAME offline and print one line per task.

    What a line holds, and whether the benchmark re-scores recorded runs (--trajectories), is the benchmark's own
    gold check (docs/benchmarks.md); the exit status is 1 if a task (or a recorded run) does not reach what it
    should, and 2 for a benchmark without a gold check.
    """
    registered = BenchmarkRegistry.from_entry_points().get(name)  # an unknown name lists the installed ones
    takes_data = "data_dir" in registered.factory.options.model_fields
    if data_dir is not None and not takes_data:
        click.echo(f"note: --data-dir has no effect: {name} takes no data_dir option", err=True)
    built = registered.create({"data_dir": str(data_dir)} if data_dir is not None and takes_data else {})
    if not isinstance(built, GoldCheck):
        raise UserError(
            f"{name} has no gold check: its plugin does not implement `check_gold` (the GoldCheck protocol of "
            "ace_eval.benchmarks); `ace-eval benchmarks list` shows the installed benchmarks"
        )
    passed = built.check_gold(
        recorded=trajectories, progress=progress, out=click.echo, err=lambda line: click.echo(line, err=True)
    )
    if not passed:
        sys.exit(1)
