"""The fast path of a protobuf `POST /v1/traces`: spans read straight from the parsed message, and the body kept as
it came when the redactor finds nothing in it.

`redact_data` on the OTLP JSON form searches every string of the document (joined by NUL, an attribute's name as
`key: NAME` since `key` is a secret-like field name), every int64 (the JSON form writes them as strings), bytes in
base64, and the ids and timestamps one by one (no card check). Here the same texts are collected while the spans
are read, deduplicated, and searched joined the same way (the ids and timestamps apart, without the card detector,
which can only find more): when nothing is found, `redact_data` would return the document unchanged, so the
protobuf body (without unknown fields, which the JSON form drops) is what the inbox keeps. Anything else — a
finding, an id the importer refuses, a field this module does not read — returns None and the caller takes the
slow path (`MessageToDict`, `redact_data`, the importer), which answers exactly as before.
"""

from __future__ import annotations

import base64
from collections.abc import Iterable
from typing import Any

from google.protobuf.descriptor import FieldDescriptor
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.trace.v1.trace_pb2 import Span as ProtoSpan
from opentelemetry.proto.trace.v1.trace_pb2 import Status

from ace.exceptions import RunError
from ace.redaction import NOT_IN_IDS, Redactor, secret_named
from ace_eval.collection.importers.otlp import JsonAttr, Span

__all__ = ["FAST_PATH", "fast_spans", "id_redactor"]

_MIN_INT = 10**7
"""An int below this is not searched by `redact_data` (no phone or card number is that short)."""
_ERROR = Status.STATUS_CODE_ERROR

_READ = {
    ProtoSpan.DESCRIPTOR: {
        "trace_id", "span_id", "trace_state", "parent_span_id", "flags", "name", "kind", "start_time_unix_nano",
        "end_time_unix_nano", "attributes", "dropped_attributes_count", "events", "dropped_events_count", "links",
        "dropped_links_count", "status",
    },
    ProtoSpan.Event.DESCRIPTOR: {"time_unix_nano", "name", "attributes", "dropped_attributes_count"},
    ProtoSpan.Link.DESCRIPTOR: {
        "trace_id", "span_id", "trace_state", "attributes", "dropped_attributes_count", "flags",
    },
    Status.DESCRIPTOR: {"message", "code"},
    KeyValue.DESCRIPTOR: {"key", "value", "key_strindex"},
    AnyValue.DESCRIPTOR: {
        "string_value", "bool_value", "int_value", "double_value", "array_value", "kvlist_value", "bytes_value",
        "string_value_strindex",
    },
}  # fmt: skip
"""The fields the span reader below handles, per message type (the rest of a request is walked generically)."""

FAST_PATH = all({f.name for f in d.fields} == names for d, names in _READ.items()) and {
    f.name for f in AnyValue.DESCRIPTOR.fields if f.message_type is not None
} == {"array_value", "kvlist_value"}
"""False when the installed `opentelemetry-proto` has span fields this module does not know: every request then
takes the slow path."""


class _Unusual(RunError):
    """A value the fast path leaves to the slow one (caught inside this module: it never reaches a user)."""


def id_redactor(redactor: Redactor) -> Redactor:
    """The detectors `redact_data` uses on ids and timestamps (all but the card check), for the fast path's id
    search. It has no allow-list: it can only find more, which sends a request to the slow path."""
    return Redactor(detectors=tuple(d for d in redactor.detectors if d.kind not in NOT_IN_IDS))


def fast_spans(
    message: ExportTraceServiceRequest, redactor: Redactor | None, ids_redactor: Redactor | None
) -> list[Span] | None:
    """The spans of `message`, when it needs no redaction and every span is one the importer accepts; else None."""
    if not FAST_PATH:
        return None
    texts: list[str] = []
    ids: list[str] = []
    spans: list[Span] = []
    try:
        for r, resource in enumerate(message.resource_spans):
            _generic(resource.resource, texts)
            texts.append(resource.schema_url)
            for s, scope in enumerate(resource.scope_spans):
                _generic(scope.scope, texts)
                texts.append(scope.schema_url)
                where = f"resourceSpans[{r}].scopeSpans[{s}].spans"
                spans += [_span(span, texts, ids, f"{where}[{i}]") for i, span in enumerate(scope.spans)]
    except _Unusual:
        return None
    if redactor is None or ids_redactor is None:
        return spans
    clean = redactor.redact_texts(_unique(texts)) is None and ids_redactor.redact_texts(_unique(ids)) is None
    return spans if clean else None


