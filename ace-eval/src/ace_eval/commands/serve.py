"""`ace-eval serve --store STORE`: OpenTelemetry spans in (OTLP/HTTP, a durable inbox), traces assembled and learned
from in the background, learned skillbooks published to the store through the gate, skills served."""

from __future__ import annotations

import gc
import shlex
import signal
import sys
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from ace_eval.commands import benchmark_option
from ace_eval.commands.e2e import benchmark_options
from ace_eval.commands.e2e import e2e as _e2e

if TYPE_CHECKING:
    from ace.embeddings.base import Embedder

__all__ = ["serve"]

MODEL_SETTINGS = (
    "reflector_model",
    "skill_manager_model",
    "embedding_model",
    "agent_model",
    "user_model",
    "reflector_type",
    "profile",
    "max_output_tokens",
    "reflector_retries",
    "reflector_conversation",
    "sm_request_limit",
    "sm_tool_calls_limit",
    "max_workers",
    "sm_sessions",
    "abort_after",
    "logfire",
    "logfire_content",
    "no_preflight",
)
"""The e2e options serve takes as they are (`ace-eval e2e --help`); each learning batch is an e2e run with them."""


def _e2e_options(command: click.Command) -> click.Command:
    """`command` with the e2e command's own model options (the same objects: one help text, one behaviour)."""
    command.params.extend(p for p in _e2e.params if p.name in MODEL_SETTINGS)
    return command


