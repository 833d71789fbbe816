"""`pairs_involving` (the DeduplicateStep's per-sample search for near-duplicates of the skills a sample changed) at
5,000 / 50,000 / 100,000 skills: time per call and the RSS it adds, before and after, with ratios.

    .venv/bin/python benchmarks/dedup_scale.py [--sizes 5000 50000 100000] [--calls 30] [--repeats 1] [--smoke]

"before" is the code it replaced, kept below: per section, every skill's vector stacked and normalised (two full
copies, every mapped page read), `ids.index` per target, a k x n product. "after" is `ace.steps.deduplicate`: the
search index's neighbours of each target (exact unit rows below 50,000 skills, the HNSW graph from 50,000 with the
`ann` extra), then the cosines of those few from the skills' own vectors. Each code path runs in a fresh process
that loads the saved skillbook (with its index sidecar) and searches once, as a training run has; then `--calls`
calls of two targets each (one of them a planted near-duplicate, `_synthetic.py`). RSS added is what the process
holds after the calls minus before them (`anon` its own memory, `file` the touched pages of the mapped vectors);
peak added is the rise of its high-water mark. `recall` compares the pairs found after with those found before (the
exact answer); `same` says whether every call returned the same pairs, cosines within 1e-6. Times: median wall
clock and, in brackets, CPU (the machine is shared: quote the load average printed with them).
`--smoke` runs 400 skills with the HNSW threshold lowered to 200, in seconds.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _report import load_average, print_table
from _synthetic import ClusteredEmbedder, synthetic_queries, synthetic_skillbook
from scale import peak_mb, rss_split

from ace.core.skillbook import Skillbook
from ace.deduplication.detector import DEFAULT_THRESHOLD, SimilarPair
from ace.embeddings.base import l2_normalize
from ace.retrieval import SkillSearchIndex, search_index
from ace.retrieval._dense import ANN_MIN, faiss_module
from ace.retrieval.index import _CACHE_KEY
from ace.retrieval.top_k import retrieve_top_k
from ace.steps.deduplicate import pairs_involving


def pairs_before(book: Skillbook, skill_ids: Iterable[str], *, threshold: float, embedder: Any) -> list[SimilarPair]:
    """`pairs_involving` as it was: every section's vectors stacked and normalised per call."""
    targets = [i for i in dict.fromkeys(skill_ids) if (s := book.get_skill(i)) is not None and s.visible]
    if not targets:
        return []
    search_index(book, embedder).sync(book)
    found: dict[frozenset[str], SimilarPair] = {}
    for section in ("context", "harness"):
        with book.locked():
            pool = [s for s in book.skills(section=section) if s.embedding is not None]
            ids = [s.id for s in pool]
            matrix = np.stack([s.embedding for s in pool if s.embedding is not None]) if pool else None
        mine = [ids.index(t) for t in targets if t in ids]
        if matrix is None or not mine:
            continue
        unit = l2_normalize(matrix)
        sims = unit[mine] @ unit.T
        for row, i in enumerate(mine):
            for j in np.nonzero(sims[row] >= threshold)[0].tolist():
                key = frozenset((ids[i], ids[j]))
                if j == i or key in found or book.is_kept_pair(ids[i], ids[j]):
                    continue
                first, second = sorted(key)
                found[key] = SimilarPair(first, second, float(sims[row, j]), section)
    return sorted(found.values(), key=lambda p: (-p.similarity, p.first_id, p.second_id))


def child(path: str, targets_file: str, code: str) -> None:
    """Fresh process: load, search once, then time `pairs_involving` (`code`: before or after) over the targets."""
    book = Skillbook.load_from_file(path)
    emb = ClusteredEmbedder()
    retrieve_top_k(book, synthetic_queries(1)[0], top_k=5, embedder=emb)  # the run's first search: index loaded
    calls: list[list[str]] = json.loads(Path(targets_file).read_text())
    find = pairs_before if code == "before" else pairs_involving
    anon0, file0 = rss_split()
    peak0 = peak_mb()
    walls, cpus, found = [], [], []
    for targets in calls:
        wall, cpu = time.perf_counter(), time.thread_time()
        pairs = find(book, targets, threshold=DEFAULT_THRESHOLD, embedder=emb)
        walls.append((time.perf_counter() - wall) * 1e3)
        cpus.append((time.thread_time() - cpu) * 1e3)
        found.append([[p.first_id, p.second_id, p.similarity] for p in pairs])
    anon1, file1 = rss_split()
    out = {
        "ms": statistics.median(walls),
        "cpu_ms": statistics.median(cpus),
        "first_ms": walls[0],
        "anon": anon1 - anon0,
        "file": file1 - file0,
        "peak": peak_mb() - peak0,
        "hnsw": book.caches[_CACHE_KEY]._dense.approximate,  # type: ignore[attr-defined]
        "found": found,
    }
    print(json.dumps(out))


