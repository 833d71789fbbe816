"""Redaction on the 120 real tau-bench trajectories: what it finds (false positives), what survives, what it costs.

    .venv/bin/python benchmarks/redaction.py [--data-dir ../shared/data/tau-bench/airline] [--repeat 5]

Runs the `redact` step's redactor over every trace (as `RedactStep` does: one session per trace, ids kept) and
prints four tables: findings per kind (tau-bench users have e-mail addresses: those are personal data and are
meant to be found; anything else is a false positive), the benchmark's own identifiers that must survive
(reservation ids, user ids, flight numbers, airport codes, amounts, dates) counted before and after, the cost
per trace (median and p90 over the traces of each trace's fastest of `--repeat` runs), and the skillbook sink's
cost per mutation (`redact_commit` on add / update / tag with a provenance record). The last two time the
redactor with its prefilter and without it (every detector's gate on every text, as before the prefilter) in the
same run. With detect-secrets installed (`pip install detect-secrets==1.5.0`) it is timed on the traces too.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import random
import re
import statistics
import sys
import time
from collections import Counter
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _timing import best_time
from peer_side_by_side import words

from ace import InsightSource
from ace.core.redaction_sink import redact_commit
from ace.core.update_operation import UpdateOperation
from ace.redaction import Redactor, count_kinds
from ace.redaction._prefilter import Prefilter
from ace.steps.redact import TRACE_ID_FIELDS
from ace_eval.collection.importers import import_tau_bench

SHARED = Path(os.environ.get("ACE_SHARED_DATA", Path(__file__).resolve().parents[2] / "shared" / "data"))
DEFAULT_DIR = SHARED / "tau-bench" / "airline"
TRAJECTORIES = "trajectories-gpt-4o-tasks-0-29.json"


def identifiers(data_dir: Path) -> dict[str, re.Pattern[str]]:
    """Patterns of the benchmark's own values, built from its database where it has them."""
    reservations = json.loads((data_dir / "reservations.json").read_text(encoding="utf-8"))
    users = json.loads((data_dir / "users.json").read_text(encoding="utf-8"))
    flights = json.loads((data_dir / "flights.json").read_text(encoding="utf-8"))
    airports = {f[k] for f in flights.values() for k in ("origin", "destination")}

    def words(values: set[str]) -> re.Pattern[str]:
        return re.compile(r"\b(?:" + "|".join(sorted(map(re.escape, values), key=len, reverse=True)) + r")\b")

    return {
        "reservation id": words(set(reservations)),
        "user id": words(set(users)),
        "flight number": words(set(flights)),
        "airport code": words(airports),
        "amount": re.compile(r"\$\d[\d,]*(?:\.\d+)?|\b(?:amount|price|balance|total)\\?\"?:\s*\d+(?:\.\d+)?"),
        "date": re.compile(r"\b20\d\d-\d\d-\d\d\b"),
    }


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def table(title: str, header: tuple[str, ...], rows: list[tuple[Any, ...]]) -> None:
    widths = [max(len(str(x)) for x in column) for column in zip(header, *rows, strict=True)]
    print(f"\n{title}")
    for row in (header, *rows):
        print("  ".join(str(x).ljust(w) for x, w in zip(row, widths, strict=True)))


def detect_secrets_timer() -> Callable[[str], int] | None:
    """detect-secrets' plugins over a trace's lines, as its scanner runs them; `None` when not installed."""
    try:
        from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class
        from detect_secrets.settings import default_settings
    except ImportError:
        return None
    with default_settings():
        plugins = [cls() for cls in get_mapping_from_secret_type_to_class().values()]

    def scan(text: str) -> int:
        with default_settings():
            return sum(
                len(plugin.analyze_line(filename="trace.json", line=line, line_number=n))
                for n, line in enumerate(text.splitlines(), 1)
                for plugin in plugins
            )

    return scan


