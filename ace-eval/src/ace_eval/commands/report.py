"""`ace-eval report RUN_DIR [RUN_DIR ...]`: one self-contained HTML page about the runs."""

from __future__ import annotations

import time
from pathlib import Path

import click

from ace.exceptions import UserError

__all__ = ["report"]


@click.command("report")
@click.argument(
    "run_dirs", metavar="RUN_DIR... | STORE | TRIAL_DIR", nargs=-1, required=True, type=click.Path(path_type=Path)
)
@click.option(
    "-o",
    "--output",
    type=click.Path(path_type=Path),
    help="The HTML file to write (default: RUN_DIR/report.html for one run, ./report.html for several or a store).",
)
def report(run_dirs: tuple[Path, ...], output: Path | None) -> None:
    """Write one self-contained HTML page about one or more run folders, or a skillbook store (no network needed).

    Overview (status, pipeline, models, tokens and cost per role, time per step, errors), learning (skills over
    samples, every skill with its evidence and the traces, reflections and sessions that taught it), samples (a
    filterable, sortable table with each transcript), the benchmark when the agent ran, and, for two or more
    folders, a comparison. The page holds only what the folders hold. It opens on a tab or a sample from its
    address: report.html#learning, report.html#sample-4.

    A trial folder (`ace-eval trials`) gets its own page: the scoreboard, a task x candidate heatmap of dev
    rewards, the Pareto set, the gate's table, the held-out test result, and each candidate's run page.

    A skillbook store (`ace-eval skillbook publish ... --to STORE`) gets its own page: its versions with their
    lineage, the current one, who produced each, what changed from its parent, and each gate's evidence. A
    federation hub (`ace-eval federate`) gets its clusters, projects x skills matrix, promotions and revocations.
    """
    from ace.integrations.store_format import is_store
    from ace_eval.report import read_report_run, write_report
    from ace_eval.report.trial_page import is_trial

    if len(run_dirs) == 1 and is_trial(run_dirs[0]):
        _trial_page(run_dirs[0], output or run_dirs[0] / "report.html")
        return
    if output is None:
        one_run = len(run_dirs) == 1 and run_dirs[0].is_dir() and not is_store(run_dirs[0])
        one_run = one_run and not (run_dirs[0] / "hub.json").is_file()
        output = run_dirs[0] / "report.html" if one_run else Path("report.html")
    if output.is_dir():
        raise UserError(f"-o {output} is a folder: pass a file name, e.g. -o {output / 'report.html'}")
    if not output.parent.is_dir():
        raise UserError(f"-o {output}: the folder {output.parent} does not exist; create it first")
    started = time.perf_counter()
    if len(run_dirs) == 1 and (run_dirs[0] / "hub.json").is_file():
        from ace_eval.commands.federate import LazyEmbedder
        from ace_eval.federation import Hub
        from ace_eval.report.hub_page import write_hub_page

        size = write_hub_page(Hub(run_dirs[0]), output, LazyEmbedder())
        click.echo(f"wrote {output} ({size / 1e6:.2f} MB, hub {run_dirs[0]}) in {time.perf_counter() - started:.1f} s")
        return
    stores = [path for path in run_dirs if is_store(path)]
    if stores:
        if len(run_dirs) > 1:
            raise UserError(f"{stores[0]} is a skillbook store: report on it alone (one page per store)")
        from ace_eval.report.store_page import write_store_page
        from ace_eval.store import SkillbookStore

        store = SkillbookStore(stores[0])
        size = write_store_page(store, output)
        count = len(store.numbers())
        click.echo(
            f"wrote {output} ({size / 1e6:.2f} MB, store {stores[0]}, {count} version{'s' if count != 1 else ''}) "
            f"in {time.perf_counter() - started:.1f} s"
        )
        return
    runs = [read_report_run(path) for path in run_dirs]
    for run in runs:
        if run.skipped_traces:
            click.echo(
                f"note: {run.path}: left out {run.skipped_traces} line(s) of collection/traces.jsonl that are not "
                "trace records within the safe reader's limits (`ace-eval verify` checks the folder)",
                err=True,
            )
    size = write_report(runs, output)
    samples = sum(len(run.view.samples) for run in runs)
    click.echo(
        f"wrote {output} ({size / 1e6:.2f} MB, {len(runs)} run{'s' if len(runs) != 1 else ''}, {samples} samples) "
        f"in {time.perf_counter() - started:.1f} s"
    )
    click.echo(f"Report: {output.resolve()}")


def _trial_page(trial: Path, output: Path) -> None:
    from ace_eval.report.trial_page import write_trial_page

    if output.is_dir() or not output.parent.is_dir():
        raise UserError(f"-o {output}: pass a file name in an existing folder, e.g. -o {trial / 'report.html'}")
    size = write_trial_page(trial, output)
    click.echo(f"wrote {output} ({size / 1e6:.2f} MB, trial {trial}); each candidate's run page beside its run.json")
    click.echo(f"Report: {output.resolve()}")