def targets_for(book: Skillbook, calls: int, seed: int = 5) -> list[list[str]]:
    """Two targets per call: a skill with a planted near-duplicate (same first 20 words), and any skill."""
    groups: dict[tuple[str, str], list[str]] = defaultdict(list)
    for s in book.skills():
        groups[(s.section, " ".join(s.issue.split()[:20]))].append(s.id)
    planted = [i for members in groups.values() if len(members) > 1 for i in members]
    everyone = [s.id for s in book.skills()]
    rng = random.Random(seed)
    return [[rng.choice(planted), rng.choice(everyone)] for _ in range(calls)]


def run_child(path: Path, targets: Path, code: str) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, __file__, "--child", str(path), str(targets), code], check=True, capture_output=True, text=True
    )
    if done.stderr.strip():
        print(f"{code} on {path.name}: {done.stderr.strip()[-2000:]}", file=sys.stderr)
    out: dict[str, Any] = json.loads(done.stdout)
    return out


def bench(n: int, calls: int, repeats: int, ann_min: int, folder: Path) -> dict[str, str]:
    emb = ClusteredEmbedder()
    book = synthetic_skillbook(n)
    SkillSearchIndex(emb, ann_min=None).sync(book)  # every vector computed and cached (the model's cost, not timed)
    index = SkillSearchIndex(emb, ann_min=ann_min)
    index.sync(book)
    book.caches[_CACHE_KEY] = index
    path, targets = folder / f"skillbook-{n}.json", folder / f"targets-{n}.json"
    book.save_to_file(path)
    targets.write_text(json.dumps(targets_for(book, calls)))
    del book, index
    runs: dict[str, list[dict[str, Any]]] = {"before": [], "after": []}
    for _ in range(repeats):
        for code in runs:
            runs[code].append(run_child(path, targets, code))
    med = {
        code: {k: statistics.median(r[k] for r in found) for k in ("ms", "cpu_ms", "anon", "file", "peak")}
        for code, found in runs.items()
    }
    want = [{frozenset(p[:2]): p[2] for p in call} for call in runs["before"][0]["found"]]
    got = [{frozenset(p[:2]): p[2] for p in call} for call in runs["after"][0]["found"]]
    hits = sum(len(w.keys() & g.keys()) for w, g in zip(want, got, strict=True))
    same = all(
        w.keys() == g.keys() and all(abs(w[k] - g[k]) <= 1e-6 for k in w) for w, g in zip(want, got, strict=True)
    )
    b, a = med["before"], med["after"]
    return {
        "skills": f"{n:,}",
        "dense": "HNSW" if runs["after"][0]["hnsw"] else "exact",
        "before ms/call (CPU)": f"{b['ms']:.1f} ({b['cpu_ms']:.1f})",
        "after ms/call (CPU)": f"{a['ms']:.2f} ({a['cpu_ms']:.2f})",
        "speed-up": f"{b['ms'] / max(a['ms'], 1e-6):.0f}x",
        "RSS added MB before: anon + file / peak": f"{b['anon']:.0f} + {b['file']:.0f} / {b['peak']:.0f}",
        "after": f"{a['anon']:.1f} + {a['file']:.1f} / {a['peak']:.1f}",
        "pairs": str(sum(len(w) for w in want)),
        "recall": f"{hits / max(1, sum(len(w) for w in want)):.3f}",
        "same": "yes" if same else "no",
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[5000, 50000, 100000])
    parser.add_argument("--calls", type=int, default=30, help="calls of pairs_involving per process (two ids each)")
    parser.add_argument("--repeats", type=int, default=1, help="fresh processes per code path (medians)")
    parser.add_argument("--smoke", action="store_true", help="400 skills, HNSW from 200: checks that it runs")
    parser.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(*args.child)
        return
    sizes, ann_min, calls = ([400], 200, 10) if args.smoke else (args.sizes, ANN_MIN, args.calls)
    print(f"load average at start: {load_average()}; faiss installed: {faiss_module() is not None}")
    rows = []
    with tempfile.TemporaryDirectory(prefix="ace-dedup-") as tmp:
        for n in sizes:
            rows.append(bench(n, calls, args.repeats, ann_min, Path(tmp)))
            print(json.dumps(rows[-1], ensure_ascii=False), file=sys.stderr, flush=True)
    print(f"load average at end: {load_average()}")
    print_table(rows)


if __name__ == "__main__":
    main()
