"""Observability: Logfire set-up that never sends without a token, and a local JSONL copy of every span.

ACE's own spans (`sm.session`, `rr.session`, one per tool call) are plain OpenTelemetry spans from the tracer
`ace`: with nothing configured they cost nothing and warn about nothing; once `configure_observability` (or any
other OpenTelemetry set-up) has run they go wherever the global tracer provider sends them.
"""

from __future__ import annotations

import dataclasses
import json
import os
import threading
import traceback
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Literal

from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult
from opentelemetry.trace import INVALID_SPAN, Span, Status, StatusCode
from opentelemetry.util.types import AttributeValue

import ace.json_safe as json_safe
from ace.exceptions import UserError
from ace.redaction import Redactor

if TYPE_CHECKING:
    pass

__all__ = [
    "TRACER_NAME",
    "JsonlSpanExporter",
    "LogfireTarget",
    "Observability",
    "ObservabilityError",
    "ace_span",
    "clean_attributes",
    "configure_observability",
    "current_span",
    "find_logfire_target",
    "open_span",
    "read_spans_jsonl",
    "span_to_dict",
]

TRACER_NAME = "ace"
AttributeInput = AttributeValue | None
_ERRORS = Redactor()
"""Redacts the exception messages of ACE's spans (immutable; errors are never data worth keeping raw)."""
_SPAN_IDS = frozenset({"trace_id", "span_id", "parent_span_id", "start_time", "end_time"})


class ObservabilityError(UserError, ValueError):
    """Observability was asked for something it cannot do safely; the message names the fix."""


@dataclass(frozen=True, kw_only=True)
class Observability:
    """What `configure_observability` set up; pass `include_content` on to the agents you build."""

    enabled: bool
    """Whether Logfire and the pydantic-ai instrumentation are on."""
    sending: bool
    """Whether spans leave the machine (only ever with a Logfire token)."""
    include_content: bool
    """Whether spans may carry prompts, completions and skill text."""
    local_spans_path: Path | None
    """The JSONL file every finished span is appended to, if any."""
    target: LogfireTarget | None = None
    """Where the Logfire token came from and the project URL, when spans are sent."""

    def where(self) -> str:
        """One line for the end of a run: whether spans were sent, and where to look at them."""
        local = f"; a copy is in {self.local_spans_path}" if self.local_spans_path is not None else ""
        if self.sending and self.target is not None:
            project = self.target.project_url or "the project of that token"
            return f"Spans: sent to Logfire, {project} (token from {self.target.source}){local}"
        if self.enabled:
            return (
                f"Spans: not sent to Logfire (no token: set LOGFIRE_TOKEN, or run `logfire auth` and "
                f"`logfire projects use` in this folder to write {_CREDENTIALS_HINT}){local}"
            )
        return f"Spans: {self.local_spans_path} (local only)" if self.local_spans_path is not None else "Spans: off"

    def flush(self) -> None:
        """Push every finished span to its exporters (Logfire and the local file)."""
        if self.enabled or self.local_spans_path is not None:
            import logfire

            logfire.force_flush()


_CREDENTIALS_HINT = ".logfire/logfire_credentials.json"


@dataclass(frozen=True, kw_only=True)
class LogfireTarget:
    """The Logfire write token found, where it came from, and the project URL when the credentials name one."""

    token: str
    source: str
    """`token=`, `LOGFIRE_TOKEN`, or the path of the credentials file."""
    project_url: str | None = None


def find_logfire_target(token: str | None = None) -> LogfireTarget | None:
    """The write token as `logfire.configure` finds it, or `None`: `token`, then `LOGFIRE_TOKEN`, then the
    credentials file that `logfire projects use` writes (`logfire_credentials.json` in `LOGFIRE_CREDENTIALS_DIR`,
    default `.logfire/` of the current folder). Raises `ObservabilityError` for an unreadable credentials file
    when no other token is set (Logfire itself would refuse it)."""
    from logfire._internal.config import LogfireCredentials
    from logfire._internal.config_params import ParamManager
    from logfire.exceptions import LogfireConfigError

    params = ParamManager.create()
    raw_token = params.load_param("token")  # LOGFIRE_TOKEN, split at commas (several projects)
    env_token = ",".join(raw_token) if isinstance(raw_token, list) else raw_token
    creds_dir = Path(params.load_param("data_dir"))
    try:
        credentials = LogfireCredentials.load_creds_file(creds_dir)
    except LogfireConfigError as e:
        if token or env_token:
            credentials = None  # Logfire ignores the file when a token is set otherwise
        else:
            raise ObservabilityError(
                f"{e}: fix or delete it (`logfire projects use` writes a new one), or set LOGFIRE_TOKEN"
            ) from None
    if token:
        found = LogfireTarget(token=token, source="token=")
    elif env_token:
        found = LogfireTarget(token=str(env_token), source="LOGFIRE_TOKEN")
    elif credentials is not None:
        found = LogfireTarget(token=credentials.token, source=str(creds_dir / "logfire_credentials.json"))
    else:
        return None
    if credentials is not None and credentials.token == found.token:
        found = dataclasses.replace(found, project_url=credentials.project_url or None)
    return found


