"""OTLP/HTTP request bodies to redacted OTLP JSON documents: protobuf (`application/x-protobuf`) or the protobuf JSON
mapping (`application/json`), optionally gzip-compressed; every span checked with the OTel importer's reader.

Ids end up in hex (the OTLP JSON encoding) whichever way they came; secrets are replaced by `ace.redaction`
placeholders before the document goes anywhere (ids and timestamps are kept, as `ace.integrations.otel` does).
"""

from __future__ import annotations

import base64
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

__all__ = ["BadRequest", "Decoded", "TooLarge", "decode_traces"]

_IDS = ("traceId", "spanId", "parentSpanId")
_KEPT = frozenset({*_IDS, "startTimeUnixNano", "endTimeUnixNano", "timeUnixNano"})


class BadRequest(UserError, ValueError):
    """A body OTLP cannot accept (400); the message is the reason sent back."""


class TooLarge(UserError, ValueError):
    """A body (or its decompressed form) over the size limit (413)."""


@dataclass(frozen=True)
class Decoded:
    """One request's spans: the redacted document to keep, and the spans read from it."""

    document: dict[str, Any]
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


def decode_traces(
    body: bytes, *, content_type: str, content_encoding: str, limit: int, redactor: Redactor | None
) -> Decoded:
    """The redacted document and spans of one `POST /v1/traces` body; `BadRequest` / `TooLarge` otherwise."""
    encoding = content_encoding.strip().lower()
    if encoding == "gzip":
        body = _gunzip(body, limit)
    elif encoding not in ("", "identity"):
        raise BadRequest(f"unsupported Content-Encoding {encoding!r:.40}: send gzip or none")
    kind = content_type.split(";", 1)[0].strip().lower()
    if kind == "application/x-protobuf":
        try:
            message = ExportTraceServiceRequest.FromString(body)
        except (DecodeError, ValueError) as e:
            raise BadRequest(f"not an OTLP ExportTraceServiceRequest protobuf: {e}") from None
        document: Any = MessageToDict(message)
        _hex_ids(document)
    elif kind == "application/json":
        try:
            document = json_safe.loads(body)
        except json_safe.JsonInputError as e:
            raise BadRequest(f"malformed JSON: {e.reason}") from None
    else:
        raise BadRequest(f"unsupported Content-Type {kind!r:.60}: send application/x-protobuf or application/json")
    if not isinstance(document, dict) or not isinstance(document.get("resourceSpans", []), list):
        raise BadRequest("not an OTLP ExportTraceServiceRequest: expected an object with `resourceSpans`")
    document.setdefault("resourceSpans", [])
    if redactor is not None:
        document = redactor.redact_data(document, numbered=False, skip_keys=_KEPT)[0]
    try:
        return Decoded(document=document, spans=spans_from_document(document, file="request"))
    except CollectionError as e:
        return _keep_valid(document, str(e))


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
    return Decoded(document=document, spans=kept, rejected=rejected, reason=reason)
