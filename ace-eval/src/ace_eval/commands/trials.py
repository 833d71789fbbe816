"""`ace-eval trials`: several candidates (ways to learn) from the same traces, scored on the same dev tasks and
seeds; the best one gated against the incumbent, published on promote, and scored alone on the test tasks."""

from __future__ import annotations

import multiprocessing
import shlex
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from ace_eval.commands import benchmark_option
from ace_eval.reporting import EXIT_RUN_FAILED
from ace_eval.text import plural

if TYPE_CHECKING:
    from ace_eval.trials import TrialArgs

__all__ = ["trials"]

_PATH = click.Path(path_type=Path)


@click.command("trials")
@click.option(
    "--vary",
    "vary_specs",
    multiple=True,
    metavar="KEY=V1,V2",
    help="An e2e setting and the values to try (repeatable; the candidates are the cross product), e.g. "
    "--vary reflector_type=simple,rr --vary epochs=1,2; a tuple setting joins its items with `+`.",
)
@click.option(
    "--variants",
    "variants_file",
    type=_PATH,
    default=None,
    metavar="FILE.toml",
    help="The candidates as [[candidate]] tables (an optional `name` and the settings it sets).",
)
@click.option(
    "--traces",
    type=_PATH,
    default=None,
    metavar="DIR|FILE",
    help="The collection every candidate learns from (default: the --benchmark's learn split, collected "
    "once and shared).",
)
@click.option(
    "--benchmark",
    "benchmark_name",
    default=None,
    metavar="NAME",
    help="An installed benchmark (`ace-eval benchmarks list`): collects the learn traces (without --traces) "
    "and scores the candidates (without --scorer).",
)
@benchmark_option()
@click.option(
    "--scorer",
    default=None,
    metavar="MODULE:FUNCTION",
    help="Score the candidates with your function (skillbook, task_ids, num_trials) -> rewards per task.",
)
@click.option(
    "--dev-tasks",
    "dev_spec",
    default=None,
    metavar="IDS|SPLIT",
    help="The tasks the candidates are scored and chosen on (default: the benchmark's evaluation split; "
    "required with --scorer).",
)
@click.option(
    "--test-tasks",
    "test_spec",
    default=None,
    metavar="IDS|SPLIT",
    help="Held-out tasks scored for the winner only, once, after selection (never used to choose).",
)
@click.option(
    "--num-trials",
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    help="Episodes per task (of the collection and of every scoring); not the trial's candidates.",
)
@click.option("--reflector-type", default=None, help="The reflector every candidate uses unless it varies it.")
@click.option("--reflector-model", default=None, help="The reflector's model unless a candidate varies it.")
@click.option("--skill-manager-model", default=None, help="The skill manager's model unless a candidate varies it.")
@click.option("--agent-model", default=None, help="The benchmark agent's model (collection and scoring).")
@click.option("--user-model", default=None, help="The user simulator's model, for benchmarks that call one.")
@click.option("--limit", type=click.IntRange(min=1), default=None, help="Learn from at most this many traces.")
@click.option(
    "--set",
    "set_specs",
    multiple=True,
    metavar="KEY=VALUE",
    help="Any other e2e setting shared by every candidate (repeatable), e.g. --set epochs=2.",
)
@click.option(
    "--incumbent",
    default=None,
    metavar="STORE|SKILLBOOK|none",
    help="What the winner must beat at the gate (default: --publish's current version, else none: the "
    "agent without a skillbook).",
)
@click.option(
    "--publish",
    "publish_to",
    type=_PATH,
    default=None,
    metavar="STORE",
    help="Publish the winner to STORE when the gate promotes it (created if missing).",
)
@click.option(
    "--max-workers", type=click.IntRange(min=1), default=1, show_default=True, help="Episodes scored at once."
)
@click.option(
    "--max-parallel",
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    metavar="N",
    help="Candidates at once, each in a process of its own; their dev scoring takes turns, so episodes "
    "and model requests stay within --max-workers and the benchmark's provider limits.",
)
@click.option(
    "--max-episodes",
    type=click.IntRange(min=1),
    default=None,
    help="Stop before a candidate would take the trial past N episodes (learning samples plus scored "
    "episodes), estimated from the first candidate's; exit 1 with the command that continues.",
)
@click.option(
    "--max-cost",
    type=click.FloatRange(min=0),
    default=None,
    metavar="USD",
    help="Stop before a candidate would take the trial past USD, estimated from the first candidate's "
    "cost; exit 1 with the command that continues.",
)
@click.option(
    "--resume",
    "resume_dir",
    type=_PATH,
    default=None,
    metavar="TRIAL_DIR",
    help="Continue an interrupted trial with its own settings (trial.json): finished runs and scores "
    "are not redone. Only --max-workers, --max-parallel, --max-episodes and --max-cost may be given with "
    "it.",
)
@click.option(
    "--out",
    "out_dir",
    type=_PATH,
    default=None,
    help="The trial folder (default results/trials/trial_<id>/); a folder of the same trial continues it.",
)
@click.pass_context
def trials(ctx: click.Context, /, **params: Any) -> None:
    """Compare ways to learn a skillbook on the same dev tasks; gate and keep the best, record the rest.

    Each candidate learns from the same traces through the e2e runner (its own run folder under
    TRIAL/candidates/), all are scored on the same dev tasks and seeds, the best dev mean wins (ties: fewer
    tokens), the winner meets the incumbent at the gate, and only the winner is scored on --test-tasks.
    Everything lands in TRIAL/scoreboard.json; losers keep their runs and scores (verdict `lost`).

    A *trial* is this comparison of candidates; --num-trials is the number of episodes per task.

    Exit status 0 when the trial finished (and, with --publish, the winner was published); 1 when --publish was
    given and the gate held, or a budget stopped it (the command that continues is printed); 2 on a user error
    (nothing written).
    """
    from ace.exceptions import UserError
    from ace_eval.trials import TrialArgs, read_trial_args

    resume_dir: Path | None = params["resume_dir"]
    if resume_dir is None:
        args = TrialArgs.model_validate({k: v for k, v in params.items() if k in TrialArgs.model_fields})
        out_dir = params["out_dir"]
    else:
        given = [
            f"--{name.replace('_', '-')}"
            for name in TrialArgs.model_fields
            if name in params and ctx.get_parameter_source(name) is click.core.ParameterSource.COMMANDLINE
        ] + (["--out"] if params["out_dir"] is not None else [])
        if given:
            raise UserError(f"--resume continues the trial with its own settings: drop {', '.join(given)}")
        args, out_dir = read_trial_args(resume_dir), resume_dir
    _run(args, out_dir, params["max_workers"], params["max_parallel"], params["max_episodes"], params["max_cost"])