def without_prefilter() -> Redactor:
    """A redactor whose prefilter never says "clean": every text goes through every detector's gate (the full path)."""
    redactor = Redactor()
    redactor._prefilter = dataclasses.replace(Prefilter.of(()), literals=re.compile(""))  # matches every text
    return redactor


Mutation = tuple[UpdateOperation, InsightSource]


def workloads(data_dir: Path, traces: list[Mapping[str, Any]], n: int) -> dict[str, list[Mutation]]:
    """Add, update and tag requests with a provenance record, on three kinds of text: the peer side-by-side's
    (`peer_side_by_side.py`: Zipf words with digits), the airline policy's sentences (real prose with times, amounts
    and ids), and the trajectories' own messages (some with a user's e-mail, so some texts are not clean)."""
    rng = random.Random(0)
    peer = [(words(rng, rng.randint(25, 60)), words(rng, rng.randint(10, 25))) for _ in range(n)]
    policy = [line.strip("- ").strip() for line in (data_dir / "wiki.md").read_text(encoding="utf-8").splitlines()]
    policy = [line for line in policy if len(line) > 40]
    messages = [
        m["content"]
        for t in traces
        for m in t.get("messages", [])
        if isinstance(m.get("content"), str) and 40 < len(m["content"]) < 600
    ]
    sets = {
        "peer workload": peer,
        "policy prose": [(policy[i % len(policy)], policy[(i + 7) % len(policy)]) for i in range(n)],
        "trace messages": [(messages[i * 7 % len(messages)], messages[(i * 13 + 1) % len(messages)]) for i in range(n)],
    }
    ids = {k: traces[0][k] for k in ("trace_uid", "source_system", "trace_id")}  # provenance: the first task
    source = InsightSource(**ids, sample_question=traces[0]["question"], learning_text=policy[0])
    out: dict[str, list[Mutation]] = {}
    for name, pairs in sets.items():
        for kind in ("add", "update", "tag"):
            ops = [
                UpdateOperation(type="ADD", section="context", issue=a, insight=b, keywords=[f"topic_{i % 200}", "x"])
                if kind == "add"
                else UpdateOperation(type="UPDATE", skill_id=f"context-{i}", issue=a + " widened")
                if kind == "update"
                else UpdateOperation(type="TAG", skill_id=f"context-{i}", delta=1)
                for i, (a, b) in enumerate(pairs)
            ]
            out[f"{name}, {kind}"] = [(op, source) for op in ops]
    return out


def sink_costs(mutations: list[Mutation], redactors: list[Redactor | None], rounds: int) -> list[float]:
    """Median over `rounds` of the mean time per `redact_commit`, for each redactor; they alternate round by round."""
    times: list[list[float]] = [[] for _ in redactors]
    for _ in range(rounds):
        for i, redactor in enumerate(redactors):
            start = time.perf_counter()
            for op, source in mutations:
                redact_commit(redactor, op, source)
            times[i].append((time.perf_counter() - start) / len(mutations))
    return [statistics.median(t) for t in times]


