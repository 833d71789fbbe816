"""Redaction on the 120 real tau-bench trajectories: what it finds (false positives), what survives, what it costs.

    .venv/bin/python benchmarks/redaction.py [--data-dir ../shared/data/tau-bench/airline] [--repeat 5]

Runs the `redact` step's redactor over every trace (as `RedactStep` does: one session per trace, ids kept) and
prints three tables: findings per kind (tau-bench users have e-mail addresses: those are personal data and are
meant to be found; anything else is a false positive), the benchmark's own identifiers that must survive
(reservation ids, user ids, flight numbers, airport codes, amounts, dates) counted before and after, and the cost
per trace (median and p90 over the traces of each trace's fastest of `--repeat` runs). With detect-secrets
installed (`pip install detect-secrets==1.5.0`) it is timed on the same traces for comparison.
"""

from __future__ import annotations

import argparse
import json
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

from ace.redaction import Redactor, count_kinds
from ace.steps.redact import TRACE_ID_FIELDS
from ace_eval.collection.importers import import_tau_bench

DEFAULT_DIR = Path(__file__).resolve().parents[2] / "shared" / "data" / "tau-bench" / "airline"
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", type=Path, default=DEFAULT_DIR)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    traces: list[Mapping[str, Any]] = [t.model_dump() for t in import_tau_bench(args.data_dir / TRAJECTORIES).traces]
    redactor = Redactor()

    kinds: Counter[str] = Counter()
    traces_with: Counter[str] = Counter()
    examples: dict[str, list[str]] = {}
    before: Counter[str] = Counter()
    after: Counter[str] = Counter()
    patterns = identifiers(args.data_dir)
    times: list[float] = []
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
            "ace.redaction (RedactStep)",
            f"{statistics.median(times) * 1e3:.2f}",
            f"{percentile(times, 0.9) * 1e3:.2f}",
            f"{max(times) * 1e3:.2f}",
            f"{sum(times) / (sum(sizes) / 1000) * 1e6:.1f}",
        )
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


if __name__ == "__main__":
    main()
