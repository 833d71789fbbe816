"""`execute_code` latency: one `run_code` of a tiny snippet, end to end (spawn, isolate, hook, run, report).

    .venv/bin/python benchmarks/sandbox_latency.py [--repeat 20] [--sandbox PATH_TO_sandbox.py]

Three snippets: `1 + 1` (the floor), a typical analysis (json + collections over the demo trace), and one that
imports `statistics` and `datetime` after the audit hook is installed (each `.pyc` read is checked against the
file, see `_sandbox_policy.trusted_bytecode`). `--sandbox` times another copy of `sandbox.py` (with its
`_bootstrap.py` beside it), e.g. main's, for a before/after table. Runs are sequential; the machine may be
shared: run twice and read the lower numbers.
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


def load(path: Path) -> Any:
    spec = importlib.util.spec_from_file_location("sandbox_under_test", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--sandbox", type=Path, default=ROOT / "ace" / "implementations" / "rr" / "sandbox.py")
    args = parser.parse_args()
    sandbox = load(args.sandbox)
    trace = json.loads(DEMO.read_text(encoding="utf-8").splitlines()[1])
    limits = sandbox.SandboxLimits(timeout_s=10.0)
    print(f"sandbox: {args.sandbox}  ({args.repeat} runs each)")
    print(f"{'snippet':<32} {'median ms':>10} {'p90 ms':>8} {'min ms':>8}  isolation")
    for name, code in SNIPPETS.items():
        times = []
        for _ in range(args.repeat):
            started = time.perf_counter()
            result = asyncio.run(sandbox.run_code(code, trace, limits=limits))
            times.append((time.perf_counter() - started) * 1000)
            assert result.ok, result.as_text()
        isolation = getattr(result, "isolation", None)
        applied = "n/a" if isolation is None else (
            f"uid {isolation.uid}, netns {isolation.network_namespace}, no_new_privs {isolation.no_new_privs}"
        )  # fmt: skip
        p90 = statistics.quantiles(times, n=10)[-1]
        print(f"{name:<32} {statistics.median(times):>10.1f} {p90:>8.1f} {min(times):>8.1f}  {applied}")


if __name__ == "__main__":
    main()
