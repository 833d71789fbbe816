"""`ace-eval gate compare BASELINE CANDIDATE` (promote or hold) and `ace-eval scores FILE` (pass^k with intervals)."""

from __future__ import annotations

import functools
import shlex
import sys
from pathlib import Path
from typing import cast

import click

from ace_eval.benchmarks.score_files import FORMAT_HELP, SCORE_FORMATS, ScoreFormat
from ace_eval.commands import benchmark_option
from ace_eval.reporting import EXIT_RUN_FAILED, ReportingGroup

__all__ = ["gate", "scores"]


def _format(name: str | None) -> ScoreFormat | None:
    """The `--format` choice, typed (click has checked it is one of `SCORE_FORMATS`)."""
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


_json_option = click.option(
    "--json",
    "json_out",
    metavar="OUT",
    default=None,
    help="Also write the result as JSON to OUT (`-`: stdout, the table then goes to stderr).",
)
"""`--json OUT` of `gate compare` and `gate run`."""


@gate.command("compare")
@click.argument("baseline", type=click.Path(path_type=Path))
@click.argument("candidate", type=click.Path(path_type=Path))
@click.option("--format", "file_format", type=click.Choice(SCORE_FORMATS), default=None, help=FORMAT_HELP)
@_json_option
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
    baseline: Path,
    candidate: Path,
    file_format: str | None,
    json_out: str | None,
    alpha: float,
    min_effect: float,
    seed: int,
) -> None:
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


