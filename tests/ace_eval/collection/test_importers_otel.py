"""The OpenTelemetry GenAI importer on spans written by pydantic-ai + Logfire, and on hand-written semconv shapes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from _otel_agent import record_agent_runs
from click.testing import CliRunner

from ace.redaction import Redactor
from ace.steps.redact import TRACE_ID_FIELDS
from ace_eval.cli import main
from ace_eval.collection import CollectionError, Trace, read_collection, write_collection
from ace_eval.collection.importers import import_otel, import_traces, sniff_format

PROMPTS = ["Weather in Paris?", "And in Oslo?", "Lima, please"]


def test_three_logfire_runs_are_three_traces_with_their_tool_calls(tmp_path: Path) -> None:
    spans = record_agent_runs(tmp_path / "spans.jsonl", PROMPTS)
    imported = import_otel(spans)
    assert [t.question for t in imported.traces] == PROMPTS
    oslo = imported.traces[1]
    assert oslo.messages == [
        {"role": "system", "content": "You answer weather questions."},
        {"role": "user", "content": "And in Oslo?"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call-Oslo",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"city": "Oslo"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call-Oslo", "content": "snow, -3C"},
        {"role": "assistant", "content": "The weather: snow, -3C."},
    ]
    assert oslo.num_tool_calls == 1 and oslo.feedback is None
    assert oslo.metadata["agent_name"] == "weather" and oslo.metadata["tools"] == ["get_weather"]
    assert oslo.trace_id == f"{oslo.metadata['otel_trace_id']}-{oslo.metadata['otel_span_id']}"
    assert imported.source_system == "otel" and imported.models == {"agent": "function:weather_model:"}
    write_collection(tmp_path / "coll", imported.traces, source_system=imported.source_system)
    assert read_collection(tmp_path / "coll")[1] == imported.traces


def test_base64_ids_and_a_single_document_give_the_same_traces(tmp_path: Path) -> None:
    hex_file = record_agent_runs(tmp_path / "hex.jsonl", PROMPTS[:1])
    b64_file = record_agent_runs(tmp_path / "b64.jsonl", PROMPTS[:1], hex_ids=False)
    assert "==" in b64_file.read_text() and "==" not in hex_file.read_text()
    merged = {
        "resourceSpans": [r for line in b64_file.read_text().splitlines() for r in json.loads(line)["resourceSpans"]]
    }
    document = tmp_path / "export.json"
    document.write_text(json.dumps(merged, indent=2))
    lines, whole = import_otel(b64_file).traces, import_otel(document).traces
    assert (
        [t.messages for t in whole] == [t.messages for t in lines] == [t.messages for t in import_otel(hex_file).traces]
    )
    assert sniff_format(document) == sniff_format(hex_file) == "otel"


def test_a_run_that_raised_is_imported_with_the_error_as_feedback(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="unknown city"):
        record_agent_runs(tmp_path / "failed.jsonl", ["Weather in Rome?"])
    (trace,) = import_otel(tmp_path / "failed.jsonl").traces
    assert (
        trace.feedback is not None and "ended in an error" in trace.feedback and "unknown city Rome" in trace.feedback
    )


def _attr(key: str, value: Any) -> dict[str, Any]:
    if isinstance(value, str):
        return {"key": key, "value": {"stringValue": value}}
    return {"key": key, "value": {"intValue": str(value)}}


def _span(span_id: str, name: str, attrs: dict[str, Any], parent: str | None = None, start: int = 1) -> dict[str, Any]:
    span: dict[str, Any] = {
        "traceId": "0af7651916cd43dd8448eb211c80319c",
        "spanId": span_id,
        "name": name,
        "startTimeUnixNano": str(start),
        "attributes": [_attr(k, v) for k, v in attrs.items()],
    }
    return {**span, "parentSpanId": parent} if parent else span


def _write(tmp_path: Path, *spans: dict[str, Any]) -> Path:
    path = tmp_path / "otlp.json"
    path.write_text(
        json.dumps({"resourceSpans": [{"resource": {}, "scopeSpans": [{"scope": {}, "spans": list(spans)}]}]})
    )
    return path


AGENTS_SDK_INPUT = [
    {"role": "user", "parts": [{"type": "text", "content": "Refund order 7"}]},
    {"role": "assistant", "parts": [{"type": "tool_call", "id": "t1", "name": "refund", "arguments": '{"order": 7}'}]},
    {"role": "tool", "parts": [{"type": "tool_call_response", "id": "t1", "response": {"ok": True}}]},
]


def test_semconv_spans_without_pydantic_ai_all_messages(tmp_path: Path) -> None:
    """The OpenAI Agents SDK's instrumentation: the conversation is on the last chat span, not the agent's."""
    path = _write(
        tmp_path,
        _span(
            "b7ad6b7169203331",
            "invoke_agent Support",
            {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "Support"},
        ),
        _span(
            "00f067aa0ba902b7",
            "chat gpt-4o",
            {
                "gen_ai.operation.name": "chat",
                "gen_ai.request.model": "gpt-4o",
                "gen_ai.system_instructions": json.dumps([{"type": "text", "content": "Be kind."}]),
                "gen_ai.input.messages": json.dumps(AGENTS_SDK_INPUT),
                "gen_ai.output.messages": json.dumps(
                    [{"role": "assistant", "parts": [{"type": "text", "content": "Done."}]}]
                ),
            },
            parent="b7ad6b7169203331",
            start=2,
        ),
    )
    (trace,) = import_traces("otel", path, source_system="support").traces
    assert [m["role"] for m in trace.messages] == ["system", "user", "assistant", "tool", "assistant"]
    assert trace.messages[3] == {"role": "tool", "tool_call_id": "t1", "content": '{"ok": true}'}
    assert trace.source_system == "support" and trace.metadata["model"] == "gpt-4o"


def test_the_older_events_attribute(tmp_path: Path) -> None:
    events = [
        {"event.name": "gen_ai.user.message", "content": "Hi"},
        {"event.name": "gen_ai.choice", "message": {"role": "assistant", "content": "Hello!"}},
    ]
    path = _write(
        tmp_path,
        _span("b7ad6b7169203331", "agent run", {"x": "y"}),
        _span("00f067aa0ba902b7", "chat", {"events": json.dumps(events)}, "b7ad6b7169203331"),
    )
    (trace,) = import_otel(path).traces
    assert trace.messages == [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello!"}]


RUN = "b7ad6b7169203331"


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ('{"resourceSpans": []}\nnot json\n', "otlp.json, line 2, column 1: not valid JSON"),
        ('{"spans": []}', "field 'resourceSpans': not an OTLP JSON export"),
        (
            json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [{"traceId": "xyz", "spanId": RUN}]}]}]}),
            "field 'resourceSpans[0].scopeSpans[0].spans[0].traceId': not a 16-byte id",
        ),
        (
            json.dumps(
                {
                    "resourceSpans": [
                        {"scopeSpans": [{"spans": [_span(RUN, "invoke_agent a", {"pydantic_ai.all_messages": "[{"})]}]}
                    ]
                }
            ),
            "field 'resourceSpans[0].scopeSpans[0].spans[0].attributes[pydantic_ai.all_messages]': not valid JSON",
        ),
        (
            json.dumps(
                {
                    "resourceSpans": [
                        {
                            "scopeSpans": [
                                {
                                    "spans": [
                                        _span(RUN, "invoke_agent a", {"pydantic_ai.all_messages": '[{"role": "bot"}]'})
                                    ]
                                }
                            ]
                        }
                    ]
                }
            ),
            "all_messages][0].role': must be one of 'system', 'user', 'assistant', 'tool', got 'bot'",
        ),
        (
            json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [_span(RUN, "GET /", {"http.method": "GET"})]}]}]}),
            "no agent run among 1 spans",
        ),
        (
            json.dumps(
                {
                    "resourceSpans": [
                        {
                            "scopeSpans": [
                                {"spans": [_span(RUN, "invoke_agent a", {"gen_ai.operation.name": "invoke_agent"})]}
                            ]
                        }
                    ]
                }
            ),
            "the agent run holds no messages: export the spans with message content",
        ),
    ],
)
def test_malformed_files_are_refused_naming_line_and_field(tmp_path: Path, content: str, message: str) -> None:
    path = tmp_path / "otlp.json"
    path.write_text(content)
    with pytest.raises(CollectionError) as info:
        import_otel(path)
    assert message in str(info.value)


def test_imported_traces_pass_redaction(tmp_path: Path) -> None:
    """A secret in a tool result is replaced by the run's redaction, and the redacted trace is still a trace."""
    spans = record_agent_runs(
        tmp_path / "spans.jsonl", ["Weather in Paris? my key is sk-proj-abcdefghijklmnopqrstuvwx1234567890ABCD"]
    )
    (trace,) = import_otel(spans).traces
    redacted, findings = Redactor().redact_data(trace.as_mapping(), skip_keys=TRACE_ID_FIELDS)
    assert findings and "sk-proj-abcdefghijklmnop" not in json.dumps(redacted)
    assert Trace.model_validate(redacted).trace_uid == trace.trace_uid


