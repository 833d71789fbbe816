"""`ace-eval serve --store STORE`: receive OpenTelemetry spans (OTLP/HTTP) into a durable inbox and assemble traces."""

from __future__ import annotations

import signal
import threading
from pathlib import Path

import click

__all__ = ["serve"]


@click.command("serve")
@click.option(
    "--store",
    required=True,
    type=click.Path(file_okay=False, path_type=Path),
    help="The skillbook store; the inbox and assembled traces go to STORE/serve/ (created when missing).",
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
) -> None:
    """Receive OpenTelemetry spans (OTLP/HTTP) into a durable inbox under a store and assemble them into traces.

    Agents export to http://HOST:PORT/v1/traces (protobuf or JSON, gzip or not): each request's spans are
    redacted, then fsynced to the inbox under STORE/serve/inbox/ before the 200. An agent run's spans become a trace
    once its root span has arrived (the OTel importer's rules, as `collection import --format otel`); outcomes come
    from `ace.reward` / `ace.feedback` span attributes or POST /v1/feedback {"trace_id", "reward", "feedback"}.
    GET /healthz, /v1/status (JSON) and /metrics (Prometheus) show progress; GET /v1/skillbook serves the
    current version (ETag = its number). SIGTERM or Ctrl-C finishes the
    requests in flight, flushes and checkpoints, then exits 0.
    """
    from ace_eval.serve import ServeApp, ServeConfig

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
        )
    )
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    app.start()
    bound_host, bound_port = app.address
    click.echo(f"ace-eval serve: listening on http://{bound_host}:{bound_port} (OTLP/HTTP: /v1/traces)", err=True)
    while not stop.wait(1.0):
        pass
    click.echo("ace-eval serve: stopping (finishing requests in flight, flushing)", err=True)
    app.stop()
    status = app.status()
    click.echo(
        f"ace-eval serve: stopped; {status['spans_acknowledged']} spans acknowledged, "
        f"{status['traces_assembled']} traces assembled",
        err=True,
    )