def _run(
    args: TrialArgs,
    out_dir: Path | None,
    max_workers: int,
    max_parallel: int,
    max_episodes: int | None,
    max_cost: float | None,
) -> None:
    from ace.exceptions import UserError
    from ace_eval.benchmarks import Benchmark, BenchmarkEnv, load_benchmark, resolve_tasks
    from ace_eval.benchmarks.scorer import scorer_benchmark
    from ace_eval.commands.e2e import benchmark_options
    from ace_eval.gate import incumbent_side
    from ace_eval.run.folder import new_run_id
    from ace_eval.store import is_store
    from ace_eval.trials import (
        Budget,
        BudgetExceeded,
        TrialPlan,
        VaryError,
        candidates_from_toml,
        candidates_from_vary,
        check_candidates,
        claim_trial,
        expand_epochs,
        run_trial,
    )

    a = args
    if bool(a.vary_specs) == (a.variants_file is not None):
        raise VaryError("pass --vary KEY=V1,V2 (repeatable) or --variants FILE.toml: one of them")
    candidates = candidates_from_toml(a.variants_file) if a.variants_file else candidates_from_vary(a.vary_specs)
    if a.benchmark_name is None and a.scorer is None:
        raise UserError("pass --benchmark NAME or --scorer MODULE:FUNCTION: what scores the candidates")
    if a.traces is None and a.benchmark_name is None:
        raise UserError("pass --traces DIR (the collection to learn from) or --benchmark NAME (its learn split)")
    base: dict[str, object] = {
        k: v
        for k, v in {
            "reflector_type": a.reflector_type,
            "reflector_model": a.reflector_model,
            "skill_manager_model": a.skill_manager_model,
            "limit": a.limit,
            "num_trials": a.num_trials,
        }.items()
        if v is not None
    }
    for spec in a.set_specs:  # one value each: a shared setting
        [shared] = candidates_from_vary([spec.split(",", 1)[0]])
        base.update(shared.settings)
    check_candidates(candidates, base)
    candidates = expand_epochs(candidates, base)
    options = benchmark_options(a.option_specs)
    learner = load_benchmark(a.benchmark_name, options) if a.benchmark_name else None
    judge: Benchmark
    if a.scorer is not None:
        if a.dev_spec is None:
            raise UserError("--scorer needs --dev-tasks ID,ID: the task ids your function scores")
        ids = [t.strip() for spec in (a.dev_spec, a.test_spec) if spec for t in spec.split(",") if t.strip()]
        judge = scorer_benchmark(a.scorer, {"tasks": ids})
    else:
        assert learner is not None
        judge = learner
    dev = resolve_tasks(judge.name, judge.splits(), a.dev_spec) if a.dev_spec else tuple(judge.tasks("evaluate"))
    test = resolve_tasks(judge.name, judge.splits(), a.test_spec) if a.test_spec else ()
    if overlap := sorted(set(dev) & set(test)):
        raise UserError(f"--test-tasks must be held out: {', '.join(overlap)} are also dev tasks")
    publish_to = a.publish_to
    if publish_to is not None and publish_to.exists() and not is_store(publish_to):
        raise UserError(f"--publish {publish_to} exists but is not a skillbook store; pass a store or a new folder")
    incumbent = a.incumbent or (str(publish_to) if publish_to is not None and publish_to.exists() else "none")
    names = {role: n for role, n in (("agent", a.agent_model), ("user", a.user_model)) if n is not None}
    env = BenchmarkEnv(model_names=names, max_workers=max_workers, show_progress=None)
    judge.check(env)
    if learner is not None and a.traces is None:
        if learner is not judge:  # one benchmark both learns and judges: checked once, its notes printed once
            learner.check(env)
        learner.tasks("learn")
    if max_parallel > 1 and "fork" not in multiprocessing.get_all_start_methods():
        raise UserError(
            "--max-parallel needs processes started by fork (Linux, macOS), which this platform has not; "
            "drop --max-parallel: the candidates then run one after another"
        )
    if max_parallel > len(candidates):
        click.echo(
            f"note: --max-parallel {max_parallel} but the trial has {len(candidates)} candidates: "
            f"{len(candidates)} run at once",
            err=True,
        )
    directory = out_dir or Path("results") / "trials" / f"trial_{new_run_id().removeprefix('run_')}"
    claim_trial(directory, args)
    plan = TrialPlan(
        directory=directory,
        benchmark=judge,
        learner=learner,
        env=env,
        base=base,
        candidates=candidates,
        traces=a.traces,
        dev_tasks=dev,
        test_tasks=test,
        num_trials=a.num_trials,
        incumbent=incumbent_side(incumbent),
        publish=publish_to,
        command=shlex.join(["ace-eval", *sys.argv[1:]]),
        budget=Budget(max_episodes=max_episodes, max_cost=max_cost),
        say=lambda line: click.echo(line, err=True),
        max_parallel=max_parallel,
    )
    try:
        board = run_trial(plan)
    except BudgetExceeded as e:
        click.echo(
            f"{e}\ncontinue with: ace-eval trials --resume {shlex.quote(str(directory))} "
            "(with a larger --max-episodes / --max-cost, or without them)",
            err=True,
        )
        sys.exit(EXIT_RUN_FAILED)
    for entry in board.candidates:
        click.echo(f"{entry.verdict:4}  {entry.name}: dev mean {entry.dev.mean:.3f}, {entry.tokens} learning tokens")
    click.echo(
        f"winner: {board.winner}; gate vs {board.incumbent}: {board.gate.decision}"
        + (f" ({'; '.join(board.gate.reasons)})" if board.gate.reasons else "")
    )
    if board.test is not None:
        click.echo(f"test ({plural(len(board.test.tasks), 'held-out task')}, winner only): mean {board.test.mean:.3f}")
    if publish_to is not None:
        click.echo(
            f"published {board.published} (current)"
            if board.published
            else f"nothing published: {publish_to} unchanged"
        )
    click.echo(f"scoreboard: {directory / 'scoreboard.json'}")
    if publish_to is not None and board.published is None:
        sys.exit(EXIT_RUN_FAILED)
