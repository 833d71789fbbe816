"""Spans read into plain `Span`s: OTLP JSON (OpenTelemetry's file exporters) and Logfire's records.

OTLP: one `{"resourceSpans": [...]}` document or JSON lines of them; ids hex or base64, attribute values OTLP
`AnyValue`s. Logfire: rows of its `records` table (`trace_id`, `span_id`, `parent_span_id`, `span_name`,
`start_timestamp`, `attributes`...), as a list, `{"rows": [...]}` or one per line. Errors name line and field.
"""

from __future__ import annotations

import base64
import binascii
import os
import re
from dataclasses import dataclass, field
from datetime import datetime

from ace import json_safe
from ace.redaction import PLACEHOLDER
from ace_eval.collection.importers._common import parse_source, read_source
from ace_eval.collection.model import CollectionError

__all__ = ["Span", "is_logfire_records", "read_otlp_spans", "spans_from_document"]

JsonAttr = str | int | float | bool | None | list["JsonAttr"] | dict[str, "JsonAttr"]


@dataclass(frozen=True, kw_only=True)
class Span:
    """One span: ids in hex, attributes decoded to plain JSON values, and where it was in the file."""

    trace_id: str
    span_id: str
    parent_id: str | None
    name: str
    start_ns: int
    attributes: dict[str, JsonAttr]
    status_error: str | None = None
    """The status message when the span ended in error ("" when it has none)."""
    events: list[tuple[str, dict[str, JsonAttr]]] = field(default_factory=list[tuple[str, dict[str, JsonAttr]]])
    line: int | None = None
    path: str = ""
    """Where the span is in its document, e.g. `resourceSpans[0].scopeSpans[0].spans[2]`."""


class _Where:
    def __init__(self, file: str, line: int | None) -> None:
        self.file = file
        self.line = line

    def error(self, message: str, path: str) -> CollectionError:
        return CollectionError(message, file=self.file, line=self.line, field=path)


def _id(value: object, size: int, where: _Where, path: str) -> str:
    """A trace id (16 bytes) or span id (8 bytes) in hex, from hex or base64."""
    if not isinstance(value, str) or not value:
        raise where.error(f"missing or not a string, got {value!r:.40}", path)
    if len(value) == size * 2:
        try:
            bytes.fromhex(value)
            return value.lower()
        except ValueError:
            pass
    try:
        raw = base64.b64decode(value, validate=True)
    except binascii.Error:
        raw = b""
    if len(raw) != size:
        raise where.error(f"not a {size}-byte id in hex ({size * 2} digits) or base64, got {value!r:.40}", path)
    return raw.hex()


def _value(value: object, where: _Where, path: str) -> JsonAttr:
    """Decode an OTLP `AnyValue` (`{"stringValue": ...}`, `{"intValue": "3"}`, arrays, key-value lists)."""
    if not isinstance(value, dict):
        raise where.error(f"an attribute value is an object like {{'stringValue': ...}}, got {value!r:.40}", path)
    if not value:
        return None
    kind, raw = next(iter(value.items()))
    if kind == "stringValue" and isinstance(raw, str):
        return raw
    if kind == "boolValue" and isinstance(raw, bool):
        return raw
    if kind in ("intValue", "doubleValue") and isinstance(raw, str) and PLACEHOLDER.fullmatch(raw):
        return raw  # a number that was a secret (a card number in an int attribute): the span keeps the placeholder
    if kind == "intValue" and isinstance(raw, int | str):
        try:
            return int(raw)
        except ValueError:
            pass
    if kind == "doubleValue" and isinstance(raw, int | float | str):
        try:
            return float(raw)
        except ValueError:
            pass
    if kind == "bytesValue" and isinstance(raw, str):
        return raw
    if kind == "arrayValue" and isinstance(raw, dict):
        items = raw.get("values") or []
        if isinstance(items, list):
            return [_value(item, where, f"{path}[{i}]") for i, item in enumerate(items)]
    if kind == "kvlistValue" and isinstance(raw, dict):
        return _attributes(raw.get("values") or [], where, path)
    raise where.error(f"cannot decode the attribute value {value!r:.60}", path)


def _attributes(raw: object, where: _Where, path: str) -> dict[str, JsonAttr]:
    if not isinstance(raw, list):
        raise where.error(f"must be a list of {{'key', 'value'}} objects, got {type(raw).__name__}", path)
    out: dict[str, JsonAttr] = {}
    for i, item in enumerate(raw):
        if not isinstance(item, dict) or not isinstance(item.get("key"), str):
            raise where.error("an attribute needs a string `key`", f"{path}[{i}]")
        out[item["key"]] = _value(item.get("value", {}), where, f"{path}[{item['key']}]")
    return out


def _span(raw: object, where: _Where, path: str) -> Span:
    if not isinstance(raw, dict):
        raise where.error(f"a span is an object, got {type(raw).__name__}", path)
    parent = raw.get("parentSpanId")
    status = raw.get("status") if isinstance(raw.get("status"), dict) else {}
    assert isinstance(status, dict)
    failed = status.get("code") in ("STATUS_CODE_ERROR", 2)
    events = []
    for i, event in enumerate(raw.get("events") or []):
        if isinstance(event, dict):
            attrs = _attributes(event.get("attributes") or [], where, f"{path}.events[{i}].attributes")
            events.append((str(event.get("name", "")), attrs))
    start = raw.get("startTimeUnixNano", 0)
    return Span(
        trace_id=_id(raw.get("traceId"), 16, where, f"{path}.traceId"),
        span_id=_id(raw.get("spanId"), 8, where, f"{path}.spanId"),
        parent_id=_id(parent, 8, where, f"{path}.parentSpanId") if parent else None,
        name=str(raw.get("name", "")),
        start_ns=int(start) if isinstance(start, int | str) and _NANOSECONDS.fullmatch(str(start)) else 0,
        attributes=_attributes(raw.get("attributes") or [], where, f"{path}.attributes"),
        status_error=str(status.get("message", "")) if failed else None,
        events=events,
        line=where.line,
        path=path,
    )


