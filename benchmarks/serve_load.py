"""`ace-eval serve` intake speed: spans acknowledged per second and acknowledgement latency, on 127.0.0.1.

Run: `.venv/bin/python benchmarks/serve_load.py [--seconds 20] [--rate 2000] [--batch 512] [--exporters 1 8]
[--backlog 100000] [--smoke]`. `ace-eval serve` runs in its own process (as in production); each exporter is a
thread keeping one HTTP/1.1 connection and sending OTLP protobuf requests of `--batch` GenAI-like spans (traces of
an agent run span with its messages, two model calls, two tool calls: ~600 bytes a span, every text different),
one request after the other, as OpenTelemetry's BatchSpanProcessor does. 512 is that processor's
`max_export_batch_size`: at 2,000 spans/s its queue reaches 512 every 0.26 s, before the 5 s schedule, so every
export carries 512 spans. A request is acknowledged when the server answered 200, i.e. after redaction and the fsync
of the inbox.

Scenarios, per exporter count: `paced` offers `--rate` spans/s in all (the issue's target: 2,000 spans/s acknowledged
with p99 under 50 ms, one exporter), `max` sends as fast as the server answers (its capacity). Printed: spans/s
acknowledged, p50 / p99 latency of a request, the ratios to the target, the floor measured in the same run (one
fsynced append of the same bytes per request), the server process's CPU time per request (all its threads: intake
and assembly; unlike the latencies, it hardly depends on what else the machine runs) and its learning process's
(`serve` learns in a process of its own). Then the server's VmHWM with `--backlog` spans acknowledged and waiting in
it (traces whose root span has not come yet, so the assembler holds every one), next to a fresh server's. `--learn
scripted` runs `serve --models-from _serve_models:scripted` (the tests' scripted models, `tests/_serve_models.py`;
`--learn-every 10 --publish-every 50 --no-gate`), so the learner works through batches all along, as with a hosted
model that leaves the CPU to the intake; `--learn local` learns with the embedded `local` models (the `local` extra)
on the same cores; `--learn off` measures intake and assembly alone.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _report import load_average, print_table
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans, ScopeSpans, Span

_TURN = (
    '{{"role":"user","parts":[{{"type":"text","content":"Change my flight {booking} to tomorrow morning, same class. '
    'Trace {n}."}}]}},{{"role":"assistant","parts":[{{"type":"tool_call","id":"c{n}","name":"get_reservation",'
    '"arguments":{{"reservation_id":"{booking}"}}}}]}},{{"role":"user","parts":[{{"type":"tool_call_response",'
    '"id":"c{n}","result":"{{\\"flights\\":[{{\\"flight\\":\\"HAT{n:03d}\\",\\"date\\":\\"2024-05-01\\"}}],'
    '\\"cabin\\":\\"economy\\"}}"}}]}}'
)
"""One conversation turn as pydantic-ai's `all_messages` / `gen_ai.input.messages` hold it (~450 characters)."""


def _attributes(kind: int, n: int) -> list[KeyValue]:
    """The attributes of span `kind` of trace `n`: every text differs from one trace to the next (a booking code
    and the trace number in it), as in production, so nothing is cheaper for repeating."""
    booking = f"{n * 7919 % 1_000_000:06X}"
    turn = _TURN.format(booking=booking, n=n)

    def text(key: str, value: str) -> KeyValue:
        return KeyValue(key=key, value=AnyValue(string_value=value))

    if kind == 0:  # the agent run: the whole conversation
        return [
            text("gen_ai.operation.name", "invoke_agent"),
            text("gen_ai.agent.name", "airline"),
            text("pydantic_ai.all_messages", f"[{turn},{turn}]"),
        ]
    if kind in (1, 3):  # a model call: the messages so far in, the answer out
        return [
            text("gen_ai.operation.name", "chat"),
            text("gen_ai.request.model", "gpt-4o-mini"),
            text("gen_ai.input.messages", f"[{turn}]"),
            KeyValue(key="gen_ai.usage.input_tokens", value=AnyValue(int_value=812 + n % 97)),
        ]
    return [  # a tool call
        text("gen_ai.operation.name", "execute_tool"),
        text("gen_ai.tool.name", "get_reservation"),
        text("gen_ai.tool.call.arguments", f'{{"reservation_id":"{booking}"}}'),
        text("gen_ai.tool.call.result", turn[250:]),
    ]


