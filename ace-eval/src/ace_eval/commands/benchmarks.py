"""`ace-eval benchmarks list`: every benchmark installed (ace-eval's own and plugins'), as the registry loads them."""

from __future__ import annotations

import json

import click

from ace_eval.benchmarks import BenchmarkRegistry, RegisteredBenchmark
from ace_eval.commands.steps import option_json, option_text
from ace_eval.reporting import ReportingGroup

__all__ = ["benchmarks"]


def _row(benchmark: RegisteredBenchmark) -> dict[str, object]:
    factory = benchmark.factory
    return {
        "name": benchmark.name,
        "distribution": benchmark.distribution,
        "version": benchmark.version,
        "options": {name: option_json(info) for name, info in factory.options.model_fields.items()},
        "description": factory.description,
    }


@click.group("benchmarks", cls=ReportingGroup)
def benchmarks() -> None:
    """The benchmarks `ace-eval e2e --benchmark NAME` can run (`--benchmark-option key=value`)."""


@benchmarks.command("list")
@click.option("--json", "as_json", is_flag=True, help="Print the benchmarks as JSON.")
def list_benchmarks(as_json: bool) -> None:
    """Every installed benchmark: name, who registered it, its description and options."""
    registry = BenchmarkRegistry.from_entry_points()
    if as_json:
        click.echo(json.dumps([_row(b) for b in registry], indent=1, default=str))
        return
    for benchmark in registry:
        factory = benchmark.factory
        click.echo(f"{benchmark.name}  {benchmark.distribution} {benchmark.version}")
        click.echo(f"    {factory.description}")
        for name, info in factory.options.model_fields.items():
            click.echo(f"    {option_text(name, info)}")
    click.echo("Your own scoring function: --benchmark MODULE:FUNCTION (docs/benchmarks.md).", err=True)
