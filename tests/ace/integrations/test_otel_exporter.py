"""`ace.integrations.otel`: spans appended to a file as OTLP JSON lines, importable with `--format otel`, secrets
redacted before they are written, ids in hex, timestamps kept, whole lines under concurrent exports."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import logfire
from _otel_agent import weather_agent
from click.testing import CliRunner
from opentelemetry.sdk.trace import TracerProvider

from ace.integrations.otel import OtlpJsonLinesExporter, span_file_processor
from ace_eval.cli import main
from ace_eval.collection import read_collection

KEY = "sk-proj-" + "A1b2C3d4E5f6G7h8J9k0L1m2N3p4Q5r6S7t8"


def _run(path: Path, prompt: str, **kwargs: object) -> None:
    instance = logfire.configure(
        local=True,
        send_to_logfire=False,
        console=False,
        additional_span_processors=[span_file_processor(path, **kwargs)],  # type: ignore[arg-type]
        scrubbing=False,
    )
    agent = weather_agent()
    instance.instrument_pydantic_ai(agent)
    agent.run_sync(prompt)
    instance.force_flush()


def test_logfire_spans_written_by_the_exporter_import_with_format_otel(tmp_path: Path) -> None:
    spans = tmp_path / "logs" / "spans.jsonl"  # the folder is created
    _run(spans, f"Weather in Paris? My key is {KEY}")
    lines = spans.read_text(encoding="utf-8").splitlines()
    documents = [json.loads(line) for line in lines]
    raw = [s for d in documents for r in d["resourceSpans"] for sc in r["scopeSpans"] for s in sc["spans"]]
    assert {s["name"] for s in raw} >= {
        "invoke_agent weather",
        "chat function:weather_model:",
        "execute_tool get_weather",
    }
    assert all(len(s["traceId"]) == 32 and len(s["spanId"]) == 16 for s in raw)  # hex, as OTLP JSON says
    assert all(s["startTimeUnixNano"].isdigit() and len(s["startTimeUnixNano"]) == 19 for s in raw)
    assert KEY not in spans.read_text(encoding="utf-8") and "[REDACTED:" in spans.read_text(encoding="utf-8")

    result = CliRunner().invoke(main, ["collection", "import", str(spans), "--out", str(tmp_path / "c")])
    assert result.exit_code == 0 and "(otel)" in result.output, result.output
    (trace,) = read_collection(tmp_path / "c")[1]
    assert trace.question.startswith("Weather in Paris? My key is [REDACTED:")
    assert [m["role"] for m in trace.messages] == ["system", "user", "assistant", "tool", "assistant"]


def test_without_a_redactor_the_spans_are_written_as_they_are(tmp_path: Path) -> None:
    spans = tmp_path / "raw.jsonl"
    _run(spans, f"Weather in Oslo? {KEY}", redactor=None)
    assert KEY in spans.read_text(encoding="utf-8")


def test_concurrent_exports_write_whole_lines(tmp_path: Path) -> None:
    path = tmp_path / "spans.jsonl"
    exporter = OtlpJsonLinesExporter(path, redactor=None)
    provider = TracerProvider()
    tracer = provider.get_tracer("t")

    def work(n: int) -> None:
        for i in range(25):
            with tracer.start_as_current_span(f"s{n}-{i}") as span:
                span.set_attribute("payload", "x" * 5000)
            exporter.export([span])  # type: ignore[list-item]

    threads = [threading.Thread(target=work, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    lines = path.read_text(encoding="utf-8").splitlines()
    assert len(lines) == 100 and all(json.loads(line)["resourceSpans"] for line in lines)
    exporter.shutdown()
    assert exporter.export([]).name == "FAILURE" and exporter.force_flush()
