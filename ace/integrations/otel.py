"""Spans to a file as OTLP JSON lines, for `ace-eval collection import` / `e2e --traces` (`--format otel`).

```python
import logfire
from ace.integrations.otel import OtlpJsonLinesExporter, span_file_processor

logfire.configure(send_to_logfire=False, additional_span_processors=[span_file_processor("spans.jsonl")])
logfire.instrument_pydantic_ai()
```

Each export is appended as one line: an OTLP `ExportTraceServiceRequest` (`{"resourceSpans": [...]}`) encoded by
OpenTelemetry's own OTLP encoder and protobuf's JSON mapping, with trace and span ids in hex as the OTLP JSON
encoding specifies; the OpenTelemetry Collector's file exporter writes the same shape. Secrets are replaced by
`ace.redaction` placeholders before the line is written (`redactor=None` keeps the spans as they are); ids and
timestamps are kept. Lines are appended under a lock and flushed, so a process killed mid-run leaves whole lines.
The encoder and protobuf come with `logfire`, a dependency of ACE.
"""

from __future__ import annotations

import base64
import json
import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from google.protobuf.json_format import MessageToDict
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult

from ace.redaction import Redactor

__all__ = ["OtlpJsonLinesExporter", "span_file_processor"]

_IDS = ("traceId", "spanId", "parentSpanId")
_KEPT = frozenset({*_IDS, "startTimeUnixNano", "endTimeUnixNano", "timeUnixNano"})
"""Fields the redaction leaves alone: a 19-digit timestamp can pass a card number's Luhn check."""
_DEFAULT: Any = object()


class OtlpJsonLinesExporter(SpanExporter):
    """A span exporter that appends each batch of spans to `path` as one line of OTLP JSON.

    Args:
        path: The file; created (with its folder) when missing, appended to otherwise.
        redactor: Replaces secrets in the spans before they are written (default: a `Redactor()` with the
            built-in detectors); None writes them as they are.
    """

    def __init__(self, path: str | os.PathLike[str], *, redactor: Redactor | None = _DEFAULT) -> None:
        self.path = Path(path)
        self.redactor: Redactor | None = Redactor() if redactor is _DEFAULT else redactor
        self._lock = threading.Lock()
        self._closed = False

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        if self._closed:
            return SpanExportResult.FAILURE
        if not spans:
            return SpanExportResult.SUCCESS
        line = json.dumps(self.document(spans), ensure_ascii=False, separators=(",", ":")) + "\n"
        try:
            with self._lock:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                with self.path.open("a", encoding="utf-8") as out:
                    out.write(line)
                    out.flush()
        except OSError:
            return SpanExportResult.FAILURE
        return SpanExportResult.SUCCESS

    def document(self, spans: Sequence[ReadableSpan]) -> dict[str, Any]:
        """The OTLP JSON document of `spans` (hex ids, redacted unless `redactor` is None)."""
        document: dict[str, Any] = MessageToDict(encode_spans(spans))
        for resource in document.get("resourceSpans", []):
            for scope in resource.get("scopeSpans", []):
                for span in scope.get("spans", []):
                    for links in (span, *span.get("links", [])):
                        for key in _IDS:
                            if key in links:
                                links[key] = base64.b64decode(links[key]).hex()
        if self.redactor is not None:
            document = self.redactor.redact_data(document, numbered=False, skip_keys=_KEPT)[0]
        return document

    def shutdown(self) -> None:
        self._closed = True

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return True  # every export is written and flushed before it returns


def span_file_processor(path: str | os.PathLike[str], *, redactor: Redactor | None = _DEFAULT) -> SimpleSpanProcessor:
    """A span processor writing each finished span to `path` (`OtlpJsonLinesExporter`), for
    `logfire.configure(additional_span_processors=[...])` or an OpenTelemetry `TracerProvider`; wrap the exporter
    in a `BatchSpanProcessor` instead to write in batches off the request path."""
    return SimpleSpanProcessor(OtlpJsonLinesExporter(path, redactor=redactor))
