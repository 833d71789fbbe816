"""`ace-eval serve` intake speed: spans acknowledged per second and acknowledgement latency, on 127.0.0.1.

Run: `.venv/bin/python benchmarks/serve_load.py [--spans 20000] [--batch 100] [--exporters 1 8] [--smoke]`.
`ace-eval serve` runs in its own process (as in production); each exporter is a thread keeping one HTTP/1.1
connection and sending OTLP protobuf requests of `--batch` GenAI-like spans (an agent run span with its messages,
model calls, tool calls: ~1 KB each), one request after the other, as OpenTelemetry's BatchSpanProcessor does.
A request is acknowledged when the server answered 200, i.e. after redaction and the fsync of the inbox. Printed
per exporter count: spans/s acknowledged, p50 / p99 latency of a request, and the server's VmHWM.
The baseline, measured in the same run, is the floor of one fsynced append of the same bytes per request.
Learning does not run during the measurement (`--learn-every 0`): `serve` assembles traces, which it does.
"""

from __future__ import annotations

import argparse
import http.client
import os
import re
import select
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _report import load_average, print_table
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans, ScopeSpans, Span

MESSAGES = (
    '[{"role":"user","parts":[{"type":"text","content":"Change my flight ABC123 to tomorrow morning, same class."}]},'
    '{"role":"assistant","parts":[{"type":"tool_call","id":"c1","name":"get_reservation","arguments":'
    '{"reservation_id":"ABC123"}}]},{"role":"user","parts":[{"type":"tool_call_response","id":"c1","result":'
    '"{\\"flights\\":[{\\"flight\\":\\"HAT001\\",\\"date\\":\\"2024-05-01\\"}],\\"cabin\\":\\"economy\\"}"}]}]'
)


def _body(batch: int, seed: int) -> bytes:
    """`batch` spans in traces of 5 (an agent run, two model calls, two tool calls), protobuf-encoded."""
    spans = []
    for i in range(batch):
        trace = (seed * 1_000_003 + i // 5).to_bytes(16, "big")
        root = (i // 5 + 1).to_bytes(8, "big")
        kind = i % 5
        attributes = [KeyValue(key="gen_ai.operation.name", value=AnyValue(string_value="invoke_agent"))]
        if kind == 0:
            attributes.append(KeyValue(key="pydantic_ai.all_messages", value=AnyValue(string_value=MESSAGES)))
        else:
            attributes.append(KeyValue(key="gen_ai.tool.name", value=AnyValue(string_value=f"tool_{kind}")))
            attributes.append(KeyValue(key="gen_ai.tool.call.result", value=AnyValue(string_value=MESSAGES[:300])))
        spans.append(
            Span(
                trace_id=trace,
                span_id=(i + 1_000_000).to_bytes(8, "big") if kind else root,
                parent_span_id=root if kind else b"",
                name="invoke_agent airline" if kind == 0 else f"running tool {kind}",
                start_time_unix_nano=1_700_000_000_000_000_000 + i,
                end_time_unix_nano=1_700_000_001_000_000_000 + i,
                attributes=attributes,
            )
        )
    request = ExportTraceServiceRequest(resource_spans=[ResourceSpans(scope_spans=[ScopeSpans(spans=spans)])])
    return bytes(request.SerializeToString())


def _start(store: Path) -> tuple[subprocess.Popen[bytes], int]:
    command = [sys.executable, "-c", "from ace_eval.cli import main; main()", "serve", "--store", str(store)]
    process = subprocess.Popen(
        [*command, "--port", "0", "--feedback-wait", "0", "--learn-every", "0"], stderr=subprocess.PIPE
    )
    assert process.stderr is not None
    seen, deadline = b"", time.monotonic() + 120
    while time.monotonic() < deadline:
        if select.select([process.stderr], [], [], 1.0)[0]:
            seen += os.read(process.stderr.fileno(), 4096)
            found = re.search(rb"listening on http://127\.0\.0\.1:(\d+)", seen)
            if found:
                return process, int(found.group(1))
        if process.poll() is not None:
            break
    process.kill()
    raise SystemExit(f"serve did not start: {seen.decode(errors='replace')}")


def _exporter(port: int, bodies: list[bytes], latencies: list[float], failures: list[int]) -> None:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    headers = {"Content-Type": "application/x-protobuf"}
    for body in bodies:
        started = time.perf_counter()
        connection.request("POST", "/v1/traces", body, headers)
        response = connection.getresponse()
        response.read()
        if response.status != 200:
            failures.append(response.status)
        latencies.append(time.perf_counter() - started)
    connection.close()


def _vm_hwm_mb(pid: int) -> float:
    text = Path(f"/proc/{pid}/status").read_text()
    found = re.search(r"VmHWM:\s+(\d+) kB", text)
    return int(found.group(1)) / 1024 if found else float("nan")


def _floor(bodies: list[bytes], folder: Path) -> float:
    """Seconds per request of an fsynced append of the same bytes: the durability floor."""
    with (folder / "floor.bin").open("ab") as out:
        started = time.perf_counter()
        for body in bodies:
            out.write(body)
            out.flush()
            os.fsync(out.fileno())
    return (time.perf_counter() - started) / len(bodies)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--spans", type=int, default=20_000, help="Spans each exporter count sends in all.")
    parser.add_argument("--batch", type=int, default=100, help="Spans per request.")
    parser.add_argument("--exporters", type=int, nargs="+", default=[1, 8])
    parser.add_argument("--smoke", action="store_true", help="A few hundred spans: checks the script works.")
    args = parser.parse_args()
    if args.smoke:
        args.spans, args.batch, args.exporters = 400, 50, [1, 2]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for count in args.exporters:
            requests = max(1, args.spans // args.batch // count)
            work = [[_body(args.batch, seed=w * 100_000 + r) for r in range(requests)] for w in range(count)]
            process, port = _start(Path(tmp) / f"store-{count}")
            latencies: list[float] = []
            failures: list[int] = []
            threads = [threading.Thread(target=_exporter, args=(port, w, latencies, failures)) for w in work]
            started = time.perf_counter()
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join(timeout=600)
            elapsed = time.perf_counter() - started
            memory = _vm_hwm_mb(process.pid)
            process.send_signal(signal.SIGTERM)
            code = process.wait(timeout=120)
            floor = _floor(work[0], Path(tmp))
            ordered = sorted(latencies)
            sent = requests * count * args.batch
            rows.append(
                {
                    "exporters": str(count),
                    "spans": str(sent),
                    "spans/s acked": f"{sent / elapsed:,.0f}",
                    "p50 ms": f"{statistics.median(ordered) * 1000:.1f}",
                    "p99 ms": f"{ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))] * 1000:.1f}",
                    "floor ms (fsync append)": f"{floor * 1000:.2f}",
                    "p50 / floor": f"{statistics.median(ordered) / floor:.1f}x",
                    "server VmHWM MB": f"{memory:.0f}",
                    "refused": str(len(failures)),
                    "exit": str(code),
                }
            )
            if failures or code != 0:
                print_table(rows)
                raise SystemExit(f"{len(failures)} requests refused ({sorted(set(failures))}), serve exited {code}")
    print(f"load average: {load_average()}; batch {args.batch} spans per request")
    print_table(rows)


if __name__ == "__main__":
    main()
