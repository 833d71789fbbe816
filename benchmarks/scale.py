"""Skillbooks of 5,000 / 50,000 / 100,000 skills: search, first search after load, index build, similar pairs,
memory, mutations and the checkpoint journal; prints one table (issue #27's acceptance list).

    .venv/bin/python benchmarks/scale.py [--sizes 5000 50000 100000] [--queries 200] [--smoke]
    .venv/bin/python benchmarks/scale.py --memory-only [--baseline ../main] [--sizes ...]

Skills and vectors are synthetic (`_synthetic.py`: Zipf words, 1% planted near-duplicates, 384-d vectors from
`ClusteredEmbedder`: topics and a shared direction like a sentence model's, near-duplicates at cosine ~0.95). Search
is hybrid (BM25 + dense + RRF, top 5); half the queries filter on `section="context"` with two keywords. Times are
wall clock and, in brackets, this thread's CPU time, which a loaded machine inflates far less (quote CPU medians and
ratios from one run). `recall@5 / same top 5` compares the default search with `exact=True` (every cosine in
float32, every ranking sorted, then cut at the RRF window) on the same index: the share of the exact top 5 found, and
the share of queries whose top 5 is the same list; `exact: same top 5 as full RRF` the share of queries whose exact
top 5 with the window is the one of RRF over the full rankings. With the `ann` extra, from 16,384 skills the dense
window comes from probed k-means lists of int8 codes (`int8 lists`); `--ann-min N` builds the opt-in HNSW graph from
N skills. The last line is the ratio of the largest size's
search CPU median to the smallest's. Similar pairs (cosine >= 0.85) are compared with the exact answer: the full
O(n^2) pass up to 50,000; at 100,000 the pairs within groups of skills sharing their first 20 words (the embedder's
near-duplicate seed: any other pair shares at most a topic, cosine < 0.5, so this is the exact answer, as the full
pass confirms at 5,000 and 50,000).
"First search" and the RSS columns come from a fresh process that loads the saved skillbook (with its index
sidecar) and searches; RSS counts the pages of mapped files the process touched (`file`) besides its own memory
(`anon`). `--smoke` runs 400 skills with int8 lists from 200 skills, in seconds.
`--memory-only` builds and saves each skillbook, then only runs the fresh process, three times; with `--baseline
DIR` (another checkout of the repository, e.g. `main`) it alternates that code and this one on the same files
(the older reader reads the newer files as it reads its own), so both are measured under the same load.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _report import load_average, print_table, rss_mb
from _synthetic import ClusteredEmbedder, synthetic_queries, synthetic_skillbook

from ace import InsightSource
from ace.core.journal import SkillbookMark, delta_since
from ace.core.skillbook import Skillbook
from ace.deduplication.detector import find_similar_pairs
from ace.retrieval import SkillSearchIndex, _dense, fusion
from ace.retrieval._dense import faiss_module
from ace.retrieval.index import _CACHE_KEY

THRESHOLD = 0.85


def _status(*keys: str) -> list[float]:
    """Fields of `/proc/self/status` in MB."""
    found = {}
    with open("/proc/self/status", encoding="ascii") as f:
        for line in f:
            key, _, value = line.partition(":")
            if key in keys:
                found[key] = int(value.split()[0]) * 1024 / 1e6
    return [found[k] for k in keys]


def rss_split() -> tuple[float, float]:
    """(anonymous, file-backed) resident MB of this process: its own memory, and touched pages of mapped files."""
    anon, file = _status("RssAnon", "RssFile")
    return anon, file


def peak_mb() -> float:
    """This process's peak resident MB. Not `ru_maxrss`: after fork and exec that starts at the parent's peak."""
    return _status("VmHWM")[0]


def clocked(fn: Any) -> tuple[float, float, Any]:
    """(wall s, thread CPU s, result) of one call."""
    wall, cpu = time.perf_counter(), time.thread_time()
    out = fn()
    return time.perf_counter() - wall, time.thread_time() - cpu, out


def percentiles(values: list[float]) -> tuple[float, float]:
    ordered = sorted(values)
    return statistics.median(ordered), ordered[int(0.95 * (len(ordered) - 1))]


def search_times(
    index: SkillSearchIndex, book: Skillbook, queries: list[str], *, exact: bool = False
) -> dict[str, Any]:
    walls, cpus, results = [], [], []
    for k, q in enumerate(queries):
        filters: dict[str, Any] = {"section": "context", "keywords": ["topic_3", "topic_7"]} if k % 2 else {}
        wall, cpu, found = clocked(lambda q=q, f=filters: index.search(book, q, top_k=5, exact=exact, **f))
        walls.append(wall * 1e3)
        cpus.append(cpu * 1e3)
        results.append([s.id for s in found])
    return {"wall": percentiles(walls), "cpu": percentiles(cpus), "results": results}


def reference_pairs(book: Skillbook, exact: bool) -> set[frozenset[str]]:
    """The exact pairs >= THRESHOLD: the full pass, or within groups sharing their first 20 words (see docstring)."""
    if exact:
        pairs = find_similar_pairs(book, threshold=THRESHOLD, exact_max=10**9)
        return {p.key for p in pairs}
    groups: dict[tuple[str, str], list[Any]] = defaultdict(list)
    for s in book.skills():
        groups[(s.section, " ".join(s.embedding_text().split()[:20]))].append(s)
    found: set[frozenset[str]] = set()
    for members in groups.values():
        for i, a in enumerate(members):
            for b in members[i + 1 :]:
                assert a.embedding is not None and b.embedding is not None
                if float(a.embedding @ b.embedding) >= THRESHOLD:
                    found.add(frozenset((a.id, b.id)))
    return found


def mutation_us(book: Skillbook, count: int) -> dict[str, float]:
    """Median µs per add / update / tag (with provenance), on the full-size skillbook."""
    source = InsightSource(
        trace_uid="bench:task-1-trial-0",
        source_system="bench",
        trace_id="task-1-trial-0",
        sample_question="Change my flight to tomorrow and keep the cabin class.",
        epoch=0,
        error_identification="The agent skipped the fare confirmation.",
        learning_text="Confirm the fare difference before updating.",
    )
    times: dict[str, list[float]] = {"add": [], "update": [], "tag": []}
    added: list[str] = []
    for i in range(count):
        start = time.perf_counter()
        skill = book.add_skill(
            "context", f"bench issue {i} about fares", ["bench", "fares"], "confirm", insight_source=source
        )
        times["add"].append(time.perf_counter() - start)
        added.append(skill.id)
    for i, sid in enumerate(added):
        start = time.perf_counter()
        book.update_skill(sid, f"bench issue {i} about fares, widened", insight_source=source)
        times["update"].append(time.perf_counter() - start)
    for sid in added:
        start = time.perf_counter()
        book.tag_skill(sid, 1, insight_source=source)
        times["tag"].append(time.perf_counter() - start)
    return {k: statistics.median(v) * 1e6 for k, v in times.items()}


def journal_ms(book: Skillbook, traces: int, folder: Path) -> float:
    """Median ms per trace of the checkpoint journal: the delta since the last trace and its appended line."""
    from ace_eval.run.checkpoint import Checkpoint

    checkpoint = Checkpoint(folder, snapshot_every=10**9)
    checkpoint.open(Skillbook(), fresh=True)  # the snapshot of a big skillbook is not the journal's cost
    times = []

    async def run() -> None:
        mark = SkillbookMark.of(book)
        for i in range(traces):
            skill = book.add_skill("harness", f"journal trace {i}", ["journal"])  # one trace's learning
            book.tag_skill(skill.id, 1)
            start = time.perf_counter()
            delta = delta_since(book, mark)
            mark = SkillbookMark.of(book)
            await checkpoint.commit({"sample": i, "reward": 1.0, "checkpoint": delta}, Skillbook())
            times.append(time.perf_counter() - start)
        await checkpoint.close(None)

    asyncio.run(run())
    return statistics.median(times) * 1e3


def child(path: str, queries: int) -> None:
    """Fresh process: load the saved skillbook, search once (the index sidecar is read), then a few times more."""
    from ace.retrieval.top_k import retrieve_top_k

    out: dict[str, float] = {"rss_import": rss_mb()}
    start = time.perf_counter()
    book = Skillbook.load_from_file(path)
    out["load_s"], out["rss_load"] = time.perf_counter() - start, rss_mb()
    out["anon_load"], out["file_load"] = rss_split()
    qs = synthetic_queries(queries, seed=11)
    emb = ClusteredEmbedder()
    wall, cpu, _ = clocked(lambda: retrieve_top_k(book, qs[0], top_k=5, section="context", embedder=emb))
    out["first_ms"], out["first_cpu_ms"], out["rss_index"] = wall * 1e3, cpu * 1e3, rss_mb()
    out["anon_index"], out["file_index"] = rss_split()
    walls = [clocked(lambda q=q: retrieve_top_k(book, q, top_k=5, embedder=emb))[0] * 1e3 for q in qs[1:]]
    out["next_ms"] = statistics.median(walls)
    out["peak_rss"] = peak_mb()
    out["from_sidecar"] = float(book.caches[_CACHE_KEY].loaded_from is not None)  # type: ignore[attr-defined]
    print(json.dumps(out))


def bench(
    n: int, n_queries: int, ann_min: int | None, mutations: int, folder: Path, medians: dict[int, float]
) -> dict[str, str]:
    emb = ClusteredEmbedder()
    book = synthetic_skillbook(n)
    SkillSearchIndex(emb, ann_min=None).sync(book)  # computes and caches every vector (not timed: the model's cost)
    build_wall, build_cpu, index = clocked(lambda: _built(SkillSearchIndex(emb, ann_min=ann_min), book))
    book.caches[_CACHE_KEY] = index
    queries = synthetic_queries(n_queries)
    timed = search_times(index, book, queries)
    dense = index._dense
    row = {
        "skills": f"{n:,}",
        "dense": "HNSW" if dense.approximate else ("int8 lists" if dense._codes.count else "exact"),
        "search med / p95 ms": "{:.1f} / {:.1f} ({:.1f} / {:.1f} CPU)".format(*timed["wall"], *timed["cpu"]),
        "index build s": f"{build_wall:.1f} ({build_cpu:.1f} CPU)",
    }
    want = search_times(index, book, queries[: max(20, len(queries) // 2)], exact=True)
    pairs_found = list(zip(want["results"], timed["results"], strict=False))
    hits = sum(len(set(a) & set(b)) for a, b in pairs_found)
    found, same = hits / max(1, sum(len(a) for a, _ in pairs_found)), sum(a == b for a, b in pairs_found)
    row["recall@5 / same top 5 vs exact"] = f"{found:.3f} / {same / len(pairs_found):.3f}"
    row["exact med ms (CPU)"] = "{:.1f}".format(want["cpu"][0])
    window, fusion.RRF_WINDOW = fusion.RRF_WINDOW, 10**9  # every rank counts: RRF over the full rankings
    try:
        full = search_times(index, book, queries[: len(pairs_found)], exact=True)["results"]
    finally:
        fusion.RRF_WINDOW = window
    same_full = sum(a == b for a, b in zip(want["results"], full, strict=True)) / len(full)
    row[f"exact: same top 5 as full RRF (window {window})"] = f"{same_full:.3f}"
    medians[n] = timed["cpu"][0]
    pairs_wall, pairs_cpu, pairs = clocked(lambda: find_similar_pairs(book, threshold=THRESHOLD, embedder=emb))
    truth = reference_pairs(book, exact=n <= 50_000)
    got = {p.key for p in pairs}
    row["pairs s"] = f"{pairs_wall:.1f} ({pairs_cpu:.1f} CPU)"
    row["pair recall"] = f"{len(got & truth) / max(1, len(truth)):.3f} of {len(truth)}"
    path = folder / f"skillbook-{n}.json"
    save_s, _, _ = clocked(lambda: book.save_to_file(path))
    loaded = fresh_process(path, None)
    row["save s"] = f"{save_s:.1f}"
    row["load s"] = f"{loaded['load_s']:.2f}"
    row["first search ms"] = f"{loaded['first_ms']:.0f} ({loaded['first_cpu_ms']:.0f} CPU)" + (
        "" if loaded["from_sidecar"] else " rebuilt!"
    )
    row["RSS MB load / index / peak"] = "{rss_load:.0f} / {rss_index:.0f} / {peak_rss:.0f}".format(**loaded)
    row["anon + file MB after index"] = "{anon_index:.0f} + {file_index:.0f}".format(**loaded)
    ops = mutation_us(book, mutations)
    row["add / update / tag µs"] = "{add:.0f} / {update:.0f} / {tag:.0f}".format(**ops)
    row["journal ms/trace"] = f"{journal_ms(book, 50, folder / f'journal-{n}'):.2f}"
    return row


def fresh_process(path: Path, code: str | None) -> dict[str, float]:
    """`child` in a new process, importing `ace` from `code` (a checkout) when given, else from here."""
    env = {**os.environ, "PYTHONPATH": str(Path(code).resolve())} if code else None
    done = subprocess.run(
        [sys.executable, __file__, "--child", str(path), "--queries", "21", "--quant-min", str(_dense._QUANT_MIN)],
        check=True,
        capture_output=True,
        text=True,
        env=env,
    )
    if done.stderr.strip():
        print(f"fresh process on {path.name}: {done.stderr.strip()[-2000:]}", file=sys.stderr)
    loaded: dict[str, float] = json.loads(done.stdout)
    return loaded


def memory_rows(n: int, folder: Path, baseline: str | None, repeats: int = 3) -> list[dict[str, str]]:
    """Save `n` skills with their index (the default one), then load and search them in fresh
    processes, alternating the `baseline` code and this one; the median of `repeats` runs of each."""
    emb = ClusteredEmbedder()
    book = synthetic_skillbook(n)
    index = _built(SkillSearchIndex(emb), book)
    book.caches[_CACHE_KEY] = index
    dense = "HNSW" if index._dense.approximate else "exact"
    path = folder / f"skillbook-{n}.json"
    book.save_to_file(path)
    del book, index
    codes: list[str | None] = [baseline, None] if baseline else [None]
    runs: dict[str | None, list[dict[str, float]]] = {code: [] for code in codes}
    for _ in range(repeats):
        for code in codes:
            runs[code].append(fresh_process(path, code))
    rows = []
    for code, found in runs.items():
        med = {k: statistics.median(r[k] for r in found) for k in found[0]}
        rows.append(
            {
                "skills": f"{n:,}",
                "dense": dense,
                "code": Path(code).name if code else "this",
                "RSS MB load / index / peak": "{rss_load:.0f} / {rss_index:.0f} / {peak_rss:.0f}".format(**med),
                "anon + file MB after index": "{anon_index:.0f} + {file_index:.0f}".format(**med),
                "first search ms": f"{med['first_ms']:.0f} ({med['first_cpu_ms']:.0f} CPU)"
                + ("" if med["from_sidecar"] else " rebuilt!"),
                "next searches ms": f"{med['next_ms']:.1f}",
                "load s": f"{med['load_s']:.2f}",
            }
        )
    return rows


def _built(index: SkillSearchIndex, book: Skillbook) -> SkillSearchIndex:
    index.sync(book)
    return index


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[5000, 50000, 100000])
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--smoke", action="store_true", help="400 skills, int8 scan from 200: checks that it runs")
    parser.add_argument("--memory-only", action="store_true", help="only the fresh process: load, search, RSS")
    parser.add_argument("--baseline", help="with --memory-only: a checkout whose code runs alternately with this one")
    parser.add_argument("--ann-min", type=int, help="build HNSW graphs from this many skills (opt-in; default none)")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--quant-min", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.quant_min is not None:
        _dense._QUANT_MIN = args.quant_min
    if args.child:
        child(args.child, args.queries)
        return
    sizes, ann_min, mutations = (args.sizes, args.ann_min, 300) if not args.smoke else ([400], None, 20)
    if args.smoke:  # the int8 scan, on a small skillbook
        _dense._QUANT_MIN = 200
    queries = 20 if args.smoke else args.queries
    print(f"load average at start: {load_average()}; faiss installed: {faiss_module() is not None}")
    rows: list[dict[str, str]] = []
    medians: dict[int, float] = {}
    with tempfile.TemporaryDirectory(prefix="ace-scale-") as tmp:
        for n in sizes:
            found = (
                memory_rows(n, Path(tmp), args.baseline)
                if args.memory_only
                else [bench(n, queries, ann_min, mutations, Path(tmp), medians)]
            )
            rows.extend(found)
            for row in found:
                print(json.dumps(row, ensure_ascii=False), file=sys.stderr, flush=True)
    print(f"load average at end: {load_average()}")
    print_table(rows)
    if len(medians) > 1:
        low, high = min(medians), max(medians)
        ratio, ms = medians[high] / medians[low], f"{medians[high]:.2f} / {medians[low]:.2f} ms"
        print(f"search CPU median, {high:,} / {low:,} skills: {ratio:.2f}x ({ms})")


if __name__ == "__main__":
    main()
