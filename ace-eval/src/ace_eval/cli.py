"""The `ace-eval` command line.

Sub-commands load lazily: `ace-eval --help` and `--version` import no command module (and so neither
pydantic-ai nor litellm); a command's module is imported only when that command runs or shows its own help.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

import click

from ace_eval.reporting import EXIT_CODES_HELP, ReportingGroup

__all__ = ["COMMANDS", "LazyCommand", "LazyGroup", "main"]


@dataclass(frozen=True)
class LazyCommand:
    """Where a sub-command lives, and the one-line help `ace-eval --help` shows without importing it."""

    module: str
    attribute: str
    short_help: str

    def load(self) -> click.Command:
        """Import the command's module and return the command."""
        command = getattr(importlib.import_module(self.module), self.attribute)
        if not isinstance(command, click.Command):
            raise TypeError(f"{self.module}.{self.attribute} is not a click command")
        return command


# One line per sub-command, sorted; tests/test_cli.py checks each short help against the command's own.
COMMANDS: Mapping[str, LazyCommand] = MappingProxyType(
    {
        "benchmark": LazyCommand("ace_eval.commands.benchmark", "benchmark", "Check benchmark data offline."),
        "benchmarks": LazyCommand(
            "ace_eval.commands.benchmarks",
            "benchmarks",
            "The benchmarks `ace-eval e2e --benchmark NAME` can run (`--benchmark-option key=value`).",
        ),
        "collection": LazyCommand(
            "ace_eval.commands.collection",
            "collection",
            "Trace collections: a folder with manifest.json and traces.jsonl (one trace per line).",
        ),
        "data": LazyCommand("ace_eval.commands.data", "data", "Download benchmark data."),
        "demo": LazyCommand(
            "ace_eval.commands.demo",
            "demo",
            "Learn a skillbook from examples/demo-collection (10 airline traces), with no key and no internet.",
        ),
        "e2e": LazyCommand("ace_eval.commands.e2e", "e2e", "Run ACE end to end and write results/e2e/run_<id>/."),
        "export": LazyCommand(
            "ace_eval.commands.export",
            "export",
            "Write a skillbook (`skillbook.json`) as markdown: each skill, its evidence and the traces that taught it.",
        ),
        "gate": LazyCommand(
            "ace_eval.commands.gate",
            "gate",
            "Is a skillbook better? Paired comparisons of two scored runs on the same tasks and seeds: promote or "
            "hold.",
        ),
        "inspect": LazyCommand(
            "ace_eval.commands.inspect",
            "inspect",
            "Show each session of a run: which trace, which reflection (key insight), which tool calls with their "
            "atomic signature, which skills changed.",
        ),
        "report": LazyCommand(
            "ace_eval.commands.report",
            "report",
            "Write one self-contained HTML page about one or more run folders, or a skillbook store (no network "
            "needed).",
        ),
        "federate": LazyCommand(
            "ace_eval.commands.federate",
            "federate",
            "Share skills across projects through a hub: push, status, promote, reject, revoke, pull.",
        ),
        "review": LazyCommand(
            "ace_eval.commands.review",
            "review",
            "Decide the candidates of a review run (`ace-eval e2e --review --skillbook PATH`).",
        ),
        "runs": LazyCommand(
            "ace_eval.commands.runs",
            "runs",
            "List the run folders under DIR (default results/): status, date, samples, skills, score; newest first.",
        ),
        "scores": LazyCommand(
            "ace_eval.commands.gate",
            "scores",
            "Print pass^1..k of a scored file (a benchmark's results file or scores JSON) with 95 % intervals.",
        ),
        "scan": LazyCommand(
            "ace_eval.commands.scan",
            "scan",
            "List where detectable secrets and personal data are in PATH (a collection, a run folder or a file).",
        ),
        "serve": LazyCommand(
            "ace_eval.commands.serve",
            "serve",
            "Learn from your agent's OpenTelemetry spans in production; publish gated skillbook versions; "
            "serve skills.",
        ),
        "skillbook": LazyCommand(
            "ace_eval.commands.skillbook",
            "skillbook",
            "Skillbook versions: publish to a store, list, diff, roll back (a store holds immutable versions).",
        ),
        "skills": LazyCommand(
            "ace_eval.commands.skills",
            "skills",
            "Each skill's KPIs from the reflections' tags, and quarantine decisions by a person.",
        ),
        "steps": LazyCommand(
            "ace_eval.commands.steps",
            "steps",
            "The pipeline steps `ace-eval e2e` can run (`--step NAME`, `--no-step NAME`).",
        ),
        "trials": LazyCommand(
            "ace_eval.commands.trials",
            "trials",
            "Compare ways to learn a skillbook on the same dev tasks; gate and keep the best, record the rest.",
        ),
        "verify": LazyCommand(
            "ace_eval.commands.verify",
            "verify",
            "Check a run's skillbook against the smoke-test list of the skillbook v2 design.",
        ),
    }
)


class LazyGroup(ReportingGroup):
    """A click group whose sub-commands are imported on first use; its help lists them from `COMMANDS`."""

    def __init__(self, *args: object, lazy_commands: Mapping[str, LazyCommand], **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.lazy_commands = lazy_commands

    def list_commands(self, ctx: click.Context) -> list[str]:
        """Every command name, eager and lazy, sorted."""
        return sorted({*super().list_commands(ctx), *self.lazy_commands})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        """The command, importing its module the first time it is asked for."""
        command = super().get_command(ctx, cmd_name)
        if command is None and cmd_name in self.lazy_commands:
            command = self.lazy_commands[cmd_name].load()
            self.add_command(command, cmd_name)
        return command

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """The "Commands:" section, from the short helps in `lazy_commands` (no import)."""
        limit = formatter.width - 6 - max((len(name) for name in self.list_commands(ctx)), default=0)
        rows: list[tuple[str, str]] = []
        for name in self.list_commands(ctx):
            loaded = self.commands.get(name)
            if loaded is not None:
                if not loaded.hidden:
                    rows.append((name, loaded.get_short_help_str(limit)))
            else:
                rows.append((name, _shorten(self.lazy_commands[name].short_help, limit)))
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)


def _print_version(ctx: click.Context, _param: click.Parameter, value: bool) -> None:
    """`--version`: the installed version, looked up only when asked for."""
    if not value or ctx.resilient_parsing:
        return
    import ace_eval

    click.echo(f"ace-eval, version {ace_eval.__version__}")
    ctx.exit()


def _shorten(text: str, limit: int) -> str:
    """Click's own shortening of a short help (first sentence, cut at a word, ending in `...`)."""
    return click.Command(None, help=text).get_short_help_str(limit)


@click.group(
    cls=LazyGroup,
    lazy_commands=COMMANDS,
    context_settings={"help_option_names": ["-h", "--help"]},
    epilog=EXIT_CODES_HELP,
)
@click.option(
    "--version",
    is_flag=True,
    expose_value=False,
    is_eager=True,
    callback=_print_version,
    help="Show the version and exit.",
)
def main() -> None:
    """Run ACE on benchmarks and trace collections, and export the learned skillbook.

    ACE learns from an agent's traces: a reflector reads each trace, a skill manager turns
    what went wrong into atomic edits of a skillbook, and the skillbook goes back into the
    agent's context.
    """


if __name__ == "__main__":
    main()