def sink_table(data_dir: Path, traces: list[Mapping[str, Any]], rounds: int) -> None:
    fast, full = Redactor(), without_prefilter()
    rows = []
    for name, mutations in workloads(data_dir, traces, 300).items():
        none_s, full_s, fast_s = sink_costs(mutations, [None, full, fast], rounds)
        texts = ["\x00".join(t for t in (op.issue, op.insight, *(op.keywords or ())) if t) for op, _ in mutations]
        clean = sum(fast._prefilter.clean(t) for t in texts) / len(mutations)
        rows.append(
            (
                name,
                f"{(full_s - none_s) * 1e6:.2f}",
                f"{(fast_s - none_s) * 1e6:.2f}",
                f"{(full_s - none_s) / max(fast_s - none_s, 1e-9):.1f}x",
                f"{clean:.0%}" if not name.endswith("tag") else "-",
            )
        )
    table(
        f"Skillbook sink per mutation (redact_commit minus the same call without a redactor; medians of {rounds} "
        f"interleaved rounds of 300; load average {' / '.join(f'{x:.2f}' for x in os.getloadavg())})",
        ("texts, mutation", "full path us", "prefilter us", "full / prefilter", "texts clean"),
        rows,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", type=Path, default=DEFAULT_DIR)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=15, help="interleaved rounds of the sink table")
    parser.add_argument("--sink-only", action="store_true", help="only the skillbook sink table")
    args = parser.parse_args()
    traces: list[Mapping[str, Any]] = [t.model_dump() for t in import_tau_bench(args.data_dir / TRAJECTORIES).traces]
    if args.sink_only:
        sink_table(args.data_dir, traces, args.rounds)
        return
    redactor, full = Redactor(), without_prefilter()

    kinds: Counter[str] = Counter()
    traces_with: Counter[str] = Counter()
    examples: dict[str, list[str]] = {}
    before: Counter[str] = Counter()
    after: Counter[str] = Counter()
    patterns = identifiers(args.data_dir)
    times: list[float] = []
    full_times: list[float] = []
    sizes: list[int] = []
    for trace in traces:
        redacted, findings = redactor.redact_data(trace, skip_keys=TRACE_ID_FIELDS)
        kinds.update(count_kinds(findings))
        traces_with.update(count_kinds(findings).keys())
        for f in findings:
            examples.setdefault(f.kind, []).append(f"{f.path} {f.preview}")
        raw, clean = json.dumps(trace), json.dumps(redacted)
        for name, pattern in patterns.items():
            before[name] += len(pattern.findall(raw))
            after[name] += len(pattern.findall(clean))
        times.append(best_time(lambda t=trace: redactor.redact_data(t, skip_keys=TRACE_ID_FIELDS), args.repeat))
        full_times.append(best_time(lambda t=trace: full.redact_data(t, skip_keys=TRACE_ID_FIELDS), args.repeat))
        sizes.append(len(raw))

    table(
        f"Findings on {len(traces)} tau-bench trajectories (e-mails are real personal data; others: false positives)",
        ("kind", "values", "traces", "example (masked)"),
        [(k, n, traces_with[k], examples[k][0]) for k, n in sorted(kinds.items())] or [("(none)", 0, 0, "")],
    )
    table(
        "Benchmark values that must survive (occurrences before -> after redaction)",
        ("value", "before", "after", "survived"),
        [(n, before[n], after[n], f"{after[n] / before[n]:.1%}" if before[n] else "-") for n in patterns],
    )
    rows = [
        (
            name,
            f"{statistics.median(ts) * 1e3:.2f}",
            f"{percentile(ts, 0.9) * 1e3:.2f}",
            f"{max(ts) * 1e3:.2f}",
            f"{sum(ts) / (sum(sizes) / 1000) * 1e6:.1f}",
        )
        for name, ts in (("ace.redaction (RedactStep)", times), ("  the same without its prefilter", full_times))
    ]
    scan = detect_secrets_timer()
    if scan is not None:
        ds = []
        for trace in traces[:: max(1, len(traces) // 20)]:
            text = json.dumps(trace, indent=1)
            start = time.perf_counter()
            scan(text)
            ds.append(time.perf_counter() - start)
        rows.append(
            (
                f"detect-secrets 1.5.0, all plugins ({len(ds)} traces)",
                f"{statistics.median(ds) * 1e3:.2f}",
                f"{percentile(ds, 0.9) * 1e3:.2f}",
                f"{max(ds) * 1e3:.2f}",
                "-",
            )
        )
    table(
        f"Cost per trace (median trace {statistics.median(sizes) / 1000:.1f} kB of JSON; target < 2 ms)",
        ("redactor", "median ms", "p90 ms", "max ms", "us per kB"),
        rows,
    )
    if scan is None:
        print("\n(detect-secrets not installed: `pip install detect-secrets==1.5.0` to time it on the same traces)")
    sink_table(args.data_dir, traces, args.rounds)


if __name__ == "__main__":
    main()
