"""`ace-eval steps list`: every pipeline step installed (ACE's own and plugins'), as the registry loads them."""

from __future__ import annotations

import json

import click
from pydantic.fields import FieldInfo

from ace.pipeline.registry import RegisteredStep, StepRegistry
from ace_eval.reporting import ReportingGroup

__all__ = ["option_json", "option_text", "steps"]


def _row(step: RegisteredStep) -> dict[str, object]:
    factory = step.factory
    return {
        "name": step.name,
        "phase": step.phase,
        "requires": sorted(factory.requires),
        "provides": sorted(factory.provides),
        "distribution": step.distribution,
        "version": step.version,
        "options": {name: option_json(info) for name, info in factory.options.model_fields.items()},
        "description": factory.description,
    }


def option_json(info: FieldInfo) -> dict[str, object]:
    """An option as JSON: `required` true and no default, or its default."""
    if info.is_required():
        return {"required": True, "help": info.description or ""}
    return {"required": False, "default": info.get_default(call_default_factory=True), "help": info.description or ""}


def option_text(name: str, info: FieldInfo) -> str:
    """`option NAME (required)` or `option NAME=DEFAULT`, then its help."""
    head = (
        f"option {name} (required)"
        if info.is_required()
        else f"option {name}={info.get_default(call_default_factory=True)!r}"
    )
    return head + (f": {info.description}" if info.description else "")


@click.group("steps", cls=ReportingGroup)
def steps() -> None:
    """The pipeline steps `ace-eval e2e` can run (`--step NAME`, `--no-step NAME`)."""


@steps.command("list")
@click.option("--json", "as_json", is_flag=True, help="Print the steps as JSON.")
def list_steps(as_json: bool) -> None:
    """Every installed step: name, phase, what it requires and provides, who registered it, its options."""
    registry = StepRegistry.from_entry_points()
    if as_json:
        click.echo(json.dumps([_row(s) for s in registry], indent=1, default=str))
        return
    for step in registry:
        factory = step.factory
        click.echo(f"{step.name}  [{step.phase}]  {step.distribution} {step.version}")
        click.echo(f"    {factory.description}")
        requires, provides = ", ".join(sorted(factory.requires)) or "-", ", ".join(sorted(factory.provides)) or "-"
        click.echo(f"    requires: {requires}   provides: {provides}")
        for name, info in factory.options.model_fields.items():
            click.echo(f"    {option_text(name, info)}")
