"""Skillbook store speed: what publishing, verifying and following `current` cost next to their floor.

Run: `.venv/bin/python benchmarks/store.py [--sizes 1000 10000] [--repeat 5] [--dim 384] [--smoke]`.
For each size a synthetic skillbook with 384-d vectors is saved once, then:
- publish: `SkillbookStore.publish` into a fresh store (load the source to check it, copy, fsync and hash every
  file, write version.json, rename, move `current`) against its floor measured in the same run: one load of the
  skillbook plus `shutil.copyfile` of its files (no fsync);
- verify: `SkillbookStore.verify` (SHA-256 of every file) against reading the files' bytes;
- follow: `CurrentSkillbook.get()` with `current` unchanged (what `SkillInstructions` pays per agent run) against
  one `os.stat`.
Times are the best of `--repeat` runs (on a shared machine the slower ones measure the neighbours).
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np
from _report import load_average, print_table
from _synthetic import synthetic_skillbook
from _timing import best_time

from ace import Skillbook
from ace.integrations.store_format import CurrentSkillbook
from ace_eval.store import ProducedBy, SkillbookStore

BY = ProducedBy(kind="benchmark")


def _source(folder: Path, n: int, dim: int) -> Path:
    book = synthetic_skillbook(n)
    book.embedding_model = "bench-model"
    vectors = np.random.default_rng(0).standard_normal((n, dim)).astype(np.float32)
    for k, skill in enumerate(book.skills(include_inactive=True)):
        book.set_embedding(skill.id, vectors[k])
    path = folder / "skillbook.json"
    book.save_to_file(path)
    return path


def measure(n: int, dim: int, repeat: int) -> dict[str, str]:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        source = _source(root, n, dim)
        files = [p for p in root.iterdir() if p.is_file()]
        size = sum(p.stat().st_size for p in files)
        runs = iter(range(10**6))

        def publish() -> None:
            SkillbookStore.create(root / f"st{next(runs)}").publish(source, produced_by=BY, ungated_reason="bench")

        def floor() -> None:
            Skillbook.load_from_file(source)
            target = root / f"copy{next(runs)}"
            target.mkdir()
            for p in files:
                shutil.copyfile(p, target / p.name)

        publish_s, floor_s = best_time(publish, repeat), best_time(floor, repeat)
        store = SkillbookStore.open_or_create(root / "kept")
        store.publish(source, produced_by=BY, ungated_reason="bench")
        verify_s = best_time(lambda: store.verify(), repeat)
        folder = store.version(1).folder
        read_s = best_time(lambda: [p.read_bytes() for p in folder.iterdir()], repeat)
        follower = CurrentSkillbook(store.root)
        calls = 2000
        follow_s = best_time(lambda: [follower.get() for _ in range(calls)], repeat) / calls
        stat_s = best_time(lambda: [os.stat(store.root / "current") for _ in range(calls)], repeat) / calls
    return {
        "skills": f"{n:,}",
        "files MB": f"{size / 1e6:.1f}",
        "publish s": f"{publish_s:.3f}",
        "load+copy s": f"{floor_s:.3f}",
        "publish/floor": f"{publish_s / floor_s:.2f}",
        "verify s": f"{verify_s:.3f}",
        "read s": f"{read_s:.3f}",
        "verify/read": f"{verify_s / read_s:.2f}",
        "follow µs": f"{follow_s * 1e6:.1f}",
        "stat µs": f"{stat_s * 1e6:.1f}",
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--smoke", action="store_true", help="200 skills, 2 runs: checks the script works")
    args = parser.parse_args()
    sizes, repeat = ([200], 2) if args.smoke else (args.sizes, args.repeat)
    print(f"load average: {load_average()}")
    print_table([measure(n, args.dim, repeat) for n in sizes])


if __name__ == "__main__":
    main()