def test_collection_import_otel_on_the_command_line(tmp_path: Path) -> None:
    spans = record_agent_runs(tmp_path / "spans.jsonl", PROMPTS)
    out = tmp_path / "coll"
    result = CliRunner().invoke(main, ["collection", "import", "--format", "otel", str(spans), "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert "Imported 3 traces" in result.output
    manifest, traces = read_collection(out)
    assert manifest.metadata["importer"] == "otel" and manifest.models == {"agent": "function:weather_model:"}
    assert len(traces) == 3


def test_collection_import_tells_the_format_like_e2e_traces_does(tmp_path: Path) -> None:
    """`--format` is optional: the format is sniffed from the file (a folder of sessions is claude-code)."""
    spans = record_agent_runs(tmp_path / "spans.jsonl", PROMPTS[:1])
    chats = Path(__file__).resolve().parents[3] / "examples" / "chats.jsonl"
    for src, fmt in ((spans, "otel"), (chats, "openai-jsonl")):
        out = tmp_path / f"coll-{fmt}"
        result = CliRunner().invoke(main, ["collection", "import", str(src), "--out", str(out)])
        assert result.exit_code == 0, result.output
        assert f"from {src} ({fmt}" in result.output and read_collection(out)[0].metadata["importer"] == fmt
    (tmp_path / "notes.txt").write_text("not a trace file\n")
    refused = CliRunner().invoke(main, ["collection", "import", str(tmp_path / "notes.txt"), "--out", "x"])
    assert refused.exit_code == 2 and "not valid JSON at line 1, column 1" in refused.output
    assert not (tmp_path / "x").exists()


def _logfire_rows() -> list[dict[str, Any]]:
    """Rows of Logfire's `records` table for one pydantic-ai run (as its query API and exports give them)."""
    trace = "0af7651916cd43dd8448eb211c80319c"
    messages = [
        {"role": "user", "parts": [{"type": "text", "content": "Weather in Oslo?"}]},
        {"role": "assistant", "parts": [{"type": "tool_call", "id": "c1", "name": "get_weather", "arguments": {}}]},
        {"role": "user", "parts": [{"type": "tool_call_response", "id": "c1", "result": "snow"}]},
        {"role": "assistant", "parts": [{"type": "text", "content": "Snow."}]},
    ]
    run = {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "w", "pydantic_ai.all_messages": messages}
    return [
        {
            "trace_id": trace,
            "span_id": "b7ad6b7169203331",
            "parent_span_id": None,
            "span_name": "invoke_agent w",
            "start_timestamp": "2026-12-01T10:00:00.000000Z",
            "attributes": run,
            "otel_status_code": "UNSET",
        },
        {
            "trace_id": trace,
            "span_id": "00f067aa0ba902b7",
            "parent_span_id": "b7ad6b7169203331",
            "span_name": "execute_tool get_weather",
            "start_timestamp": "2026-12-01T10:00:01.000000Z",
            "attributes": {"gen_ai.tool.name": "get_weather"},
            "otel_status_code": "ERROR",
            "otel_status_message": "boom",
        },
    ]


@pytest.mark.parametrize("shape", ["list", "rows", "lines"])
def test_logfire_records_are_read_like_otlp(tmp_path: Path, shape: str) -> None:
    rows = _logfire_rows()
    path = tmp_path / "records.json"
    if shape == "lines":
        path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    else:
        path.write_text(json.dumps(rows if shape == "list" else {"columns": [], "rows": rows}))
    assert sniff_format(path) == "otel"
    (trace,) = import_otel(path).traces
    assert [m["role"] for m in trace.messages] == ["user", "assistant", "tool", "assistant"]
    assert trace.feedback == "Tool calls failed: get_weather (boom)." and trace.metadata["agent_name"] == "w"


def test_a_malformed_logfire_record_names_its_field(tmp_path: Path) -> None:
    rows = _logfire_rows()
    rows[1]["start_timestamp"] = "yesterday"
    path = tmp_path / "records.json"
    path.write_text(json.dumps({"rows": rows}))
    with pytest.raises(CollectionError, match=r"field 'rows\[1\].start_timestamp': not an ISO timestamp"):
        import_otel(path)