def _body(batch: int, seed: int, *, roots: bool = True) -> bytes:
    """`batch` spans in traces of 5 (an agent run, two model calls, two tool calls), protobuf-encoded; without
    `roots`, the agent run spans are left out (their traces wait for them)."""
    spans = []
    for i in range(batch):
        n = seed * 1_000 + i // 5
        trace = (seed * 1_000_003 + i // 5).to_bytes(16, "big")
        root = (i // 5 + 1).to_bytes(8, "big")
        kind = i % 5 if roots else i % 4 + 1
        spans.append(
            Span(
                trace_id=trace,
                span_id=(i + 1_000_000).to_bytes(8, "big") if kind else root,
                parent_span_id=root if kind else b"",
                name="invoke_agent airline"
                if kind == 0
                else ("chat gpt-4o-mini" if kind in (1, 3) else "running tool"),
                start_time_unix_nano=1_700_000_000_000_000_000 + i,
                end_time_unix_nano=1_700_000_001_000_000_000 + i,
                attributes=_attributes(kind, n),
            )
        )
    request = ExportTraceServiceRequest(resource_spans=[ResourceSpans(scope_spans=[ScopeSpans(spans=spans)])])
    return bytes(request.SerializeToString())


TESTS = Path(__file__).resolve().parents[1] / "tests"
"""Where `_serve_models` is: the tests' scripted reflector and skill manager (pydantic-ai FunctionModels, no key)."""
_CLI = ["-c", "from ace_eval.cli import main; main()", "serve"]
_LEARNING = ["--learn-every", "10", "--publish-every", "50", "--no-gate"]
LEARN = {
    "scripted": [*_CLI, "--models-from", "_serve_models:scripted", *_LEARNING],
    "local": [*_CLI, *_LEARNING],
    "off": [*_CLI, "--learn-every", "0"],
}


def _start(store: Path, learn: str = "off") -> tuple[subprocess.Popen[bytes], int]:
    """A server on a free port; its stderr (the learner's progress lines too) goes to `STORE.log`."""
    command = [sys.executable, *LEARN[learn], "--store", str(store), "--port", "0", "--feedback-wait", "0"]
    log = store.with_name(store.name + ".log")
    path = os.pathsep.join(p for p in [str(TESTS), os.environ.get("PYTHONPATH", "")] if p)
    with log.open("wb") as out:
        process = subprocess.Popen(command, stderr=out, env={**os.environ, "PYTHONPATH": path})
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        found = re.search(rb"listening on http://127\.0\.0\.1:(\d+)", log.read_bytes())
        if found:
            return process, int(found.group(1))
        if process.poll() is not None:
            break
        time.sleep(0.1)
    process.kill()
    raise SystemExit(f"serve did not start: {log.read_text(errors='replace')[-2000:]}")


def _exporter(
    port: int, bodies: list[bytes], interval: float, latencies: list[float], failures: list[int], phase: float = 0.0
) -> None:
    """Send `bodies` one after the other; with `interval`, request n leaves at (n + phase) * interval (or when n - 1
    is answered, if later), as a batch processor exporting at a steady span rate does."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    headers = {"Content-Type": "application/x-protobuf"}
    started = time.perf_counter()
    for n, body in enumerate(bodies):
        if interval:
            time.sleep(max(0.0, started + (n + phase) * interval - time.perf_counter()))
        sent = time.perf_counter()
        connection.request("POST", "/v1/traces", body, headers)
        response = connection.getresponse()
        response.read()
        if response.status != 200:
            failures.append(response.status)
        latencies.append(time.perf_counter() - sent)
    connection.close()


def _cpu_seconds(pid: int) -> float:
    """User + system CPU time the process has used so far (all its threads; 0 when it is gone)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _status(port: int) -> dict[str, object]:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    connection.request("GET", "/v1/status")
    status: dict[str, object] = json.loads(connection.getresponse().read())
    connection.close()
    return status


def _learning_pid(port: int) -> int | None:
    """The learning process's pid (`None`: not learning, or a `serve` that learns in its own process)."""
    process = _status(port).get("learning_process")
    pid = process.get("pid") if isinstance(process, dict) else None
    return pid if isinstance(pid, int) else None


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


def _stop(process: subprocess.Popen[bytes]) -> int:
    process.send_signal(signal.SIGTERM)
    return process.wait(timeout=300)


def _run(process: subprocess.Popen[bytes], port: int, work: list[list[bytes]], interval: float) -> _Measured:
    """Latencies, elapsed seconds and server CPU seconds of one scenario (a request refused stops the benchmark)."""
    learner = _learning_pid(port)
    cpu = _cpu_seconds(process.pid)
    learning_cpu = _cpu_seconds(learner) if learner is not None else 0.0
    latencies: list[float] = []
    failures: list[int] = []
    threads = [  # independent exporters: each starts at its own point of the interval
        threading.Thread(target=_exporter, args=(port, b, interval, latencies, failures, w / len(work)))
        for w, b in enumerate(work)
    ]
    started = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=900)
    elapsed = max(time.perf_counter() - started, len(work[0]) * interval)  # paced: never above the offered rate
    time.sleep(0.5)  # the assembly of the last requests counts too
    if failures:
        raise SystemExit(f"{len(failures)} requests refused ({sorted(set(failures))})")
    learned = int(str(_status(port)["traces_learned"]))
    learning = _cpu_seconds(learner) - learning_cpu if learner is not None else 0.0
    return _Measured(latencies, elapsed, _cpu_seconds(process.pid) - cpu, learning, learned)


@dataclass(frozen=True)
class _Measured:
    latencies: list[float]
    elapsed: float
    cpu: float
    learning_cpu: float
    """CPU seconds of the learning process (0 when `serve` learns in its own process, or not at all)."""
    learned: int
    """Traces learned by the server so far (since it started)."""


def _row(name: str, learn: str, count: int, spans: int, measured: _Measured, floor: float) -> dict[str, str]:
    ordered, elapsed = sorted(measured.latencies), measured.elapsed
    p50, p99 = statistics.median(ordered), ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]
    return {
        "scenario": name,
        "learning": learn,
        "exporters": str(count),
        "requests": str(len(ordered)),
        "spans/s acked": f"{spans / elapsed:,.0f}",
        "p50 ms": f"{p50 * 1000:.1f}",
        "p99 ms": f"{p99 * 1000:.1f}",
        "spans/s / 2,000": f"{spans / elapsed / TARGET_RATE:.2f}",
        "50 ms / p99": f"{TARGET_P99 / p99:.2f}",
        "fsync floor ms": f"{floor * 1000:.2f}",
        "server CPU ms / request": f"{measured.cpu / len(ordered) * 1000:.1f}",
        "learning process CPU ms / request": f"{measured.learning_cpu / len(ordered) * 1000:.1f}",
        "traces learned (server total)": str(measured.learned),
    }


