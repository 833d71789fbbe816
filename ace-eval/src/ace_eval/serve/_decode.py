"""OTLP/HTTP request bodies to what the inbox keeps (the redacted request) and the spans read from it: protobuf
(`application/x-protobuf`) or the protobuf JSON mapping (`application/json`), optionally gzip-compressed; every
span checked with the OTel importer's reader.

A protobuf body in which the redactor finds nothing is kept as protobuf, its spans read straight from the message
(`_proto`, the usual case). Otherwise the body becomes an OTLP JSON document, ids in hex (the OTLP JSON encoding)
whichever way they came, secrets replaced by `ace.redaction` placeholders (ids and timestamps are kept, as
`ace.integrations.otel` does), and the document is kept as JSON.
"""

from __future__ import annotations

import base64
import json
import zlib
from dataclasses import dataclass
from typing import Any

from google.protobuf.json_format import MessageToDict
from google.protobuf.message import DecodeError
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from ace import json_safe
from ace.exceptions import UserError
from ace.redaction import Redactor
from ace_eval.collection.importers.otlp import Span, spans_from_document
from ace_eval.collection.model import CollectionError
from ace_eval.serve._proto import fast_spans, id_redactor
from ace_eval.serve._segments import Record

__all__ = ["BadRequest", "Decoded", "Decoder", "TooLarge", "record_spans"]

_IDS = ("traceId", "spanId", "parentSpanId")
_KEPT = frozenset({*_IDS, "startTimeUnixNano", "endTimeUnixNano", "timeUnixNano"})


class BadRequest(UserError, ValueError):
    """A body OTLP cannot accept (400); the message is the reason sent back."""


class TooLarge(UserError, ValueError):
    """A body (or its decompressed form) over the size limit (413)."""


@dataclass(frozen=True)
class Decoded:
    """One request's spans: the redacted request to keep (`payload` in `encoding`, "protobuf" or "json"), and the
    spans read from it."""

    payload: bytes
    encoding: str
    spans: list[Span]
    rejected: int = 0
    """Spans refused (OTLP `partial_success.rejected_spans`), with the first `reason`."""
    reason: str = ""


def _gunzip(body: bytes, limit: int) -> bytes:
    decompressor = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)
    try:
        out = decompressor.decompress(body, limit + 1)
    except zlib.error as e:
        raise BadRequest(f"Content-Encoding is gzip but the body is not: {e}") from None
    if len(out) > limit:
        raise TooLarge(f"the decompressed body is over {limit} bytes")
    if not decompressor.eof:
        raise BadRequest("the gzip body is truncated")
    return out


def _hex_ids(document: dict[str, Any]) -> None:
    """Base64 ids (protobuf's JSON mapping) to hex (the OTLP JSON encoding), in place."""
    for resource in document.get("resourceSpans", []):
        for scope in resource.get("scopeSpans", []):
            for span in scope.get("spans", []):
                for holder in (span, *span.get("links", [])):
                    for key in _IDS:
                        if holder.get(key):
                            holder[key] = base64.b64decode(holder[key]).hex()


class Decoder:
    """Decodes the bodies of `POST /v1/traces` with one redactor (None: no redaction); thread-safe."""

    def __init__(self, redactor: Redactor | None, *, limit: int) -> None:
        self.redactor = redactor
        self.ids_redactor = id_redactor(redactor) if redactor is not None else None
        self.limit = limit

    def decode(self, body: bytes, *, content_type: str, content_encoding: str) -> Decoded:
        """The request to keep and its spans; `BadRequest` / `TooLarge` otherwise."""
        encoding = content_encoding.strip().lower()
        if encoding == "gzip":
            body = _gunzip(body, self.limit)
        elif encoding not in ("", "identity"):
            raise BadRequest(f"unsupported Content-Encoding {encoding!r:.40}: send gzip or none")
        kind = content_type.split(";", 1)[0].strip().lower()
        if kind == "application/x-protobuf":
            try:
                message = ExportTraceServiceRequest.FromString(body)
            except (DecodeError, ValueError) as e:
                raise BadRequest(f"not an OTLP ExportTraceServiceRequest protobuf: {e}") from None
            spans = fast_spans(message, self.redactor, self.ids_redactor)
            if spans is not None:
                message.DiscardUnknownFields()  # the JSON form has none either: nothing unredacted is kept
                return Decoded(payload=message.SerializeToString(), encoding="protobuf", spans=spans)
            document: Any = MessageToDict(message)
            _hex_ids(document)
        elif kind == "application/json":
            try:
                document = json_safe.loads(body)
            except json_safe.JsonInputError as e:
                raise BadRequest(f"malformed JSON: {e.reason}") from None
        else:
            raise BadRequest(f"unsupported Content-Type {kind!r:.60}: send application/x-protobuf or application/json")
        return self._document(document)

    def _document(self, document: Any) -> Decoded:
        """A JSON document checked, redacted and read."""
        if not isinstance(document, dict) or not isinstance(document.get("resourceSpans", []), list):
            raise BadRequest("not an OTLP ExportTraceServiceRequest: expected an object with `resourceSpans`")
        document.setdefault("resourceSpans", [])
        if self.redactor is not None:
            document = self.redactor.redact_data(document, numbered=False, skip_keys=_KEPT)[0]
        try:
            spans = spans_from_document(document, file="request")
        except CollectionError as e:
            return _keep_valid(document, str(e))
        return Decoded(payload=_json(document), encoding="json", spans=spans)


def record_spans(record: Record) -> list[Span]:
    """The spans of an inbox record (redacted and checked when it was written)."""
    if record.encoding == "protobuf":
        message = ExportTraceServiceRequest.FromString(record.payload)
        spans = fast_spans(message, None, None)
        if spans is not None:
            return spans
        document: Any = MessageToDict(message)  # an opentelemetry-proto the fast path does not know
        _hex_ids(document)
    else:
        document = json.loads(record.payload)
    return spans_from_document(document, file="inbox")


def _json(document: dict[str, Any]) -> bytes:
    return json.dumps(document, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def _keep_valid(document: dict[str, Any], reason: str) -> Decoded:
    """The document without the spans the reader refuses (OTLP's partial success); `BadRequest` if none is left."""
    kept: list[Span] = []
    rejected = 0
    for resource in document.get("resourceSpans") or []:
        scopes = resource.get("scopeSpans") if isinstance(resource, dict) else None
        for scope in scopes if isinstance(scopes, list) else []:
            good = []
            raw_spans = scope.get("spans") if isinstance(scope, dict) else None
            for raw in raw_spans if isinstance(raw_spans, list) else []:
                try:
                    kept += spans_from_document({"resourceSpans": [{"scopeSpans": [{"spans": [raw]}]}]})
                    good.append(raw)
                except CollectionError:
                    rejected += 1
            if isinstance(scope, dict):
                scope["spans"] = good
    if not kept or not rejected:
        raise BadRequest(reason)
    return Decoded(payload=_json(document), encoding="json", spans=kept, rejected=rejected, reason=reason)
