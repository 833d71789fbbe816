"""Click command groups of `ace-eval`, one module each; the options several commands share are defined here once."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click

__all__ = ["benchmark_option"]

_F = TypeVar("_F", bound=Callable[..., Any])


def benchmark_option(dest: str = "option_specs") -> Callable[[_F], _F]:
    """`--benchmark-option KEY=VALUE` (repeatable) into the parameter `dest`: the same help wherever a command runs
    a benchmark (`e2e`, `gate run`, `trials`, `serve`); `ace_eval.commands.e2e.benchmark_options` parses it."""
    return click.option(
        "--benchmark-option",
        dest,
        multiple=True,
        metavar="KEY=VALUE",
        help="Set one of the benchmark's own options (repeatable; `ace-eval benchmarks list` shows them), e.g. "
        "--benchmark-option flakiness=0.1.",
    )