def configure_observability(
    enabled: bool,
    *,
    send_to_logfire: bool | Literal["if-token-present"] = "if-token-present",
    include_content: bool = False,
    local_spans_path: str | os.PathLike[str] | None = None,
    service_name: str = "ace",
    console: bool = False,
    token: str | None = None,
    redact: Redactor | bool = True,
) -> Observability:
    """Configure Logfire and the pydantic-ai instrumentation.

    Args:
        enabled: Turn Logfire and pydantic-ai instrumentation on (`--logfire`).
        send_to_logfire: `'if-token-present'` sends only when a token is set; `True` demands one; `False` never sends.
        include_content: Let spans carry prompts, completions, tool arguments and skill text.
        local_spans_path: Also append every finished span as one JSON object per line to this file; works
            with `enabled=False` too (then only ACE's own spans are recorded).
        service_name: The OpenTelemetry service name.
        console: Also print spans to the console.
        token: The Logfire write token; found as Logfire finds it when not given (`find_logfire_target`:
            `$LOGFIRE_TOKEN`, else the `.logfire/` credentials of `logfire auth` + `logfire projects use`).
        redact: Replace secrets and personal data in every span (Logfire and the local file) by placeholders:
            `True` with the built-in detectors, a `Redactor` with its own, `False` not at all.

    Logfire's own console output (span lines, the project link) is off unless `console=True`: it would print
    into the caller's progress bar; `Observability.where()` says where the spans went instead.
    """
    target = find_logfire_target(token) if enabled and send_to_logfire is not False else None
    if send_to_logfire is True and target is None:
        raise ObservabilityError(
            "send_to_logfire=True needs a Logfire write token: set LOGFIRE_TOKEN (or pass token=), run "
            f"`logfire auth` and `logfire projects use` to write {_CREDENTIALS_HINT}, or use "
            "send_to_logfire='if-token-present' to record spans without sending them"
        )
    path = Path(local_spans_path) if local_spans_path is not None else None
    if not enabled and path is None:
        return Observability(enabled=False, sending=False, include_content=include_content, local_spans_path=None)
    import logfire

    from ace.redaction.scrubbing import scrubbing_options

    sending = target is not None
    redactor = redact if isinstance(redact, Redactor) else Redactor() if redact else None
    processors = [SimpleSpanProcessor(JsonlSpanExporter(path, redactor=redactor))] if path is not None else []
    logfire.configure(
        send_to_logfire=sending,
        token=target.token if target is not None else None,
        service_name=service_name,
        console=None if console else False,
        additional_span_processors=processors,
        inspect_arguments=False,
        scrubbing=scrubbing_options(redactor),
    )
    if enabled:
        logfire.instrument_pydantic_ai(include_content=include_content)
    return Observability(
        enabled=enabled, sending=sending, include_content=include_content, local_spans_path=path, target=target
    )


# ------------------------------------------------------------------------------------------------- spans
def clean_attributes(attributes: Mapping[str, AttributeInput]) -> dict[str, AttributeValue]:
    """Span attributes without the `None` values OpenTelemetry refuses."""
    return {k: v for k, v in attributes.items() if v is not None}


@contextmanager
def ace_span(
    name: str,
    attributes: Mapping[str, AttributeInput],
    *,
    expected: tuple[type[BaseException], ...] = (),
) -> Iterator[Span]:
    """A span from the `ace` tracer; exceptions of the `expected` types end it normally, others mark it failed.

    With no tracer provider set up (the OpenTelemetry API's bare proxy) nothing could record it: the span is the
    API's no-op one, without building one per call (~14 us each, ten per trained trace).
    """
    provider = trace.get_tracer_provider()
    if type(provider) is trace.ProxyTracerProvider:
        yield INVALID_SPAN
        return
    tracer = provider.get_tracer(TRACER_NAME)
    with tracer.start_as_current_span(
        name, attributes=clean_attributes(attributes), record_exception=False, set_status_on_exception=False
    ) as span:
        try:
            yield span
        except expected:
            raise
        except BaseException as e:
            # Logfire never scrubs exception messages: an error quoting a secret is redacted here
            redact = _ERRORS.redact_text
            trace_text = redact("".join(traceback.format_exception(e)))
            span.record_exception(e, {"exception.message": redact(str(e)), "exception.stacktrace": trace_text})
            span.set_status(Status(StatusCode.ERROR, redact(f"{type(e).__name__}: {e}")))
            raise


