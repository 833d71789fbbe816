"""Speed of the gate's statistics: the exact sign-flip test and a whole `compare`, against plain baselines.

    .venv/bin/python benchmarks/gate_stats.py [--tasks 10 16 20] [--compare 20 100 300] [--smoke]

Rows of the first table: the exact two-sided sign-flip p-value over n tasks that differ, computed by meeting in the
middle (`ace_eval.gate.sign_flip_test`: the sums of each half's 2^(n/2) sign patterns, one half sorted, the other
looked up in it) against the plain vectorised enumeration of all 2^n x n signs measured in the same run; both
give the same p (checked). The second table: a whole `compare` of two synthetic runs of T tasks x 4 trials (pass^1..4
of both sides with bootstrap intervals, the paired bootstrap of the difference, the test), and the Monte Carlo
test alone beyond 20 tasks that differ.
"""

from __future__ import annotations

import argparse
import functools
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _report import load_average, print_table
from _timing import best_time

from ace_eval.benchmarks.scores import BenchmarkScores, TrialScore
from ace_eval.gate import compare, sign_flip_test


def plain_p(d: np.ndarray) -> float:
    """Every one of the 2^n sign patterns as a row of a matrix (in chunks), summed and counted."""
    n, observed, extreme = d.size, abs(float(d.sum())), 0
    bits = np.arange(n, dtype=np.int64)
    for start in range(0, 1 << n, 1 << 16):
        index = np.arange(start, min(1 << n, start + (1 << 16)), dtype=np.int64)
        signs = 1.0 - 2.0 * ((index[:, None] >> bits) & 1)
        extreme += int(np.count_nonzero(np.abs(signs @ d) >= observed - 1e-9))
    return extreme / (1 << n)


def _scores(rng: np.random.Generator, p: np.ndarray) -> BenchmarkScores:
    tasks = {f"t{i:04}": [TrialScore.of(float(x)) for x in rng.random(4) < p[i]] for i in range(p.size)}
    return BenchmarkScores(benchmark="synthetic", tasks=tasks, num_trials=4, seeds=[1, 2, 3, 4])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tasks", type=int, nargs="+", default=[10, 16, 20], help="tasks that differ (exact test)")
    parser.add_argument("--compare", type=int, nargs="+", default=[20, 100, 300], help="tasks of a whole compare")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--smoke", action="store_true", help="small sizes, one repeat")
    args = parser.parse_args()
    if args.smoke:
        args.tasks, args.compare, args.repeat = [8, 12], [20], 1
    rng = np.random.default_rng(0)
    rows = []
    for n in args.tasks:
        d = rng.choice([-0.75, -0.5, -0.25, 0.25, 0.5, 0.75, 1.0], size=n)
        ours, plain = sign_flip_test(d), plain_p(d)
        assert abs(ours.p_value - plain) < 1e-12, (n, ours.p_value, plain)
        fast = best_time(functools.partial(sign_flip_test, d), args.repeat)
        slow = best_time(functools.partial(plain_p, d), args.repeat)
        rows.append(
            {
                "tasks that differ": str(n),
                "patterns": f"{1 << n:,}",
                "p": f"{plain:.4g}",
                "meet in the middle ms": f"{1e3 * fast:.2f}",
                "plain enumeration ms": f"{1e3 * slow:.1f}",
                "speed-up": f"{slow / fast:.0f}x",
            }
        )
    print(f"exact sign-flip test (load {load_average()})")
    print_table(rows)
    rows = []
    for t in args.compare:
        p = rng.uniform(0.1, 0.9, size=t)
        base, cand = _scores(rng, p), _scores(rng, np.clip(p + 0.1, 0, 1))
        whole = best_time(functools.partial(compare, base, cand), args.repeat)
        result = compare(base, cand)
        differences = [row.delta for row in result.per_task]
        test = best_time(functools.partial(sign_flip_test, differences), args.repeat)
        rows.append(
            {
                "tasks": str(t),
                "differ": str(result.test.nonzero),
                "test": result.test.method,
                "compare ms": f"{1e3 * whole:.1f}",
                "of which the test ms": f"{1e3 * test:.1f}",
                "decision": result.decision,
            }
        )
    print()
    print(f"a whole compare, T tasks x 4 trials (load {load_average()})")
    print_table(rows)


if __name__ == "__main__":
    main()
