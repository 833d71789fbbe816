"""`ace-eval gate compare BASELINE CANDIDATE` (promote or hold) and `ace-eval scores FILE` (pass^k with intervals)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, cast

import click

from ace_eval.reporting import EXIT_RUN_FAILED, ReportingGroup

if TYPE_CHECKING:
    from ace_eval.benchmarks.score_files import ScoreFormat

__all__ = ["gate", "scores"]

_FORMATS = ("scores", "tau2")  # ace_eval.benchmarks.score_files.SCORE_FORMATS, kept here so --help imports nothing
_FORMAT_HELP = (
    "The files' format: `tau2` (a results.json tau2 wrote) or `scores` (benchmark scores JSON); "
    "told from the file when not given."
)


def _format(name: str | None) -> ScoreFormat | None:
    """The `--format` choice, typed (click has checked it is one of `_FORMATS`)."""
    return cast("ScoreFormat | None", name)


def _write_json(target: str, text: str) -> None:
    if target == "-":
        click.echo(text)
        return
    from ace.core.storage import atomic_write, bytes_writer

    atomic_write(target, bytes_writer((text + "\n").encode("utf-8")))


@click.group("gate", cls=ReportingGroup)
def gate() -> None:
    """Is a skillbook better? Paired comparisons of two scored runs on the same tasks and seeds: promote or hold.

    Exit status 0 on promote, 1 on hold, 2 on a user error (e.g. the two runs cover different tasks).
    """


@gate.command("compare")
@click.argument("baseline", type=click.Path(path_type=Path))
@click.argument("candidate", type=click.Path(path_type=Path))
@click.option("--format", "file_format", type=click.Choice(_FORMATS), default=None, help=_FORMAT_HELP)
@click.option("--json", "json_out", metavar="OUT", default=None,
              help="Also write the result as JSON to OUT (`-`: stdout, the table then goes to stderr).")  # fmt: skip
@click.option(
    "--alpha", type=float, default=0.05, show_default=True, help="Promote only when the p-value is below this."
)
@click.option(
    "--min-effect",
    type=float,
    default=0.0,
    show_default=True,
    help="Promote only when the 95 % interval of the difference in success rate lies above this.",
)
@click.option(
    "--seed",
    type=int,
    default=0,
    show_default=True,
    help="Seed of the bootstrap intervals (and of the Monte Carlo test beyond 20 differing tasks).",
)
def compare(
    baseline: Path, candidate: Path, file_format: str | None, json_out: str | None, alpha: float, min_effect: float,
    seed: int,
) -> None:  # fmt: skip
    """Compare CANDIDATE's scores with BASELINE's, task by task: promote or hold.

    Per task, the difference in success rate (candidate - baseline); its mean with a paired bootstrap 95 %
    interval over tasks (10,000 resamples); a two-sided sign-flip permutation test (exact up to 20 tasks that
    differ); pass^k of both; the smallest difference the run could resolve. It promotes iff the interval's low end
    is above --min-effect and p < --alpha. Both files must cover the same tasks with the same trials and seeds.
    """
    from ace_eval.benchmarks.score_files import read_score_file
    from ace_eval.gate import compare as compare_scores
    from ace_eval.gate import format_gate

    before = read_score_file(baseline, _format(file_format))
    after = read_score_file(candidate, _format(file_format))
    result = compare_scores(before, after, alpha=alpha, min_effect=min_effect, seed=seed)
    if json_out is not None:
        _write_json(json_out, result.model_dump_json(indent=1))
    click.echo(format_gate(result), err=json_out == "-")
    if result.decision == "hold":
        sys.exit(EXIT_RUN_FAILED)


@click.command("scores")
@click.argument("file", type=click.Path(path_type=Path))
@click.option("--format", "file_format", type=click.Choice(_FORMATS), default=None, help=_FORMAT_HELP)
@click.option("--json", "as_json", is_flag=True, help="Print the scores as JSON.")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the bootstrap intervals.")
def scores(file: Path, file_format: str | None, as_json: bool, seed: int) -> None:
    """Print pass^1..k of a scored file (a tau2 results.json or benchmark scores JSON) with 95 % intervals.

    pass^k is tau2's: per task, C(c, k) / C(n, k) for c successes (reward 1) in n trials, averaged over tasks;
    the interval is a bootstrap over tasks (10,000 resamples).
    """
    import json

    from ace_eval.benchmarks.score_files import read_score_file
    from ace_eval.gate import format_pass_hat_k

    read = read_score_file(file, _format(file_format))
    rows = read.pass_hat_ks(seed=seed)
    errors = sum(1 for trials in read.tasks.values() for t in trials if t.error is not None)
    if as_json:
        payload = {
            "benchmark": read.benchmark,
            "tasks": len(read.tasks),
            "num_trials": read.num_trials,
            "errors": errors,
            "pass_hat_k": [{"k": r.k, "value": r.value, "low": r.low, "high": r.high} for r in rows],
        }
        click.echo(json.dumps(payload, indent=1))
        return
    trials = sorted({len(t) for t in read.tasks.values()})
    shown = "-".join(map(str, (trials[0], trials[-1]) if len(trials) > 1 else trials)) if trials else "0"
    click.echo(
        f"{read.benchmark}: {len(read.tasks)} tasks x {shown} trials" + (f", {errors} errored" if errors else "")
    )
    click.echo(format_pass_hat_k(rows))
