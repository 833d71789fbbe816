"""`ace-eval e2e`: collect traces on a benchmark (or replay a collection), learn a skillbook, evaluate it."""

from __future__ import annotations

from pathlib import Path

import click

from ace.exceptions import UserError
from ace.pipeline.registry import parse_step_spec
from ace_eval.benchmarks import SKILL_INJECTIONS
from ace_eval.benchmarks.phases import scores_table
from ace_eval.collection.importers import IMPORT_FORMATS
from ace_eval.commands import benchmark_option
from ace_eval.e2e.config import DEFAULT_BENCHMARK, DEFAULT_OUTPUT_DIR, ignored_flags_note, resolve_settings
from ace_eval.e2e.publish import check_publish, publish_run
from ace_eval.e2e.runner import E2EResult, resume_e2e, run_e2e
from ace_eval.reporting import EXIT_RUN_FAILED
from ace_eval.run.record import PhaseRecord, TrainingRecord
from ace_eval.text import plural

__all__ = ["benchmark_options", "e2e", "format_summary"]

_PATH = click.Path(path_type=Path)
_DIR = click.Path(path_type=Path, file_okay=False)
_MODEL_HELP = (
    "{} model: a litellm model string (e.g. bedrock/..., openai/...) or 'local' (default: ${}, config, local)."
)


def format_summary(result: E2EResult) -> str:
    """What `e2e` prints when a run is done: the folder, the training, the skillbook, the benchmark."""
    record = result.record
    training = record.training or TrainingRecord()
    stats = result.skillbook.stats()
    sections = stats["sections"]
    traces = record.collection.traces_used if record.collection is not None else 0
    lines = [
        f"Run folder: {result.folder.path}",
        f"Trained on {plural(traces, 'trace')} x {plural(record.config.epochs, 'epoch')}: "
        f"{plural(training.samples, 'sample')}, {plural(training.errors, 'error')}",
        f"Skillbook: {plural(stats['active'], 'active skill')} ({sections['context']} context, "
        f"{sections['harness']} harness), {plural(stats['occurrences'], 'occurrence')}",
    ]
    if record.errors:
        first = record.errors[0]
        lines.insert(2, f"  first error, on {first.trace_uid}: {first.error} (all: ace-eval inspect)")
    table = scores_table(record.benchmark)  # pass^k with intervals, when the benchmark recorded them
    if table is not None:
        lines.append(table)
    elif record.benchmark is not None:
        phases = {"before": record.benchmark.before or PhaseRecord(), "after": record.benchmark.after or PhaseRecord()}
        before, after = phases["before"], phases["after"]
        for k in range(1, max(len(before.pass_hat_k), len(after.pass_hat_k)) + 1):
            was, now = _rate(before.pass_hat_k_at(k)), _rate(after.pass_hat_k_at(k))
            lines.append(f"pass^{k}: {was} before -> {now} with the skillbook")
        unquarantined = record.benchmark.after_with_quarantined
        if unquarantined is not None and unquarantined.pass_hat_k:
            phases["with quarantined"] = unquarantined
            held = f"{plural(stats['quarantined'], 'quarantined skill')} back in the agent's context"
            for k in unquarantined.ks:
                lines.append(f"pass^{k}: {_rate(unquarantined.pass_hat_k_at(k))} with the {held}")
        for name, phase in phases.items():
            if phase.errors:
                lines.append(
                    f"  {name}: pass^k over the {phase.scored} scored episodes only; "
                    f"{phase.errors} of {phase.episodes} errored and are left out"
                )
    review = record.review
    if review is not None:
        lines.append(
            f"Review: {plural(review.new_candidates, 'new candidate')}, {plural(review.queued, 'edit')} queued, "
            f"{review.already_queued} already queued, {review.already_reviewed} already reviewed; nothing was "
            f"published. Decide: ace-eval review list {review.skillbook}"
        )
    for role, u in record.usage.items():
        cost = "" if u.cost_usd is None else f", ${u.cost_usd:.4f}"
        lines.append(f"  {role}: {plural(u.requests, 'request')}, {u.input_tokens}+{u.output_tokens} tokens{cost}")
    if result.observability is not None:
        lines.append(result.observability.where())
    lines.append(f"Inspect: ace-eval inspect {result.folder.path}   Verify: ace-eval verify {result.folder.path}")
    markdown = result.folder.step_output(record, "export_markdown", result.folder.markdown.name)
    if markdown is not None:  # left out with --no-step export_markdown
        staged = " (the staged fork, not published)" if review is not None else ""
        lines.append(f"Skillbook markdown{staged}: {markdown}")
    return "\n".join(lines)