@gate.command("run")
@click.option(
    "--candidate",
    type=click.Path(path_type=Path),
    required=True,
    help="The skillbook to judge: a skillbook.json, or a run folder (its published skillbook).",
)
@click.option(
    "--incumbent",
    metavar="STORE|SKILLBOOK|none",
    default=None,
    help="What it must beat: a store (its current version), a skillbook.json, or `none` (the agent "
    "without a skillbook). Default: the --publish store.",
)
@click.option(
    "--benchmark",
    "benchmark_name",
    required=True,
    metavar="NAME",
    help="An installed benchmark (`ace-eval benchmarks list`) or MODULE:FUNCTION.",
)
@benchmark_option()
@click.option(
    "--tasks",
    "task_spec",
    metavar="IDS|SPLIT",
    default=None,
    help="The tasks both are scored on: a split's name or comma-separated task ids (default: the "
    "benchmark's evaluation split).",
)
@click.option("--num-trials", type=click.IntRange(min=1), required=True, help="Trials per task, on both sides.")
@click.option("--agent-model", default=None, help="The agent's model string, for benchmarks that call one.")
@click.option("--user-model", default=None, help="The user simulator's model string, for benchmarks that call one.")
@click.option(
    "--max-workers", type=click.IntRange(min=1), default=1, show_default=True, help="Episodes scored at once."
)
@click.option(
    "--output-dir",
    type=click.Path(path_type=Path),
    default=None,
    help="Where both sides' scores and gate.json go (default results/gate/gate_<id>/); a folder of the "
    "same comparison resumes it.",
)
@click.option(
    "--publish",
    "publish_to",
    type=click.Path(path_type=Path),
    default=None,
    metavar="STORE",
    help="On promote, publish the candidate to STORE (created if missing) with the gate's evidence; "
    "on hold, publish nothing.",
)
@_json_option
@click.option("--alpha", type=float, default=0.05, show_default=True, help="Promote only when p is below this.")
@click.option(
    "--min-effect",
    type=float,
    default=0.0,
    show_default=True,
    help="Promote only when the 95 % interval of the difference lies above this.",
)
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the bootstrap intervals.")
def run(
    candidate: Path,
    incumbent: str | None,
    benchmark_name: str,
    option_specs: tuple[str, ...],
    task_spec: str | None,
    num_trials: int,
    agent_model: str | None,
    user_model: str | None,
    max_workers: int,
    output_dir: Path | None,
    publish_to: Path | None,
    json_out: str | None,
    alpha: float,
    min_effect: float,
    seed: int,
) -> None:
    """Score the incumbent and the candidate on the same tasks and seeds, compare them, and publish on promote.

    Both run through the benchmark's own evaluation (the Benchmark protocol): first the incumbent, then the
    candidate on the seeds the incumbent's trials used. The comparison is `gate compare`'s. Exit status 0 on
    promote (published when --publish is given), 1 on hold (nothing published: the store's current version stays),
    2 on a user error (nothing written).
    """
    from ace.exceptions import UserError
    from ace_eval.benchmarks import BenchmarkEnv, BenchmarkRegistry, resolve_tasks
    from ace_eval.commands.e2e import benchmark_options
    from ace_eval.gate import (
        candidate_side,
        format_gate,
        incumbent_side,
        publish_promoted,
        run_gate,
    )
    from ace_eval.run.folder import new_run_id
    from ace_eval.store import ProducedBy, SkillbookStore, is_store

    if publish_to is not None and publish_to.exists() and not is_store(publish_to):
        raise UserError(f"--publish {publish_to} exists but is not a skillbook store; pass a store or a new folder")
    if incumbent is None:
        if publish_to is None:
            raise UserError("pass --incumbent STORE|SKILLBOOK|none (or --publish STORE: its current version)")
        incumbent = str(publish_to) if publish_to.exists() else "none"
    if not 0.0 < alpha < 1.0:
        raise UserError(f"--alpha must be between 0 and 1 (exclusive), got {alpha:g}; the usual choice is 0.05")
    new, old = candidate_side(candidate), incumbent_side(incumbent)
    benchmark = BenchmarkRegistry.from_entry_points().create(benchmark_name, benchmark_options(option_specs))
    task_ids = (
        resolve_tasks(benchmark.name, benchmark.splits(), task_spec)
        if task_spec is not None
        else tuple(benchmark.tasks("evaluate"))
    )
    names = {role: name for role, name in (("agent", agent_model), ("user", user_model)) if name is not None}
    env = BenchmarkEnv(model_names=names, max_workers=max_workers, show_progress=None)
    benchmark.check(env)
    directory = output_dir or Path("results") / "gate" / f"gate_{new_run_id().removeprefix('run_')}"
    outcome = run_gate(
        benchmark,
        env,
        incumbent=old,
        candidate=new,
        task_ids=task_ids,
        num_trials=num_trials,
        directory=directory,
        alpha=alpha,
        min_effect=min_effect,
        seed=seed,
    )
    result = outcome.result
    if json_out is not None:
        _write_json(json_out, result.model_dump_json(indent=1))
    say = functools.partial(click.echo, err=json_out == "-")
    say(format_gate(result))
    say(f"scores and gate.json: {directory}")
    if publish_to is not None:
        store = SkillbookStore.open_or_create(publish_to) if result.decision == "promote" else None
        by = ProducedBy(
            kind="gate",
            command=shlex.join(["ace-eval", *sys.argv[1:]]),
            details={"gate_dir": str(directory), "incumbent": old.label},
        )
        version = publish_promoted(store, candidate, result, produced_by=by) if store is not None else None
        if version is not None:
            say(f"published {publish_to} version {version.number} (current)")
        else:
            current = SkillbookStore(publish_to).current() if is_store(publish_to) else None
            stays = f"version {current.number}" if current is not None else "no version"
            say(f"nothing published: {publish_to} stays at {stays}")
    if result.decision == "hold":
        sys.exit(EXIT_RUN_FAILED)


@click.command("scores")
@click.argument("file", type=click.Path(path_type=Path))
@click.option("--format", "file_format", type=click.Choice(SCORE_FORMATS), default=None, help=FORMAT_HELP)
@click.option("--json", "as_json", is_flag=True, help="Print the scores as JSON.")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the bootstrap intervals.")
def scores(file: Path, file_format: str | None, as_json: bool, seed: int) -> None:
    """Print pass^1..k of a scored file (a benchmark's results file or scores JSON) with 95 % intervals.

    pass^k: per task, C(c, k) / C(n, k) for c successes (reward 1) in n trials, averaged over tasks;
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