_NANOSECONDS = re.compile(r"[0-9]{1,20}")
"""A Unix time in nanoseconds (19 digits today); a longer digit string is no time (and `int` refuses 4,300 digits)."""


def _record(raw: object, where: _Where, path: str) -> Span:
    """One row of Logfire's `records` table (its query API and exports): ids in hex, attributes a JSON object."""
    if not isinstance(raw, dict):
        raise where.error(f"a record is an object, got {type(raw).__name__}", path)
    attributes = raw.get("attributes") or {}
    if isinstance(attributes, str):
        try:
            attributes = json_safe.loads(attributes)
        except json_safe.JsonInputError as e:
            raise where.error(e.reason, f"{path}.attributes") from None
    if not isinstance(attributes, dict):
        raise where.error(f"must be a JSON object, got {type(attributes).__name__}", f"{path}.attributes")
    parent = raw.get("parent_span_id")
    started = raw.get("start_timestamp")
    try:
        start_ns = int(datetime.fromisoformat(str(started)).timestamp() * 1e9) if started else 0
    except ValueError:
        raise where.error(f"not an ISO timestamp, got {started!r:.40}", f"{path}.start_timestamp") from None
    failed = raw.get("otel_status_code") in ("ERROR", "STATUS_CODE_ERROR")
    exception = {k: raw[c] for k, c in _EXCEPTION_COLUMNS.items() if isinstance(raw.get(c), str) and raw[c]}
    return Span(
        trace_id=_id(raw.get("trace_id"), 16, where, f"{path}.trace_id"),
        span_id=_id(raw.get("span_id"), 8, where, f"{path}.span_id"),
        parent_id=_id(parent, 8, where, f"{path}.parent_span_id") if parent else None,
        name=str(raw.get("span_name", "")),
        start_ns=start_ns,
        attributes=attributes,
        status_error=str(raw.get("otel_status_message") or "") if failed else None,
        events=[("exception", dict(exception))] if exception else [],
        line=where.line,
        path=path,
    )


_EXCEPTION_COLUMNS = {"exception.type": "exception_type", "exception.message": "exception_message"}
"""The records table's exception columns, as the attributes of an OTLP `exception` event."""


def _records(doc: object) -> list[object] | None:
    """The Logfire records of a document (a row, a list of rows, or `{"rows": [...]}`), None when it has none."""
    if isinstance(doc, dict) and isinstance(doc.get("rows"), list):
        return list(doc["rows"])
    if isinstance(doc, dict) and "span_id" in doc and "trace_id" in doc:
        return [doc]
    if isinstance(doc, list) and doc and all(isinstance(r, dict) and "span_id" in r for r in doc):
        return list(doc)
    return None


def is_logfire_records(doc: object) -> bool:
    """True for a parsed document (or line) holding Logfire records."""
    return _records(doc) is not None


def _document(doc: object, where: _Where) -> list[Span]:
    rows = _records(doc)
    if rows is not None:
        prefix = "rows" if isinstance(doc, dict) and "rows" in doc else ""
        return [_record(row, where, f"{prefix}[{i}]") for i, row in enumerate(rows)]
    if not isinstance(doc, dict) or "resourceSpans" not in doc:
        got = sorted(doc)[:5] if isinstance(doc, dict) else type(doc).__name__
        raise where.error(
            f"not an OTLP JSON export: expected an object with `resourceSpans`, got {got}", "resourceSpans"
        )
    spans: list[Span] = []
    resources = doc["resourceSpans"]
    if not isinstance(resources, list):
        raise where.error("must be a list", "resourceSpans")
    for r, resource in enumerate(resources):
        scopes = (
            resource.get("scopeSpans", resource.get("instrumentationLibrarySpans"))
            if isinstance(resource, dict)
            else None
        )
        if not isinstance(scopes, list):
            raise where.error("missing or not a list", f"resourceSpans[{r}].scopeSpans")
        for s, scope in enumerate(scopes):
            raw_spans = scope.get("spans") if isinstance(scope, dict) else None
            if not isinstance(raw_spans, list):
                raise where.error("missing or not a list", f"resourceSpans[{r}].scopeSpans[{s}].spans")
            spans += [
                _span(raw, where, f"resourceSpans[{r}].scopeSpans[{s}].spans[{i}]") for i, raw in enumerate(raw_spans)
            ]
    return spans


def spans_from_document(doc: object, *, file: str = "") -> list[Span]:
    """The spans of one parsed OTLP JSON document (`{"resourceSpans": [...]}`) or Logfire records; a malformed
    one raises `CollectionError` naming the field (`ace-eval serve` checks each request body with it)."""
    return _document(doc, _Where(file, None))


def read_otlp_spans(path: str | os.PathLike[str]) -> list[Span]:
    """Every span of an OTLP JSON file (one document, or one document per line), read by the safe reader: within its
    size limit, a regular file only, and malformed, too deep or too long-numbered JSON refused with its line."""
    file = str(path)
    data = read_source(path)
    try:
        whole = json_safe.loads(data, file=file)
    except json_safe.JsonInputError as e:
        if e.kind != "syntax":
            raise CollectionError.from_json(e) from None
    else:
        return _document(whole, _Where(file, None))
    spans: list[Span] = []
    for number, line in enumerate(data.split(b"\n"), start=1):
        if line.strip():
            spans += _document(parse_source(line, file=file, line=number), _Where(file, number))
    return spans