def open_span(name: str, attributes: Mapping[str, AttributeInput]) -> Span:
    """A span from the `ace` tracer under the current one, not made current and not ended: for a span that outlives
    one `with` block (an epoch whose samples run as concurrent tasks). End it with `span.end()`."""
    provider = trace.get_tracer_provider()
    if type(provider) is trace.ProxyTracerProvider:
        return INVALID_SPAN
    return provider.get_tracer(TRACER_NAME).start_span(name, attributes=clean_attributes(attributes))


@contextmanager
def current_span(span: Span) -> Iterator[Span]:
    """Make `span` (from `open_span`) the parent of the spans started inside, without ending it."""
    with trace.use_span(span, end_on_exit=False, record_exception=False, set_status_on_exception=False):
        yield span


# --------------------------------------------------------------------------------------- local export
def span_to_dict(span: ReadableSpan) -> dict[str, Any]:
    """One finished span as plain JSON data: name, ids, times, status, attributes and events."""
    ctx = span.get_span_context()
    parent = span.parent
    start, end = span.start_time, span.end_time
    return {
        "name": span.name,
        "trace_id": f"{ctx.trace_id:032x}" if ctx is not None else None,
        "span_id": f"{ctx.span_id:016x}" if ctx is not None else None,
        "parent_span_id": f"{parent.span_id:016x}" if parent is not None else None,
        "start_time": _iso(start),
        "end_time": _iso(end),
        "duration_ms": (end - start) / 1e6 if start is not None and end is not None else None,
        "status": span.status.status_code.name,
        "status_description": span.status.description,
        "attributes": _json_safe(dict(span.attributes or {})),
        "events": [
            {"name": e.name, "time": _iso(e.timestamp), "attributes": _json_safe(dict(e.attributes or {}))}
            for e in span.events
        ],
    }


class JsonlSpanExporter(SpanExporter):
    """Appends each finished span to a JSONL file (one `span_to_dict` object per line), flushing per batch;
    with a `redactor`, every string of the span (exception messages included) is redacted first."""

    def __init__(self, path: str | os.PathLike[str], *, redactor: Redactor | None = None) -> None:
        self.path = Path(path)
        self.redactor = redactor
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._file: IO[str] | None = self.path.open("a", encoding="utf-8")

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        """Write the spans; fails (without raising) once the exporter is shut down."""
        records = [span_to_dict(s) for s in spans]
        if self.redactor is not None:
            records = [self.redactor.redact_data(r, numbered=False, skip_keys=_SPAN_IDS)[0] for r in records]
        text = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records)
        with self._lock:
            if self._file is None:
                return SpanExportResult.FAILURE
            self._file.write(text)
            self._file.flush()
        return SpanExportResult.SUCCESS

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        """Everything is flushed on export already."""
        return True

    def shutdown(self) -> None:
        """Close the file; later exports fail."""
        with self._lock:
            if self._file is not None:
                self._file.close()
                self._file = None


def read_spans_jsonl(path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """The spans a `JsonlSpanExporter` wrote, in the order they finished; a torn (non-JSON) line is skipped. A line
    the safe reader refuses (nested too deep, a too long integer) raises `JsonInputError`, a span without a `name`
    or `span_id`, or with the `span_id` of an earlier one, `ObservabilityError`, each naming the file and line."""
    out: list[dict[str, Any]] = []
    seen: dict[str, int] = {}
    data = json_safe.read_bytes(path)
    for number, line in enumerate(data.split(b"\n"), start=1):
        if not line.strip():
            continue
        try:
            span = json_safe.loads(line, file=str(path), line=number)
        except json_safe.JsonInputError as e:
            if e.kind not in ("syntax", "encoding"):
                raise
            continue
        where = f"{path}, line {number}"
        missing = [k for k in ("name", "span_id") if not isinstance(span, dict) or not isinstance(span.get(k), str)]
        if missing:
            raise ObservabilityError(f"{where}: field '{missing[0]}': missing, so this is no span ACE wrote")
        if span["span_id"] in seen:
            raise ObservabilityError(
                f"{where}: field 'span_id': {span['span_id']!r} repeats line {seen[span['span_id']]}: the file was "
                "edited or two runs wrote it; restore it or move it away"
            )
        seen[span["span_id"]] = number
        out.append(span)
    return out


def _iso(ns: int | None) -> str | None:
    return None if ns is None else datetime.fromtimestamp(ns / 1e9, UTC).isoformat(timespec="microseconds")


def _json_safe(attributes: dict[str, Any]) -> dict[str, Any]:
    """OpenTelemetry attribute values are primitives or tuples of them; tuples become lists."""
    return {k: list(v) if isinstance(v, tuple) else v for k, v in attributes.items()}
