"""The `ace-eval` command line."""

from __future__ import annotations

import click

from ace_eval import __version__
from ace_eval.commands.benchmark import benchmark
from ace_eval.commands.collection import collection
from ace_eval.commands.data import data
from ace_eval.commands.demo import demo
from ace_eval.commands.e2e import e2e
from ace_eval.commands.inspect import inspect
from ace_eval.commands.scan import scan
from ace_eval.commands.verify import verify


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="ace-eval")
def main() -> None:
    """Run ACE on benchmarks and trace collections, and export the learned skillbook.

    ACE learns from an agent's traces: a reflector reads each trace, a skill manager turns
    what went wrong into atomic edits of a skillbook, and the skillbook goes back into the
    agent's context.
    """


# Sub-commands register below, one line each (keep this block sorted).
# -- commands --
main.add_command(benchmark)
main.add_command(collection)
main.add_command(data)
main.add_command(demo)
main.add_command(e2e)
main.add_command(inspect)
main.add_command(scan)
main.add_command(verify)


if __name__ == "__main__":
    main()
