"""Skillbook speed at scale: add, save, load, `as_prompt` and file sizes for 1,000 / 5,000 / 50,000 skills.

Run: `.venv/bin/python benchmarks/skillbook_ops.py [--sizes 1000 5000 50000] [--repeat 5] [--dim 384] [--smoke]`.
Each skill has 384-d float32 embeddings, two keywords, an ADD occurrence, and every fifth a TAG as well,
so the files look like a trained skillbook. Times are medians over `--repeat` runs (one run at 50,000).
Targets at 5,000 skills: save <= 0.3 s, load <= 0.2 s (a widely used implementation of the same design:
save 1.0-1.3 s, load 0.7-0.9 s).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np
from _timing import median_time

from ace import InsightSource, Skillbook
from ace.core.storage import sidecar_path

TARGETS = {5000: {"save": 0.3, "load": 0.2}}
REFERENCE = {5000: {"save": 1.15, "load": 0.8}}  # midpoints of the ranges measured for the other implementation


def build(n: int, dim: int) -> tuple[Skillbook, float]:
    rng = np.random.default_rng(0)
    vectors = rng.standard_normal((n, dim)).astype(np.float32)
    sb = Skillbook()
    sb.embedding_model = "bench-model"
    start = time.perf_counter()
    for i in range(n):
        source = InsightSource(
            trace_uid=f"tau-bench-airline:task-{i % 50}-trial-{i % 4}",
            source_system="tau-bench-airline",
            trace_id=f"task-{i % 50}-trial-{i % 4}",
            sample_question="I want to change my flight to the next day and keep my cabin class.",
            epoch=i % 3,
            error_identification="The agent changed the flight without confirming the fare difference.",
            learning_text="Confirm price differences and payment method before calling update tools.",
        )
        section = "context" if i % 4 else "harness"
        skill = sb.add_skill(
            section,
            f"Issue {i}: in tau-airline's update_reservation_flights the agent skipped confirmation step {i}.",
            [f"domain_{i % 13}", f"api_{i % 29}"],
            f"Before calling the update tool, list the changes and the price, and wait for a yes ({i}).",
            insight_source=source,
        )
        if i % 5 == 0:
            sb.tag_skill(skill.id, 1, insight_source=source)
    add_time = time.perf_counter() - start
    for k, skill in enumerate(sb.skills(include_inactive=True)):
        sb.set_embedding(skill.id, vectors[k])
    return sb, add_time


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 5000, 50000])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--smoke", action="store_true", help="200 skills, one run: checks that it runs")
    args = parser.parse_args()
    if args.smoke:
        args.sizes, args.repeat = [200], 1

    header = (
        f"{'skills':>7} | {'add/op µs':>9} | {'save s':>7} | {'load s':>7} | {'as_prompt s':>11} | "
        f"{'json MB':>7} | {'npz MB':>7}"
    )
    print(header)
    print("-" * len(header))
    notes: list[str] = []
    for n in args.sizes:
        sb, add_time = build(n, args.dim)
        repeat = 1 if n > 10_000 else args.repeat
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "skillbook.json"
            save = median_time(lambda: sb.save_to_file(path), repeat)  # noqa: B023
            load = median_time(lambda: Skillbook.load_from_file(path), repeat)  # noqa: B023
            loaded = Skillbook.load_from_file(path)
            assert loaded.stats()["embedded"] == n, "every vector must survive the round trip"
            json_mb = path.stat().st_size / 1e6
            npz_mb = sidecar_path(path).stat().st_size / 1e6
        prompt = median_time(sb.as_prompt, repeat)
        print(
            f"{n:>7} | {add_time / n * 1e6:>9.1f} | {save:>7.3f} | {load:>7.3f} | {prompt:>11.4f} | "
            f"{json_mb:>7.1f} | {npz_mb:>7.1f}"
        )
        if n in TARGETS:
            for what, measured in (("save", save), ("load", load)):
                target, ref = TARGETS[n][what], REFERENCE[n][what]
                verdict = "meets" if measured <= target else "MISSES"
                notes.append(
                    f"{what} at {n}: {measured:.3f} s {verdict} the target {target} s; "
                    f"{ref / measured:.1f}x faster than the reference implementation (~{ref} s)"
                )
    print()
    for note in notes:
        print(note)


if __name__ == "__main__":
    main()
