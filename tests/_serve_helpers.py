"""Shared helpers of the `ace-eval serve` tests: a server on 127.0.0.1 (port 0), bounded polling, raw requests."""

from __future__ import annotations

import json
import os
import re
import select
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ace_eval.serve import ServeApp, ServeConfig
from ace_eval.serve._segments import Segments

SERVE_CLI = [sys.executable, "-c", "from ace_eval.cli import main; main()", "serve"]


@contextmanager
def running(store: Path, **options: Any) -> Iterator[ServeApp]:
    app = ServeApp(ServeConfig(store=store, port=0, settle=0.0, **options))
    app.start()
    try:
        yield app
    finally:
        app.stop()


def start_serve(args: list[str], env: dict[str, str] | None = None) -> tuple[subprocess.Popen[bytes], str | None, str]:
    """`ace-eval serve ARGS` in a process of its own (this folder on PYTHONPATH: `--models-from _serve_models:...`
    works), its stderr read until it listens: (the process, its base URL or `None` when it ended first, what it said
    so far). The caller drains or closes its stderr."""
    given = {**os.environ, **(env or {})}
    path = os.pathsep.join(p for p in [str(Path(__file__).parent), given.get("PYTHONPATH", "")] if p)
    process = subprocess.Popen([*SERVE_CLI, *args], stderr=subprocess.PIPE, env={**given, "PYTHONPATH": path})
    assert process.stderr is not None
    deadline, seen = time.monotonic() + 120, b""
    while time.monotonic() < deadline:
        ready, _, _ = select.select([process.stderr], [], [], 1.0)
        if ready:
            seen += os.read(process.stderr.fileno(), 65536)
            found = re.search(rb"listening on (http://\S+) ", seen)
            if found:
                return process, found.group(1).decode(), seen.decode(errors="replace")
        if process.poll() is not None:
            return process, None, (seen + process.stderr.read()).decode(errors="replace")
    process.kill()
    raise AssertionError(f"serve did not start: {seen!r}")


def url(app: ServeApp, path: str) -> str:
    host, port = app.address
    return f"http://{host}:{port}{path}"


def request(
    target: str, body: bytes | None = None, headers: dict[str, str] | None = None, method: str | None = None
) -> tuple[int, dict[str, str], bytes]:
    """Status, headers and body of one request (errors included), with a 10 s timeout."""
    req = urllib.request.Request(target, data=body, headers=headers or {}, method=method)
    try:
        with urllib.request.urlopen(req, timeout=10) as response:
            return response.status, dict(response.headers), response.read()
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), e.read()


def wait_for(condition: Callable[[], bool], seconds: float = 15.0) -> None:
    """Poll `condition` every 50 ms for at most `seconds`; fail when it never holds."""
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("condition not met in time")
        time.sleep(0.05)


def otlp_json(trace_id: str, spans: list[dict[str, Any]]) -> bytes:
    """An OTLP JSON export request with `spans` (each: spanId, name, optional parentSpanId / attributes)."""
    full = [
        {
            "traceId": trace_id,
            "startTimeUnixNano": "1700000000000000000",
            "endTimeUnixNano": "1700000001000000000",
            **span,
        }
        for span in spans
    ]
    return json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": full}]}]}).encode()


def string_attr(key: str, value: str) -> dict[str, Any]:
    return {"key": key, "value": {"stringValue": value}}


MESSAGES = [
    {"role": "user", "parts": [{"type": "text", "content": "Cancel order A1"}]},
    {"role": "assistant", "parts": [{"type": "text", "content": "Done."}]},
]


def agent_span(span_id: str, parent: str | None = None, extra: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """A pydantic-ai agent run span (`invoke_agent`) holding a two-message conversation."""
    attributes = [
        string_attr("gen_ai.operation.name", "invoke_agent"),
        string_attr("pydantic_ai.all_messages", json.dumps(MESSAGES)),
        *(extra or []),
    ]
    return {"spanId": span_id, "name": "invoke_agent support", "attributes": attributes} | (
        {"parentSpanId": parent} if parent else {}
    )


def inbox_files(store: Path) -> list[Path]:
    """The inbox's segment files, oldest first."""
    return sorted((store / "serve" / "inbox").glob("*.seg"))


def inbox_spans(store: Path, start: int = 0) -> int:
    """The span count of the records on disk from offset `start` (read as a restart reads them)."""
    segments = Segments(store / "serve" / "inbox", segment_bytes=1 << 30)
    spans = segments.recover(start)
    return spans


def inbox_end(store: Path) -> int:
    """The offset after the last record on disk."""
    segments = Segments(store / "serve" / "inbox", segment_bytes=1 << 30)
    segments.recover(segments.starts[-1] if segments.starts else 0)
    return segments.end
