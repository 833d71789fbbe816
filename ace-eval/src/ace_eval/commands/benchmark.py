"""`ace-eval benchmark`: validate a benchmark's data folder (and recorded runs) offline."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from ace.exceptions import UserError
from ace_eval.benchmarks import BenchmarkRegistry
from ace_eval.benchmarks.tau_bench.check import (
    PROVINCE_REVISION,
    GoldHashes,
    TrajectoryCheck,
    check_recorded_runs,
    has_state_addresses,
    load_trajectories,
)
from ace_eval.benchmarks.tau_bench.data import FETCH_HINT, load_airline_data
from ace_eval.reporting import ReportingGroup

__all__ = ["DATA_DIR_ENV", "benchmark"]

DATA_DIR_ENV = "ACE_TAU_BENCH_DATA"
"""Environment variable naming the airline data folder when `--data-dir` is not given."""


@click.group("benchmark", cls=ReportingGroup)
def benchmark() -> None:
    """Check benchmark data offline."""


@benchmark.command("check")
@click.argument("name", metavar="NAME")
@click.option(
    "--data-dir",
    type=click.Path(path_type=Path, file_okay=False),
    envvar=DATA_DIR_ENV,
    help=f"The airline data folder (flights.json, reservations.json, users.json, wiki.md, tasks_test.json); "
    f"default ${DATA_DIR_ENV}.",
)
@click.option(
    "--trajectories",
    type=click.Path(path_type=Path, dir_okay=False),
    help="A tau-bench results file (JSON list of runs) whose tool calls are re-executed and re-scored.",
)
@click.option("--progress/--no-progress", default=True, help="Show a progress bar on stderr.")
def check(name: str, data_dir: Path | None, trajectories: Path | None, progress: bool) -> None:
    """Replay every task's gold actions and print `<task_id> <gold hash>`.

    With --trajectories, re-execute every recorded run on a fresh database instead and print
    `<task_id> <trial> <recorded reward> <computed reward>`; the exit status is 1 if any reward differs.
    When the folder's users.json is the later upstream revision (address.state) and the runs were recorded on
    the earlier one (address.province), the runs are re-executed on that revision, and the output says so.

    tau2-<domain> (needs `pip install "ace-eval[tau2]"`): every task of the domain's base set has its gold actions
    replayed and scored by tau2's evaluator; prints `<task_id> <reward>`, exit status 1 if one is below 1.0.
    A task tau2's own data cannot solve (tau2-mock has one) is named with its reason and not counted.
    """
    factory = BenchmarkRegistry.from_entry_points().get(name).factory  # an unknown name lists the installed ones
    kind = factory.options.__module__  # by name: a test may have imported the plugin module afresh
    if kind == "ace_eval.benchmarks.tau2_plugin":
        if trajectories is not None:
            raise click.UsageError("--trajectories applies to tau-bench-airline only: drop it")
        _check_tau2(name)
        return
    if kind != "ace_eval.benchmarks.tau_bench_plugin":
        raise UserError(f"{name} has no gold actions to check: `ace-eval benchmark check` checks tau-bench and tau2")
    if data_dir is None:
        raise click.UsageError(f"pass --data-dir (or set ${DATA_DIR_ENV}); to get the data, {FETCH_HINT}")
    data = load_airline_data(data_dir)
    runs = load_trajectories(trajectories) if trajectories is not None else None
    if runs is None:
        for task_id, gold_hash in GoldHashes(data).all(progress=progress):
            click.echo(f"{task_id} {gold_hash}")
        if has_state_addresses(data):
            click.echo(
                "note: users.json holds the later upstream revision (address.state); runs recorded on the earlier "
                "one (address.province) record other gold hashes: pass --trajectories FILE to check them on the "
                "revision they were made on",
                err=True,
            )
        return
    try:
        result = check_recorded_runs(data, runs, progress=progress)
    except IndexError as e:
        raise UserError(f"{trajectories}: {e}") from None
    checks = result.checks
    for c in checks:
        click.echo(f"{c.task_id} {c.trial} {c.recorded_reward} {c.reward}")
    mismatches = [c for c in checks if not c.matches]
    click.echo(
        f"{len(checks) - len(mismatches)}/{len(checks)} recorded rewards reproduced; {_agreement(checks)}", err=True
    )
    if result.revision == PROVINCE_REVISION:
        click.echo(
            f"note: users.json here is the later upstream revision (address.state); the runs were recorded on the "
            f"earlier one, so they were re-executed on {PROVINCE_REVISION}. On the folder's revision: "
            f"{_agreement(result.folder_checks)}",
            err=True,
        )
    elif any(c.gold_hash_matches is False or c.observation_mismatches for c in checks):
        click.echo(
            "note: differing tool results or gold hashes mean the runs were recorded on another revision of the "
            "data than this folder holds",
            err=True,
        )
    if mismatches:
        click.echo(f"error: {len(mismatches)} run(s) scored differently than recorded", err=True)
        sys.exit(1)


def _check_tau2(name: str) -> None:
    """Replay the gold actions of every task of the domain's base set through tau2's evaluator."""
    from ace_eval.benchmarks import tau2  # without the extra: Tau2NotInstalledError, exit 2, nothing written

    domain = tau2.benchmark_domain(name)
    known = tau2.KNOWN_GOLD_EXCEPTIONS.get(domain, {})
    failed: list[str] = []
    results = tau2.check_gold(domain, "base")
    for result in results:
        click.echo(result.line())
        if result.passed:
            continue
        if result.task_id in known:
            click.echo(f"note: {result.task_id} is a known exception, not counted: {known[result.task_id]}", err=True)
        else:
            failed.append(result.task_id)
            click.echo(f"error: {result.task_id}: {'; '.join(result.reasons) or 'below 1.0'}", err=True)
    passed = sum(1 for r in results if r.passed)
    click.echo(f"{passed}/{len(results)} tasks of {name} (base) reach reward 1.0 on their gold actions", err=True)
    if failed:
        sys.exit(1)


def _agreement(checks: list[TrajectoryCheck]) -> str:
    """`recorded gold hashes equal for a/b tasks; c/d tool results identical to the recorded ones`."""
    gold_diffs = {c.task_id for c in checks if c.gold_hash_matches is False}
    gold_known = {c.task_id for c in checks if c.gold_hash_matches is not None}
    observation_diffs = sum(c.observation_mismatches for c in checks)
    tool_calls = sum(c.tool_calls for c in checks)
    return (
        f"recorded gold hashes equal for {len(gold_known) - len(gold_diffs)}/{len(gold_known)} tasks; "
        f"{tool_calls - observation_diffs}/{tool_calls} tool results identical to the recorded ones"
    )
