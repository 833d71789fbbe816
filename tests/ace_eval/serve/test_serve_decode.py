"""The protobuf fast path of `POST /v1/traces` answers exactly as the slow one (OTLP JSON form, `redact_data`, the
OTel importer): the same spans, and a request holding a secret anywhere is redacted, never kept as it came."""

from __future__ import annotations

import base64
from typing import Any

import pytest
from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.json_format import MessageToDict
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import (
    AnyValue,
    ArrayValue,
    InstrumentationScope,
    KeyValue,
    KeyValueList,
)
from opentelemetry.proto.resource.v1.resource_pb2 import Resource
from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans, ScopeSpans, Span, Status

from ace.redaction import Redactor
from ace_eval.serve._decode import BadRequest, Decoder, _hex_ids, record_spans
from ace_eval.serve._proto import FAST_PATH
from ace_eval.serve._segments import Record

SECRET = "sk-proj-Zq81hFv3KfW9pT2xLmN4bR7cY0dJ5sAe"
CARD = 4111111111111111
PROTOBUF = {"content_type": "application/x-protobuf", "content_encoding": ""}


def _kv(key: str, value: AnyValue) -> KeyValue:
    return KeyValue(key=key, value=value)


def _text(value: str) -> AnyValue:
    return AnyValue(string_value=value)


def _request(**secret_at: Any) -> ExportTraceServiceRequest:
    """A request using every kind of field and value; `secret_at` replaces one text (by name) with a secret."""
    s = {name: secret_at.get(name, default) for name, default in _TEXTS.items()}
    values = [
        _kv("gen_ai.operation.name", _text(s["value"])),
        _kv(s["key"], _text("x")),
        _kv("n", AnyValue(int_value=secret_at.get("int", 42))),
        _kv("d", AnyValue(double_value=0.5)),
        _kv("b", AnyValue(bool_value=True)),
        _kv("raw", AnyValue(bytes_value=s["bytes"].encode())),
        _kv("list", AnyValue(array_value=ArrayValue(values=[_text(s["array"]), AnyValue(int_value=3)]))),
        _kv("map", AnyValue(kvlist_value=KeyValueList(values=[_kv("inner", _text(s["kvlist"]))]))),
        KeyValue(key="empty"),
    ]
    root = Span(
        trace_id=bytes(range(16)),
        span_id=bytes(range(8)),
        trace_state=s["trace_state"],
        name=s["name"],
        kind=Span.SPAN_KIND_SERVER,
        flags=257,
        start_time_unix_nano=1_700_000_000_000_000_000,
        end_time_unix_nano=1_700_000_001_000_000_000,
        attributes=values,
        events=[Span.Event(time_unix_nano=5, name=s["event"], attributes=[_kv("e", _text(s["event_attr"]))])],
        links=[Span.Link(trace_id=bytes(16), span_id=bytes(8), trace_state=s["link"], attributes=[])],
        status=Status(code=Status.STATUS_CODE_ERROR, message=s["status"]),
    )
    child = Span(trace_id=bytes(range(16)), span_id=bytes(range(1, 9)), parent_span_id=bytes(range(8)), name="c")
    scope = ScopeSpans(
        scope=InstrumentationScope(name=s["scope"], version="1", attributes=[_kv("sa", _text(s["scope_attr"]))]),
        spans=[root, child],
        schema_url=s["schema"],
    )
    resource = Resource(attributes=[_kv("service.name", _text(s["resource"]))])
    return ExportTraceServiceRequest(resource_spans=[ResourceSpans(resource=resource, scope_spans=[scope])])


_TEXTS = {
    "value": "invoke_agent",
    "key": "plain.key",
    "bytes": "abc",
    "array": "item",
    "kvlist": "inner value",
    "trace_state": "vendor=1",
    "name": "invoke_agent support",
    "event": "exception",
    "event_attr": "boom",
    "link": "",
    "status": "it failed",
    "scope": "pydantic-ai",
    "scope_attr": "s",
    "schema": "https://opentelemetry.io/schemas/1.26.0",
    "resource": "support-bot",
}


def _slow(message: ExportTraceServiceRequest, redactor: Redactor | None) -> tuple[bytes, list[Any]]:
    """What the slow path keeps (redacted OTLP JSON) and reads."""
    decoder = Decoder(redactor, limit=1 << 20)
    document = MessageToDict(message)
    _hex_ids(document)
    decoded = decoder._document(document)
    return decoded.payload, decoded.spans


def test_the_fast_path_is_on_for_the_installed_opentelemetry_proto() -> None:
    assert FAST_PATH


