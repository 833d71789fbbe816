"""What the scale and memory benchmarks print and read alike: their table, the load average, this process's RSS."""

from __future__ import annotations


def rss_mb() -> float:
    """Current resident set size of this process."""
    with open("/proc/self/statm", encoding="ascii") as f:
        return int(f.read().split()[1]) * 4096 / 1e6


def print_table(rows: list[dict[str, str]]) -> None:
    """Rows of strings as a table: one column per key seen in any row, `-` where a row has none."""
    keys = list(dict.fromkeys(k for r in rows for k in r))
    widths = {k: max(len(k), *(len(r.get(k, "-")) for r in rows)) for k in keys}
    print(" | ".join(k.ljust(widths[k]) for k in keys))
    print("-+-".join("-" * widths[k] for k in keys))
    for r in rows:
        print(" | ".join(r.get(k, "-").ljust(widths[k]) for k in keys))


def load_average() -> str:
    """The machine's load average over 1, 5 and 15 minutes, as `/proc/loadavg` gives it."""
    with open("/proc/loadavg", encoding="ascii") as f:
        return " ".join(f.read().split()[:3])
