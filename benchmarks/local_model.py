"""The embedded model on the demo's reflector settings: tokens and time per request, and the prompt-prefix cache.

    .venv/bin/python benchmarks/local_model.py [--traces N]

Reflects on the first N traces of examples/demo-collection with the demo's `LocalModel` and prints one row per
request: prompt tokens, how many of them came from llama.cpp's KV cache (the static instructions shared with the
previous request), output tokens, wall and CPU seconds. CPU seconds (this process, all threads) are what an idle
core would take; on a shared machine the wall time is longer. Needs the `local` extra and the weights
(`python3 dev.py demo` installs both).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from pathlib import Path
from statistics import median
from typing import Any

from ace import Skillbook
from ace.llm import LocalModel
from ace.reflector.simple import SimpleReflector
from ace_eval.commands.demo import demo_injections

DEMO = Path(__file__).resolve().parents[1] / "examples" / "demo-collection" / "traces.jsonl"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--traces", type=int, default=3)
    args = parser.parse_args()
    injections = demo_injections()
    model = injections.models["reflector"]
    assert isinstance(model, LocalModel)
    started = time.perf_counter(), time.process_time()
    model.load()
    print(f"load: {time.perf_counter() - started[0]:.1f} s wall, {time.process_time() - started[1]:.1f} s CPU")
    reflector = SimpleReflector(model, **injections.reflector_options)
    traces = [json.loads(line) for line in DEMO.read_text(encoding="utf-8").splitlines()][: args.traces]
    rows: list[dict[str, Any]] = []
    print(f"{'trace':<34} {'prompt':>6} {'cached':>6} {'output':>6} {'wall s':>7} {'cpu s':>6}")
    for trace in traces:
        wall, cpu = time.perf_counter(), time.process_time()
        result = asyncio.run(reflector.reflect(trace, Skillbook()))
        row = {
            "trace": str(trace["trace_id"]),
            "prompt": result.usage.input_tokens,
            "cached": result.usage.cache_read_tokens,
            "output": result.usage.output_tokens,
            "wall": time.perf_counter() - wall,
            "cpu": time.process_time() - cpu,
        }
        rows.append(row)
        print(
            f"{row['trace']:<34} {row['prompt']:>6} {row['cached']:>6} {row['output']:>6} "
            f"{row['wall']:>7.1f} {row['cpu']:>6.1f}"
        )
    if rows:
        hit = sum(r["cached"] for r in rows) / max(1, sum(r["prompt"] for r in rows))
        print(
            f"median: {median(r['wall'] for r in rows):.1f} s wall, {median(r['cpu'] for r in rows):.1f} s CPU per "
            f"reflection; {hit:.0%} of prompt tokens from the cache"
        )


if __name__ == "__main__":
    main()
