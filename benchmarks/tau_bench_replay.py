"""Speed of the tau-bench airline replay: database copies, hashing, gold replays, 120 recorded runs.

    .venv/bin/python benchmarks/tau_bench_replay.py [--data-dir ../shared/data/tau-bench/airline] [--repeat 5]

Compares the upstream way (deep copy of the database per episode, `sha256(str(to_hashable(data)))` per
hash) with ours (copy-on-write database, entity text cached for untouched entities). Wall-clock medians.
"""

from __future__ import annotations

import argparse
import copy
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _timing import median_time

from ace_eval.benchmarks.tau_bench.check import GoldHashes, check_trajectories, load_trajectories
from ace_eval.benchmarks.tau_bench.data import load_airline_data
from ace_eval.benchmarks.tau_bench.db import AirlineDB
from ace_eval.benchmarks.tau_bench.hashing import data_hash, hash_data

DEFAULT_DIR = Path(__file__).resolve().parents[2] / "shared" / "data" / "tau-bench" / "airline"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", type=Path, default=DEFAULT_DIR)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    data = load_airline_data(args.data_dir)
    tables = {"flights": data.flights, "reservations": data.reservations, "users": data.users}
    runs = load_trajectories(args.data_dir / "trajectories-gpt-4o-tasks-0-29.json")
    data_hash(AirlineDB(data))  # fill the entity cache once, as the first episode does

    rows = [
        ("fresh database: deep copy (upstream)", median_time(lambda: copy.deepcopy(tables), args.repeat)),
        ("fresh database: copy-on-write (ours)", median_time(lambda: AirlineDB(data), args.repeat)),
        ("hash: sha256(str(to_hashable)) (upstream)", median_time(lambda: hash_data(tables), args.repeat)),
        ("hash: cached entity text (ours)", median_time(lambda: data_hash(AirlineDB(data)), args.repeat)),
        ("gold replay of all 50 tasks", median_time(lambda: GoldHashes(data).all(), args.repeat)),
        (f"re-execute + score {len(runs)} runs", median_time(lambda: check_trajectories(data, runs), args.repeat)),
    ]
    width = max(len(name) for name, _ in rows)
    print(f"{'step':<{width}}  {'median':>10}")
    for name, seconds in rows:
        print(f"{name:<{width}}  {seconds * 1000:>8.2f}ms")


if __name__ == "__main__":
    main()