@_e2e_options
@click.command("serve")
@click.option(
    "--store",
    required=True,
    type=click.Path(file_okay=False, path_type=Path),
    help="The skillbook store (created when missing): versions are published to it; the inbox, the traces and the "
    "learning batches go to STORE/serve/.",
)
@click.option(
    "--host", default="127.0.0.1", show_default=True, help="Address to bind; anything but loopback needs --token."
)
@click.option(
    "--port",
    type=click.IntRange(0, 65535),
    default=4318,
    show_default=True,
    help="Port (4318 is OTLP/HTTP's; 0 picks a free one).",
)
@click.option(
    "--token",
    envvar="ACE_SERVE_TOKEN",
    default=None,
    help="Require `Authorization: Bearer TOKEN` on every endpoint but /healthz (env ACE_SERVE_TOKEN).",
)
@click.option(
    "--feedback-wait",
    type=click.FloatRange(min=0),
    default=60.0,
    show_default=True,
    help="Seconds an assembled trace waits for POST /v1/feedback (0: ready at once, judged by its spans).",
)
@click.option(
    "--idle-timeout",
    type=click.FloatRange(min=0),
    default=300.0,
    show_default=True,
    help="Seconds without a new span after which a trace whose root span never came is assembled as incomplete.",
)
@click.option(
    "--max-body",
    type=click.IntRange(min=1024),
    default=8 * 1024 * 1024,
    show_default=True,
    help="Largest request body in bytes (also after gzip); larger gets 413.",
)
@click.option(
    "--max-backlog",
    type=click.IntRange(min=1),
    default=1_000_000,
    show_default=True,
    help="Spans acknowledged and not yet assembled before POST /v1/traces answers 429 with Retry-After.",
)
@click.option(
    "--no-redact",
    is_flag=True,
    help="Keep spans as received (default: secrets are replaced by ace.redaction placeholders first).",
)
@click.option(
    "--learn-every",
    type=click.IntRange(min=0),
    default=10,
    show_default=True,
    help="Learn a batch every N ready traces (an e2e run with the model options below; 0: do not learn).",
)
@click.option(
    "--publish-every",
    type=click.IntRange(min=1),
    default=50,
    show_default=True,
    help="Every N learned traces, the latest learned skillbook is a candidate version for the store.",
)
@click.option(
    "--benchmark",
    "benchmark_name",
    default=None,
    metavar="NAME",
    help="Gate each candidate on this benchmark (`ace-eval benchmarks list`) against the store's current version.",
)
@benchmark_option()
@click.option(
    "--scorer",
    default=None,
    metavar="MODULE:FUNCTION",
    help="Gate each candidate with your function (skillbook, task_ids, num_trials) -> rewards per task; needs --tasks.",
)
@click.option(
    "--tasks",
    "task_spec",
    default=None,
    metavar="IDS|SPLIT",
    help="The tasks the gate scores both sides on (default: the benchmark's evaluation split).",
)
@click.option(
    "--num-trials",
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    help="Trials per task on both sides of the gate.",
)
@click.option("--no-gate", is_flag=True, help="Publish each candidate without the gate (recorded in version.json).")
@click.option(
    "--stop-grace",
    type=click.FloatRange(min=0),
    default=30.0,
    show_default=True,
    help="Seconds SIGTERM waits for the learning sample in flight to finish; past them serve exits 0 without it "
    "(the batch resumes at the next start).",
)
@click.option(
    "--models-from",
    default=None,
    metavar="MODULE:FUNCTION",
    help="Learn with the models your function returns (no argument -> ace_eval.e2e.runner.RunInjections: "
    "pydantic-ai models by role, an embedder) instead of building them from the options below; it is called in the "
    "learning process (and for its embedder in the server). For scripted models in tests and benchmarks.",
)
@click.option(
    "--config",
    "config_file",
    type=click.Path(path_type=Path),
    default=None,
    help="A TOML config file for the model settings (default ./ace-eval.toml if present).",
)
def serve(
    store: Path,
    host: str,
    port: int,
    token: str | None,
    feedback_wait: float,
    idle_timeout: float,
    max_body: int,
    max_backlog: int,
    no_redact: bool,
    learn_every: int,
    publish_every: int,
    benchmark_name: str | None,
    option_specs: tuple[str, ...],
    scorer: str | None,
    task_spec: str | None,
    num_trials: int,
    no_gate: bool,
    stop_grace: float,
    models_from: str | None,
    config_file: Path | None,
    **model_flags: Any,
) -> None:
    """Learn from your agent's OpenTelemetry spans in production; publish gated skillbook versions; serve skills.

    Agents export to http://HOST:PORT/v1/traces (protobuf or JSON, gzip or not): each request's spans are
    redacted, then fsynced to the inbox under STORE/serve/inbox/ before the 200. An agent run's spans become a trace
    once its root span has arrived (the OTel importer's rules, as `collection import --format otel`); outcomes come
    from `ace.reward` / `ace.feedback` span attributes or POST /v1/feedback {"trace_id", "reward", "feedback"}.
    Every --learn-every ready traces a batch is learned as `ace-eval e2e --traces` would (the model options
    below, the embedded `local` models by default), starting from the previous batch's skillbook; every
    --publish-every learned traces the latest skillbook goes to the store through the gate (--benchmark, or
    --scorer with --tasks; the store's current version is the incumbent) or ungated with --no-gate.
    GET /healthz, /v1/status (JSON) and /metrics (Prometheus) show progress; GET /v1/skillbook serves the
    current version (ETag = its number), GET /v1/skills?query=...&max_tokens=... the skills selected for a query.
    Learning and publishing run in a process of their own (restarted after a crash, shown in /v1/status), so
    they never slow the intake down for the interpreter lock. SIGTERM or Ctrl-C finishes the requests in flight,
    flushes and checkpoints, lets the learning sample in flight finish (at most --stop-grace seconds), then exits 0
    (a learning batch in flight resumes at the next start).
    """
    from ace_eval.serve import (
        NOT_PUBLISHED_NOTE,
        LearnConfig,
        ServeApp,
        ServeConfig,
        learning_settings,
        publishing_config,
        refuse_exposed,
    )

    refuse_exposed(host, token)  # before the models load
    learn = publish = embedder = None
    if learn_every:
        flags = {**model_flags, "redact": False if no_redact else None}
        settings = learning_settings(flags, store=store, config_file=config_file)
        publish = publishing_config(
            every=publish_every,
            benchmark=benchmark_name,
            benchmark_options=benchmark_options(option_specs),
            scorer=scorer,
            tasks=task_spec,
            num_trials=num_trials,
            no_gate=no_gate,
            settings=settings,
            command=shlex.join(["ace-eval", *sys.argv[1:]]),
        )
        if publish is None:
            click.echo(NOT_PUBLISHED_NOTE, err=True)
        learn = LearnConfig(settings=settings, models_from=models_from, learn_every=learn_every)
        embedder = _skills_embedder(settings.embedding_model, models_from)
    else:
        click.echo("note: --learn-every 0: traces are assembled, nothing is learned or published", err=True)
    app = ServeApp(
        ServeConfig(
            store=store,
            host=host,
            port=port,
            token=token,
            feedback_wait=feedback_wait,
            idle_timeout=idle_timeout,
            max_body=max_body,
            max_backlog=max_backlog,
            redact=not no_redact,
            learn=learn,
            publish=publish,
            embedder=embedder,
            stop_grace=stop_grace,
        )
    )
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    steady_collector()
    app.start()
    bound_host, bound_port = app.address
    click.echo(f"ace-eval serve: listening on http://{bound_host}:{bound_port} (OTLP/HTTP: /v1/traces)", err=True)
    while not stop.wait(1.0):
        pass
    click.echo("ace-eval serve: stopping (finishing requests in flight, flushing)", err=True)
    finished = app.stop()
    status = app.status()
    click.echo(
        f"ace-eval serve: stopped; {status['spans_acknowledged']} spans acknowledged, "
        f"{status['traces_assembled']} traces assembled, {status['traces_learned']} learned",
        err=True,
    )
    if not finished:
        click.echo(
            f"ace-eval serve: the learning sample in flight did not finish within --stop-grace {stop_grace:g} s: "
            "the learning process was stopped; its batch resumes at the next start",
            err=True,
        )


def _skills_embedder(model: str, models_from: str | None) -> Embedder:
    """The embedder `GET /v1/skills` ranks with: `--models-from`'s, else the learning's (loaded at the first query)."""
    from ace_eval.e2e.embedder import embedder_for
    from ace_eval.serve import load_injections

    injected = load_injections(models_from).embedder if models_from else None
    return injected or embedder_for(model)


COLLECTOR_THRESHOLDS = (50_000, 20, 10)
"""The garbage collector's thresholds while serving: a young collection every 50,000 allocations, not 700 (CPython's
default), so that a request is not paused again and again to traverse what it allocates."""


def steady_collector() -> None:
    """Before listening: the objects loaded so far (modules, schemas, models: hundreds of thousands) are frozen out
    of the collector's traversals, and young collections run less often. Measured with one exporter at 2,000
    spans/s on a quiet machine, the collector's pauses were the slowest acknowledgements (docs/production.md)."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(*COLLECTOR_THRESHOLDS)
