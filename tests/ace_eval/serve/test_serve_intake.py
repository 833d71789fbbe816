"""`ace-eval serve` intake: a Logfire-instrumented pydantic-ai agent exports through OpenTelemetry's own OTLP/HTTP
exporter; the spans are acknowledged into the inbox (redacted) and assembled into traces. Server on 127.0.0.1."""

from __future__ import annotations

import contextlib
import gzip
import json
from pathlib import Path

import logfire
from _otel_agent import weather_agent
from _serve_helpers import inbox_files, inbox_spans, otlp_json, request, running, string_attr, url, wait_for
from google.rpc.status_pb2 import Status
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.sdk.trace.export import SimpleSpanProcessor

from ace_eval.serve import ServeApp

SECRET = "sk-proj-Zq81hFv3KfW9pT2xLmN4bR7cY0dJ5sAe"
TRACE = "0af7651916cd43dd8448eb211c80319c"


def _agent_runs(app: ServeApp, prompts: list[str], headers: dict[str, str] | None = None) -> None:
    exporter = OTLPSpanExporter(endpoint=url(app, "/v1/traces"), headers=headers, timeout=10)
    instance = logfire.configure(
        local=True,
        send_to_logfire=False,
        console=False,
        additional_span_processors=[SimpleSpanProcessor(exporter)],
        scrubbing=False,
    )
    agent = weather_agent()
    instance.instrument_pydantic_ai(agent)
    for prompt in prompts:
        with contextlib.suppress(ValueError):  # the tool raised (an unknown city): the spans say so
            agent.run_sync(prompt)
    instance.force_flush()


def test_agent_spans_over_otlp_http_are_acknowledged_redacted_and_assembled(tmp_path: Path) -> None:
    store = tmp_path / "store"
    with running(store, feedback_wait=0) as app:
        others = [
            f"Weather in {city}? ({n})" for n in range(17) for city in ["Lima", "Paris", "Oslo"][n % 3 : n % 3 + 1]
        ]
        prompts = ["Weather in Paris?", f"Weather in Oslo? my key is {SECRET}", "Weather in Atlantis?", *others]
        _agent_runs(app, prompts)  # 20 conversations
        wait_for(lambda: app.status()["traces_ready"] == 20)
        status = app.status()
        acknowledged = status["spans_acknowledged"]
    assert isinstance(acknowledged, int) and acknowledged >= 20 * 3  # agent run, model calls, tool call per run
    assert status["traces_assembled"] == 20 and status["traces_rejected"] == 0
    assert inbox_spans(store) == acknowledged
    for path in [*inbox_files(store), store / "serve" / "traces.jsonl", store / "serve" / "ready.jsonl"]:
        assert SECRET.encode() not in path.read_bytes(), path
    ready = [json.loads(line) for line in (store / "serve" / "ready.jsonl").read_text().splitlines()]
    traces = [t for record in ready for t in record["traces"]]
    redacted = [p.replace(SECRET, "[REDACTED:openai_key]") for p in prompts]
    assert sorted(t["question"] for t in traces) == sorted(redacted)
    atlantis = next(t for t in traces if "Atlantis" in t["question"])
    assert "unknown city Atlantis" in json.dumps(atlantis["messages"])  # the tool's error, from its span
    assert any(m.get("tool_calls") for m in atlantis["messages"])


def test_a_restart_keeps_the_acknowledged_count_and_assembles_nothing_twice(tmp_path: Path) -> None:
    store = tmp_path / "store"
    with running(store, feedback_wait=0) as app:
        _agent_runs(app, ["Weather in Lima?"])
        wait_for(lambda: app.status()["traces_ready"] == 1)
        before = app.status()["spans_acknowledged"]
    with open(inbox_files(store)[-1], "ab") as torn:  # a record a crash cut short: never acknowledged
        torn.write(b'{"spans":7,"encoding":"json","bytes":900}\n{"resourceSp')
    with running(store, feedback_wait=0) as app:
        app.assembler.step()
        assert app.status()["spans_acknowledged"] == before
        assert app.status()["traces_assembled"] == 1
        _agent_runs(app, ["Weather in Paris?"])
        wait_for(lambda: app.status()["traces_ready"] == 2)
    ids = [json.loads(line)["otel_trace_id"] for line in (store / "serve" / "traces.jsonl").read_text().splitlines()]
    assert len(ids) == len(set(ids)) == 2