def _backlog(store: Path, spans: int, batch: int, learn: str) -> dict[str, str]:
    """VmHWM of a server holding `spans` acknowledged spans of traces whose root has not come, then of a fresh one."""
    children = [_body(batch, seed=900_000 + r, roots=False) for r in range(max(1, spans // batch))]
    process, port = _start(store, learn)
    latencies: list[float] = []
    failures: list[int] = []
    _exporter(port, children, 0.0, latencies, failures)
    held = _vm_hwm_mb(process.pid)
    code = _stop(process)
    fresh, _ = _start(store.with_name(store.name + "-fresh"), learn)
    idle = _vm_hwm_mb(fresh.pid)
    _stop(fresh)
    if failures or code != 0:
        raise SystemExit(f"backlog: {len(failures)} requests refused, serve exited {code}")
    return {
        "learning": learn,
        "backlog spans": f"{len(children) * batch:,}",
        "server VmHWM MB": f"{held:.0f}",
        "fresh server VmHWM MB": f"{idle:.0f}",
        "per 1,000 backlog spans MB": f"{(held - idle) / (len(children) * batch) * 1000:.2f}",
    }


TARGET_RATE, TARGET_P99 = 2000.0, 0.050


def _scenarios(store: Path, learn: str, count: int, args: argparse.Namespace) -> list[dict[str, str]]:
    """`paced`, then `max`, with `count` exporters, on one server."""
    process, port = _start(store, learn)
    batch = args.batch
    per_exporter = max(1, round(args.seconds * args.rate / batch / count))
    paced = [[_body(batch, seed=w * 10_000 + r) for r in range(per_exporter)] for w in range(count)]
    floor = _floor(paced[0][:20], store.parent)
    measured = _run(process, port, paced, batch * count / args.rate)
    rows = [_row(f"paced {args.rate:,.0f}/s", learn, count, per_exporter * count * batch, measured, floor)]
    requests = max(1, args.spans // batch // count)
    flat = [[_body(batch, seed=500_000 + w * 10_000 + r) for r in range(requests)] for w in range(count)]
    rows.append(_row("max", learn, count, requests * count * batch, _run(process, port, flat, 0.0), floor))
    code = _stop(process)
    for row in rows:  # a server that did not exit 0 on SIGTERM fails the benchmark, after its figures are shown
        row["serve exit on SIGTERM"] = str(code)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=20.0, help="Length of each paced scenario.")
    parser.add_argument("--rate", type=float, default=TARGET_RATE, help="Spans/s the paced scenario offers in all.")
    parser.add_argument("--spans", type=int, default=40_000, help="Spans each `max` scenario sends in all.")
    parser.add_argument("--batch", type=int, default=512, help="Spans per request (the OTLP exporter's batch).")
    parser.add_argument("--exporters", type=int, nargs="+", default=[1, 8])
    parser.add_argument("--backlog", type=int, default=100_000, help="Spans held for the memory figure.")
    parser.add_argument(
        "--learn",
        nargs="+",
        choices=sorted(LEARN),
        default=["scripted", "off"],
        help="Learning while measuring: scripted models (tests/_serve_models.py), the embedded `local` ones, or none.",
    )
    parser.add_argument("--smoke", action="store_true", help="A few requests of each kind: checks the script works.")
    args = parser.parse_args()
    if args.smoke:
        args.seconds, args.rate, args.spans, args.batch, args.exporters, args.backlog = 1, 400, 400, 50, [2], 500
        args.learn = ["scripted"]
    rows = []
    print(f"load average before: {load_average()}; {args.batch} spans per request", flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        for learn in args.learn:
            for count in args.exporters:
                rows += _scenarios(Path(tmp) / f"store-{learn}-{count}", learn, count, args)
        memory = [_backlog(Path(tmp) / f"backlog-{learn}", args.backlog, args.batch, learn) for learn in args.learn]
    print(f"load average after: {load_average()}")
    print_table(rows)
    print()
    print_table(memory)
    failed = sorted({row["serve exit on SIGTERM"] for row in rows} - {"0"})
    if failed:
        raise SystemExit(f"serve exited {', '.join(failed)} on SIGTERM (expected 0)")


if __name__ == "__main__":
    main()