def test_a_clean_request_is_kept_as_protobuf_with_the_spans_the_slow_path_reads() -> None:
    message = _request()
    decoded = Decoder(Redactor(), limit=1 << 20).decode(message.SerializeToString(), **PROTOBUF)
    assert decoded.encoding == "protobuf"
    assert ExportTraceServiceRequest.FromString(decoded.payload) == message
    assert decoded.spans == _slow(message, Redactor())[1]
    assert decoded.spans[0].status_error == "it failed" and decoded.spans[1].parent_id == bytes(range(8)).hex()
    stored = record_spans(Record(0, 0, 2, decoded.encoding, decoded.payload))
    assert stored == decoded.spans  # what the assembler reads back after a restart


@pytest.mark.parametrize("where", [*sorted(_TEXTS), "int"])
def test_a_secret_anywhere_sends_the_request_to_the_slow_path(where: str) -> None:
    message = _request(**{where: CARD if where == "int" else SECRET})  # bytes: found in base64 (`base64_key`)
    decoded = Decoder(Redactor(), limit=1 << 20).decode(message.SerializeToString(), **PROTOBUF)
    payload, spans = _slow(message, Redactor())
    assert decoded.encoding == "json" and decoded.payload == payload and decoded.spans == spans
    for raw in (SECRET, str(CARD), base64.b64encode(SECRET.encode()).decode()):
        assert raw.encode() not in decoded.payload
    assert b"[REDACTED:" in decoded.payload and decoded.rejected == 0 and len(decoded.spans) == 2
    if where == "int":  # a card number as an int attribute: the span is kept, the value is its placeholder
        assert decoded.spans[0].attributes["n"] == "[REDACTED:card_number]"
        assert record_spans(Record(0, 0, 2, decoded.encoding, decoded.payload)) == decoded.spans


def test_without_redaction_the_fast_path_keeps_the_body() -> None:
    message = _request(value=SECRET)
    decoded = Decoder(None, limit=1 << 20).decode(message.SerializeToString(), **PROTOBUF)
    assert decoded.encoding == "protobuf" and decoded.spans == _slow(message, None)[1]


def test_unknown_fields_are_not_kept() -> None:
    """A field of a newer OTLP version this one does not know: the JSON form drops it, so does the fast path."""
    unknown = bytes([0x9A, 0x06, len(SECRET)]) + SECRET.encode()  # field 99, length-delimited
    span = Span(trace_id=bytes(range(16)), span_id=bytes(range(8)), name="s").SerializeToString() + unknown
    body = ExportTraceServiceRequest(
        resource_spans=[ResourceSpans(scope_spans=[ScopeSpans(spans=[Span.FromString(span)])])]
    ).SerializeToString()
    decoded = Decoder(Redactor(), limit=1 << 20).decode(body, **PROTOBUF)
    assert decoded.encoding == "protobuf" and SECRET.encode() not in decoded.payload and len(decoded.spans) == 1


def test_a_bad_id_gets_the_slow_paths_answer() -> None:
    good = Span(trace_id=bytes(range(16)), span_id=bytes(range(8)), name="ok")
    bad = Span(trace_id=bytes(range(16)), span_id=b"\x01\x02", name="bad")
    both = ExportTraceServiceRequest(resource_spans=[ResourceSpans(scope_spans=[ScopeSpans(spans=[bad, good])])])
    decoded = Decoder(Redactor(), limit=1 << 20).decode(both.SerializeToString(), **PROTOBUF)
    assert decoded.encoding == "json" and decoded.rejected == 1 and "spanId" in decoded.reason
    assert [s.name for s in decoded.spans] == ["ok"]
    only_bad = ExportTraceServiceRequest(resource_spans=[ResourceSpans(scope_spans=[ScopeSpans(spans=[bad])])])
    with pytest.raises(BadRequest, match="spanId"):
        Decoder(Redactor(), limit=1 << 20).decode(only_bad.SerializeToString(), **PROTOBUF)


def test_what_the_fast_path_does_not_search_holds_nothing_to_find() -> None:
    """Span kinds and status codes (enum names in the JSON form) and the JSON field names are fixed words."""
    names: set[str] = set()

    def walk(descriptor: Any, seen: set[str]) -> None:
        if descriptor.full_name in seen:
            return
        seen.add(descriptor.full_name)
        for field in descriptor.fields:
            names.add(field.json_name)
            if field.type == FieldDescriptor.TYPE_ENUM:
                names.update(value.name for value in field.enum_type.values)
            if field.message_type is not None:
                walk(field.message_type, seen)

    walk(ExportTraceServiceRequest.DESCRIPTOR, set())
    assert "SPAN_KIND_SERVER" in names and "stringValue" in names
    assert Redactor().redact_texts(sorted(names)) is None