def _rate(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


@click.command("e2e")
@click.option(
    "--benchmark",
    is_flag=False,
    flag_value=DEFAULT_BENCHMARK,
    metavar="NAME",
    help=f"Run the benchmark (default {DEFAULT_BENCHMARK}; any of `ace-eval benchmarks list`, or your scorer "
    "MODULE:FUNCTION): without --traces it collects the traces; with --traces it evaluates the learned skillbook, "
    "which --traces alone does not.",
)
@benchmark_option("benchmark_option_specs")
@click.option(
    "--traces",
    type=_PATH,
    help="Replay this trace collection (a folder) offline instead of running the agent; a .jsonl/.json file of a "
    "known format (--format) is imported into the run folder first.",
)
@click.option(
    "--format",
    "traces_format",
    type=click.Choice(IMPORT_FORMATS),
    help="The format of a --traces file (default: told from the file).",
)
@click.option(
    "--outcomes",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="Reward and feedback per trace id for a --traces file: JSON lines of {trace_id, reward, feedback}, or a "
    "JSON object of trace id -> {reward, feedback}.",
)
@click.option("--agent-model", help=_MODEL_HELP.format("Agent", "ACE_AGENT_MODEL"))
@click.option("--reflector-model", help=_MODEL_HELP.format("Reflector", "ACE_REFLECTOR_MODEL"))
@click.option("--skill-manager-model", help=_MODEL_HELP.format("Skill manager", "ACE_SKILL_MANAGER_MODEL"))
@click.option("--user-model", help=_MODEL_HELP.format("Simulated user", "ACE_USER_MODEL"))
@click.option("--embedding-model", help="Embedding model: 'local' (MiniLM, default) or a litellm embedding model.")
@click.option(
    "--reflector-type",
    type=click.Choice(["simple", "rr", "grounded"]),
    help="simple (default), rr (recursive) or grounded (from the grader's verdict, no model).",
)
@click.option(
    "--profile",
    type=click.Choice(["auto", "small", "hosted"]),
    help="The reflector's and skill manager's settings profile: auto (default: small for the embedded model 'local', "
    "hosted for the others), or force small or hosted. The five flags below override single values.",
)
@click.option("--max-output-tokens", type=click.IntRange(min=1), help="Longest reflector / skill-manager output.")
@click.option("--reflector-retries", type=click.IntRange(min=0), help="Retries of a malformed reflection.")
@click.option(
    "--reflector-conversation/--no-reflector-conversation",
    default=None,
    help="Show the trace's conversation to the reflector (profile default: off for small, on for hosted).",
)
@click.option("--sm-request-limit", type=click.IntRange(min=1), help="Model requests per skill-manager session.")
@click.option("--sm-tool-calls", "sm_tool_calls_limit", type=click.IntRange(min=1), help="Tool calls per session.")
@click.option("--num-trials", type=click.IntRange(min=1), help="Trials per task when the agent runs (default 1).")
@click.option(
    "--max-num-steps",
    type=click.IntRange(min=1),
    help="Steps per episode as the benchmark counts them (agent model requests, or every message), for a benchmark "
    "that takes the option max_num_steps (default: the benchmark's; `ace-eval benchmarks list`).",
)
@click.option(
    "--train-split",
    help="The tasks the agent learns on, for a benchmark that takes the option train_split: a split (train, test, "
    "base, ...) or comma-separated task ids (default: the benchmark's; `ace-eval benchmarks list`).",
)
@click.option(
    "--eval-split",
    help="The tasks scored without and with the skillbook, for a benchmark that takes the option eval_split "
    "(default: the benchmark's).",
)
@click.option(
    "--provider-limit",
    type=click.IntRange(min=1),
    help="At most this many model requests in flight per provider, for a benchmark that takes the option "
    "provider_limit (default: --max-workers bounds them).",
)
@click.option(
    "--skill-injection",
    type=click.Choice(SKILL_INJECTIONS),
    help="How the agent sees the skillbook: every active skill (prompt, the default), the top-k retrieved for the "
    "task, or none.",
)
@click.option("--top-k", type=click.IntRange(min=1), help="Skills retrieved per episode with --skill-injection top-k.")
@click.option(
    "--skill-tokens",
    type=click.IntRange(min=1),
    help="With --skill-injection top-k: the most relevant helpful skills that fit N tokens, instead of --top-k.",
)
@click.option("--max-workers", type=click.IntRange(min=1), help="Samples / episodes run at once (default 1).")
@click.option(
    "--sm-sessions",
    type=click.Choice(["concurrent", "ordered"]),
    help="With several workers: concurrent skill-manager sessions merged by optimistic concurrency (default, fast), "
    "or ordered ones, one at a time in sample order (reproducible whatever --max-workers).",
)
@click.option("--epochs", type=click.IntRange(min=1), help="Passes over the traces (default 1).")
@click.option("--seed", type=int, help="Shuffle each epoch's order with this seed (default: collection order).")
@click.option("--limit", type=click.IntRange(min=1), help="Only the first N traces (--traces) or tasks.")
@click.option(
    "--no-benchmark",
    is_flag=True,
    default=None,
    help="Skip the evaluation with the learned skillbook (the default with --traces unless --benchmark is named).",
)
@click.option(
    "--no-preflight",
    is_flag=True,
    default=None,
    help="Skip the one test request per model before the run (keys, model strings and installs are still checked).",
)
@click.option(
    "--retry-failed/--no-retry-failed",
    default=None,
    help="With --resume: run again the samples that failed without changing the skillbook (default: on).",
)
@click.option(
    "--abort-after",
    type=click.IntRange(min=0),
    help="Abort when this many samples (or episodes) in a row fail with the same error no retry can fix, e.g. a "
    "wrong key (default 3; 0: never).",
)
@click.option(
    "--logfire",
    is_flag=True,
    default=None,
    help="Instrument with Logfire; spans are sent only with a token (LOGFIRE_TOKEN, or .logfire/ credentials).",
)
@click.option(
    "--logfire-content",
    is_flag=True,
    default=None,
    help="Like --logfire, and the spans also record prompts and completions (redacted unless --no-redact).",
)
@click.option(
    "--no-redact",
    "redact",
    flag_value=False,
    default=None,
    help="Keep secrets and personal data: no redact step, and the run folder and spans hold the raw text "
    "(default: redacted; also `[e2e] redact = false` or --no-step redact).",
)
@click.option("--verbose", "-v", is_flag=True, default=None, help="Print one line per finished sample.")
@click.option("--output-dir", type=_DIR, help=f"Where run folders go (default {DEFAULT_OUTPUT_DIR}).")
@click.option(
    "--data-dir",
    type=_DIR,
    help="The benchmark's data folder, for a benchmark that takes the option data_dir (its default: `ace-eval "
    "benchmarks list`).",
)
@click.option(
    "--step",
    "step_specs",
    multiple=True,
    metavar="NAME[:KEY=VALUE,...]",
    help="Add a pipeline step, or set a step's options (repeatable; `ace-eval steps list` shows them all), e.g. "
    "--step deduplicate:threshold=0.9.",
)
@click.option("--no-step", "no_steps", multiple=True, metavar="NAME", help="Leave a step out (repeatable).")
@click.option("--dedup", is_flag=True, default=None, help="Deduplicate the skillbook at the end of each epoch.")
@click.option("--dedup-model", help="The deduplication judge's model (default: the skill manager's); implies --dedup.")
@click.option(
    "--dedup-threshold",
    type=click.FloatRange(0.0, 1.0, min_open=True),
    help="Cosine similarity of a candidate duplicate pair (default 0.85); implies --dedup.",
)
@click.option(
    "--skillbook",
    type=click.Path(path_type=Path),
    help="Start from this skillbook, or a store's current version (never written by the run; with --review: the "
    "published skillbook file).",
)
@click.option(
    "--review",
    is_flag=True,
    default=None,
    help="Stage the skill manager's edits as candidates in the review queue beside --skillbook instead of publishing "
    "them; decide with `ace-eval review` (also `[e2e] review = true`; not with --benchmark).",
)
@click.option("--config", "config_file", type=_PATH, help="A TOML config file (default ./ace-eval.toml if present).")
@click.option(
    "--resume",
    "resume_dir",
    type=_DIR,
    metavar="RUN_DIR",
    help="Continue the interrupted run in RUN_DIR (refused while another process runs in it).",
)
@click.option(
    "--publish",
    "publish_to",
    type=_PATH,
    metavar="STORE",
    help="When the run is done, publish its skillbook to STORE (created if missing) through the gate: its baseline "
    "(baseline/, or the collected episodes when the benchmark collects on the tasks it evaluates) against its "
    "evaluation, on the same tasks and trials, published only on promote (exit 1 on hold). See `ace-eval gate`.",
)
@click.option(
    "--no-gate",
    is_flag=True,
    help="With --publish: publish without the gate (recorded in version.json); needed when the run scores nothing.",
)
def e2e(
    config_file: Path | None,
    resume_dir: Path | None,
    step_specs: tuple[str, ...],
    no_steps: tuple[str, ...],
    benchmark_option_specs: tuple[str, ...],
    publish_to: Path | None,
    no_gate: bool,
    **flags: object,
) -> None:
    """Run ACE end to end and write results/e2e/run_<id>/.

    Without --traces the benchmark agent runs the tasks and its traces are collected; with --traces DIR a
    collection is replayed offline (the benchmark runs only when --benchmark is named). The reflector and skill
    manager learn a skillbook from the traces; then, with the benchmark, the agent is evaluated again with the
    skillbook (pass^k before and after), and once more with the quarantined skills back when the quarantine
    step took any out (pass^k with and without them).
    Settings: flag > environment variable > config file > the embedded offline model 'local'.

    A benchmark of `ace-eval benchmarks list` runs the agent: it learns on --train-split, then is scored on
    --eval-split without (baseline/) and with (evaluation/) the skillbook, each folder holding the phase's
    scores.json (and the benchmark's own files); the summary is pass^k before -> after with 95 % intervals.

    Before anything is written, every model and the embedder are checked (keys, model strings, installs, and one
    short request per model unless --no-preflight); a problem exits with status 2 and its fix. A run whose
    samples keep failing with an unfixable error aborts; a run in which everything failed exits 1. --resume runs
    failed samples again.

    A flag that would have no effect is named once in a note and the run goes on without it (only settings
    that contradict each other are refused); the same settings from the environment or the config file simply
    do not apply:

    \b
      --agent-model, --user-model, --num-trials, --max-num-steps, --data-dir
          when no agent runs (--traces without --benchmark)
      --skill-injection, --top-k, --skill-tokens   without the benchmark
      --top-k, --skill-tokens      without --skill-injection top-k (--top-k: with --skill-tokens)
      --format                     with a --traces folder (it names a --traces file's format)
      --train-split, --eval-split, --provider-limit, --data-dir
          on a benchmark whose options do not take them (`ace-eval benchmarks list`
          says why, e.g. a benchmark that ships its data)
    """
    pipeline = _pipeline_flags(step_specs, no_steps, flags)  # takes the --dedup* flags out of `flags`
    given = {k: v for k, v in flags.items() if v is not None} | pipeline
    if benchmark_option_specs:
        given["benchmark_options"] = benchmark_options(benchmark_option_specs)
    check_publish(publish_to)
    if resume_dir is not None:
        result = resume_e2e(resume_dir, given)
    else:
        settings = resolve_settings(given, config=config_file)
        if publish_to is not None and not no_gate and settings.no_benchmark:
            raise UserError(
                "--publish goes through the gate, which compares the run's baseline with its evaluation, and "
                "this run scores no skillbook (no benchmark): name one (--benchmark), or pass --no-gate"
            )
        note = ignored_flags_note(settings)
        if note is not None:
            click.echo(note, err=True)
        result = run_e2e(settings)
    click.echo(format_summary(result))
    if no_gate and publish_to is None:
        click.echo("note: --no-gate has no effect without --publish STORE", err=True)
    if publish_to is not None:
        _publish(result.folder.path, publish_to, gate=not no_gate)


def _publish(run_dir: Path, store: Path, *, gate: bool) -> None:
    """`--publish STORE` after the run: the gate's table and what it published; exit 1 when the gate holds."""
    import shlex
    import sys

    from ace_eval.gate import format_gate

    outcome = publish_run(run_dir, store, gate=gate, command=shlex.join(["ace-eval", *sys.argv[1:]]))
    if outcome.result is not None:
        click.echo(format_gate(outcome.result))
        if outcome.previous is not None:
            click.echo(
                f"note: the gate compared the run's skillbook with the agent without one (its baseline), not with "
                f"{store}'s version {outcome.previous}; to compare with that: ace-eval gate run --candidate "
                f"{run_dir} --incumbent {store} --publish {store} ..."
            )
    if outcome.version is not None:
        how = "through the gate" if outcome.result is not None else "ungated (--no-gate)"
        click.echo(f"published {store} version {outcome.version.number} (current), {how}")
    else:
        click.echo(f"nothing published: the gate held the run's skillbook; {store} keeps its current version")
        sys.exit(EXIT_RUN_FAILED)


def benchmark_options(specs: tuple[str, ...]) -> dict[str, object]:
    """`--benchmark-option key=value` (repeatable; a key given twice collects a list) as the benchmark's options."""
    options: dict[str, object] = {}
    for spec in specs:
        key, eq, value = (part.strip() for part in spec.partition("="))
        if not eq or not key:
            raise click.UsageError(f"--benchmark-option {spec!r} is not key=value (e.g. --benchmark-option seed=3)")
        previous = options.get(key)
        options[key] = value if previous is None else [*(previous if isinstance(previous, list) else [previous]), value]
    return options


def _pipeline_flags(
    step_specs: tuple[str, ...], no_steps: tuple[str, ...], flags: dict[str, object]
) -> dict[str, object]:
    """`--step` / `--no-step` / `--dedup*` as the `steps` and `no_steps` settings (the `--dedup*` flags are
    shorthands of `--step deduplicate:model=...,threshold=...`)."""
    steps: dict[str, dict[str, object]] = {}
    for spec in step_specs:
        name, options = parse_step_spec(spec)
        steps[name] = {**steps.get(name, {}), **options}
    dedup = {"model": flags.pop("dedup_model", None), "threshold": flags.pop("dedup_threshold", None)}
    if flags.pop("dedup", None) or any(v is not None for v in dedup.values()):
        steps["deduplicate"] = {**steps.get("deduplicate", {}), **{k: v for k, v in dedup.items() if v is not None}}
    out: dict[str, object] = {}
    if steps:
        out["steps"] = steps
    if no_steps:
        out["no_steps"] = tuple(no_steps)
    return out