def test_json_gzip_protobuf_and_the_otlp_error_answers(tmp_path: Path) -> None:
    root = [{"spanId": "00f067aa0ba902b7", "name": "invoke_agent x"}]
    with running(tmp_path / "store", max_body=4096, max_backlog=5, feedback_wait=3600) as app:
        traces = url(app, "/v1/traces")
        body = gzip.compress(otlp_json(TRACE, root))
        status, _, answer = request(traces, body, {"Content-Type": "application/json", "Content-Encoding": "gzip"})
        assert (status, json.loads(answer)) == (200, {})
        # protobuf in, protobuf out: an empty ExportTraceServiceResponse (no partial success)
        status, headers, answer = request(
            traces, ExportTraceServiceRequest().SerializeToString(), {"Content-Type": "application/x-protobuf"}
        )
        assert status == 200 and headers["Content-Type"] == "application/x-protobuf"
        assert not ExportTraceServiceResponse.FromString(answer).HasField("partial_success")
        # malformed: 400 with the reason, as a google.rpc.Status in the request's encoding
        status, _, answer = request(traces, b"\x0a\xff\xff", {"Content-Type": "application/x-protobuf"})
        assert status == 400 and "protobuf" in Status.FromString(answer).message
        status, _, answer = request(traces, b'{"resourceSpans": [', {"Content-Type": "application/json"})
        assert status == 400 and "malformed JSON" in json.loads(answer)["message"]
        status, _, answer = request(traces, b"{}", {"Content-Type": "text/plain"})
        assert status == 400 and "Content-Type" in json.loads(answer)["message"]
        # one span with a bad id among good ones: partial success names it
        mixed = otlp_json(TRACE, [{"spanId": "zz", "name": "bad"}, {"spanId": "00f067aa0ba902b8", "name": "ok"}])
        status, _, answer = request(traces, mixed, {"Content-Type": "application/json"})
        assert status == 200
        partial = json.loads(answer)["partialSuccess"]
        assert partial["rejectedSpans"] == "1" and "spanId" in partial["errorMessage"]
        # over the limit: 413, also when only the decompressed body is
        assert request(traces, b"x" * 5000, {"Content-Type": "application/json"})[0] == 413
        bomb = gzip.compress(b" " * 100_000)
        assert request(traces, bomb, {"Content-Type": "application/json", "Content-Encoding": "gzip"})[0] == 413
        # a full inbox: 429 with Retry-After (2 spans acknowledged, the limit is 5, the trace waits for its root)
        many = otlp_json("1" * 32, [{"spanId": f"{i:016x}", "name": "s", "parentSpanId": "f" * 16} for i in range(4)])
        status, headers, _ = request(traces, many, {"Content-Type": "application/json"})
        assert status == 429 and int(headers["Retry-After"]) > 0
        assert app.status()["spans_acknowledged"] == 2


def test_secrets_never_reach_the_inbox(tmp_path: Path) -> None:
    span = {"spanId": "00f067aa0ba902b7", "name": "invoke_agent x", "attributes": [string_attr("key", SECRET)]}
    store = tmp_path / "store"
    with running(store) as app:
        assert request(url(app, "/v1/traces"), otlp_json(TRACE, [span]), {"Content-Type": "application/json"})[0] == 200
    inbox = b"".join(path.read_bytes() for path in inbox_files(store)).decode()
    assert SECRET not in inbox and "[REDACTED:" in inbox and TRACE in inbox
