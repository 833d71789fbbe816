"""`execute_code` latency: one `run_code` of a tiny snippet, end to end (spawn, isolate, hook, run, report).

    .venv/bin/python benchmarks/sandbox_latency.py [--repeat 20] [--baseline OTHER/sandbox.py]

Three snippets: `1 + 1` (the floor), a typical analysis (json + collections over the demo trace), and one that
imports `statistics` and `datetime` after the audit hook is installed (each `.pyc` read is checked against the
file, see `_policy.trusted_bytecode`). `--baseline` also times another copy of `sandbox.py` (with its
`_bootstrap.py` beside it, e.g. an older version's), interleaved run by run with this one, and prints the
ratio. Runs are sequential; the machine may be shared: run twice and read the lower numbers.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "examples" / "demo-collection" / "traces.jsonl"
SNIPPETS = {
    "1 + 1": "1 + 1",
    "json + Counter over the trace": (
        "import json\nfrom collections import Counter\n"
        "Counter(c['function']['name'] for m in messages if m['role'] == 'assistant' "
        "for c in m.get('tool_calls') or [])"
    ),
    "import statistics, datetime": "import statistics, datetime\nstatistics.mean([1, 2, 3])",
}


def load(path: Path, name: str) -> Any:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--baseline", type=Path, default=None)
    args = parser.parse_args()
    current = load(ROOT / "ace" / "sandbox" / "runner.py", "sandbox_current")
    baseline = load(args.baseline, "sandbox_baseline") if args.baseline else None
    trace = json.loads(DEMO.read_text(encoding="utf-8").splitlines()[1])
    print(f"{args.repeat} runs each, interleaved; baseline: {args.baseline or '-'}")
    print(f"{'snippet':<32} {'median ms':>10} {'p90 ms':>8} {'baseline ms':>12} {'ratio':>6}  isolation")
    for name, code in SNIPPETS.items():
        times: dict[str, list[float]] = {"current": [], "baseline": []}
        result = None
        for _ in range(args.repeat):
            for label, sandbox in (("current", current), ("baseline", baseline)):
                if sandbox is None:
                    continue
                started = time.perf_counter()
                result = asyncio.run(sandbox.run_code(code, trace, limits=sandbox.SandboxLimits(timeout_s=10.0)))
                times[label].append((time.perf_counter() - started) * 1000)
                assert result.ok, result.as_text()
                if label == "current":
                    isolation = result.isolation
        median = statistics.median(times["current"])
        p90 = statistics.quantiles(times["current"], n=10)[-1]
        base = f"{statistics.median(times['baseline']):>12.1f}" if baseline else f"{'-':>12}"
        ratio = f"{median / statistics.median(times['baseline']):>6.2f}" if baseline else f"{'-':>6}"
        applied = f"uid {isolation.uid}, netns {isolation.network_namespace}, no_new_privs {isolation.no_new_privs}"
        applied += f", landlock ABI {getattr(isolation, 'landlock_abi', 0)}"
        print(f"{name:<32} {median:>10.1f} {p90:>8.1f} {base} {ratio}  {applied}")


if __name__ == "__main__":
    main()