def _unique(texts: Iterable[str]) -> list[str]:
    return [t for t in dict.fromkeys(texts) if t]


def _span(span: ProtoSpan, texts: list[str], ids: list[str], path: str) -> Span:
    trace_id, span_id, parent = span.trace_id, span.span_id, span.parent_span_id
    if len(trace_id) != 16 or len(span_id) != 8 or (parent and len(parent) != 8):
        raise _Unusual  # the importer's error message comes from the slow path
    hex_ids = (trace_id.hex(), span_id.hex(), parent.hex() if parent else "")
    ids.extend(hex_ids)
    ids.extend((str(span.start_time_unix_nano), str(span.end_time_unix_nano)))
    texts.extend((span.name, span.trace_state))
    _counts(texts, span.flags, span.dropped_attributes_count, span.dropped_events_count, span.dropped_links_count)
    events = []
    for event in span.events:
        ids.append(str(event.time_unix_nano))
        texts.append(event.name)
        _counts(texts, event.dropped_attributes_count)
        events.append((event.name, _attributes(event.attributes, texts)))
    for link in span.links:
        ids.extend((link.trace_id.hex(), link.span_id.hex()))
        texts.append(link.trace_state)
        _counts(texts, link.flags, link.dropped_attributes_count)
        _attributes(link.attributes, texts)
    status = span.status
    texts.append(status.message)
    return Span(
        trace_id=hex_ids[0],
        span_id=hex_ids[1],
        parent_id=hex_ids[2] or None,
        name=span.name,
        start_ns=span.start_time_unix_nano,
        attributes=_attributes(span.attributes, texts),
        status_error=status.message if status.code == _ERROR else None,
        events=events,
        path=path,
    )


def _counts(texts: list[str], *values: int) -> None:
    texts.extend(str(v) for v in values if v >= _MIN_INT)


def _attributes(items: Iterable[KeyValue], texts: list[str]) -> dict[str, JsonAttr]:
    out: dict[str, JsonAttr] = {}
    for item in items:
        if item.key_strindex:
            raise _Unusual
        key = item.key
        texts.append("key: " + key)
        out[key] = _value(item.value, texts)
    return out


def _value(value: AnyValue, texts: list[str]) -> JsonAttr:
    kind = value.WhichOneof("value")
    if kind == "string_value":
        text = value.string_value
        texts.append(text)
        return text
    if kind is None:
        return None
    if kind == "int_value":
        number = value.int_value
        texts.append(str(number))
        return number
    if kind == "bool_value":
        return value.bool_value
    if kind == "double_value":
        return value.double_value
    if kind == "bytes_value":
        encoded = base64.b64encode(value.bytes_value).decode("ascii")
        texts.append(encoded)
        return encoded
    if kind == "array_value":
        return [_value(item, texts) for item in value.array_value.values]
    if kind == "kvlist_value":
        return _attributes(value.kvlist_value.values, texts)
    raise _Unusual


_INT64 = frozenset(
    {FieldDescriptor.TYPE_INT64, FieldDescriptor.TYPE_UINT64, FieldDescriptor.TYPE_FIXED64}
    | {FieldDescriptor.TYPE_SFIXED64, FieldDescriptor.TYPE_SINT64}
)
_SKIPPED = frozenset({FieldDescriptor.TYPE_BOOL, FieldDescriptor.TYPE_DOUBLE, FieldDescriptor.TYPE_FLOAT})


def _generic(message: Any, texts: list[str]) -> None:
    """The texts `redact_data` searches in the JSON form of any message (a resource, a scope): strings (after
    `NAME: ` for a secret-like field name), int64s, large ints, bytes in base64, enum names."""
    for field, value in message.ListFields():
        items = value if field.is_repeated else (value,)
        kind = field.type
        for item in items:
            if kind == FieldDescriptor.TYPE_MESSAGE:
                _generic(item, texts)
            elif kind == FieldDescriptor.TYPE_STRING:
                texts.append(f"{field.json_name}: {item}" if secret_named(field.json_name) else item)
            elif kind == FieldDescriptor.TYPE_BYTES:
                texts.append(base64.b64encode(item).decode("ascii"))
            elif kind in _INT64:
                texts.append(str(item))
            elif kind == FieldDescriptor.TYPE_ENUM:
                enum = field.enum_type.values_by_number.get(item)
                texts.append(enum.name if enum is not None else str(item))
            elif kind not in _SKIPPED and abs(item) >= _MIN_INT:
                texts.append(str(item))
