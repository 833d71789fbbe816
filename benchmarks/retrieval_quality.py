"""Retrieval quality of skill search on the banking knowledge base: BM25 alone, dense alone, hybrid (RRF).

    .venv/bin/python benchmarks/retrieval_quality.py [--data-dir ../shared/data/retrieval-banking] [--smoke]

The 698 documents become harness skills (issue = title + content, keywords from the title); each
customer scenario is a query whose `relevant` documents are the gold set. Prints recall@5, recall@10 and
nDCG@10 (binary relevance) averaged over the queries, for our BM25, rank-bm25's BM25Okapi with the same
tokens (the reference our scores must equal), dense cosine with the offline default (MiniLM int8), and
the hybrid; then the hybrid recomputed from the full BM25 and dense rankings with RRF over each one's first W (the
`--windows`, then in full: their ms/query is that of the fusion alone, the rankings cached), and for each W on how
many queries its top 10 is full RRF's. Documents keep their full length (the skillbook's 2,000-character cap on new
text is lifted here: some documents run to ~4,800 characters). `--smoke` runs the first 40 documents and the
queries answered among them with the hashing `TestEmbedder` instead of MiniLM, in seconds, to check the script works
(tests/test_benchmarks_smoke.py runs it in CI); its numbers say nothing about quality.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt

from ace.core.skill import Skill
from ace.core.skillbook import Skillbook
from ace.embeddings import TestEmbedder, default_embedder
from ace.retrieval import SearchMode, search_index, tokenize

DEFAULT_DATA = (
    Path(os.environ.get("ACE_SHARED_DATA", Path(__file__).resolve().parents[1].parent / "shared" / "data"))
    / "retrieval-banking"
)
DENSE = "dense (MiniLM int8)"
_TITLE_STOP = {"internal", "and", "or", "the", "a", "an", "of", "for", "to", "in", "on", "with", "by", "from"}


@dataclass(frozen=True)
class Query:
    id: str
    text: str
    relevant: frozenset[str]


def load(data_dir: Path) -> tuple[list[dict[str, str]], list[Query]]:
    docs_path, queries_path = data_dir / "documents.jsonl", data_dir / "queries-dev.jsonl"
    if not docs_path.is_file() or not queries_path.is_file():
        sys.exit(
            f"retrieval-quality data not found in {data_dir} (expected documents.jsonl and queries-dev.jsonl): "
            "pass --data-dir pointing at shared/data/retrieval-banking"
        )
    docs = [json.loads(line) for line in docs_path.read_text(encoding="utf-8").splitlines() if line.strip()]
    queries = [
        Query(q["id"], q["query"], frozenset(q["relevant"]))
        for q in (json.loads(line) for line in queries_path.read_text(encoding="utf-8").splitlines() if line.strip())
    ]
    return docs, queries


def title_keywords(title: str) -> list[str]:
    words = [w for w in tokenize(title) if w not in _TITLE_STOP]
    return words[:5] or ["document"]


def build(docs: list[dict[str, str]]) -> tuple[Skillbook, dict[str, str]]:
    """The documents as harness skills; returns the skillbook and skill id -> document id."""
    book = Skillbook(max_text_chars=None)  # knowledge-base articles, longer than an agent-written skill may be
    doc_of: dict[str, str] = {}
    for d in docs:
        skill = book.add_skill("harness", f"{d['title']}\n\n{d['content']}", title_keywords(d["title"]))
        doc_of[skill.id] = d["id"]
    return book, doc_of


def recall_at(ranked: list[str], relevant: frozenset[str], k: int) -> float:
    return len(set(ranked[:k]) & relevant) / len(relevant)


def ndcg_at(ranked: list[str], relevant: frozenset[str], k: int) -> float:
    dcg = sum(1 / math.log2(i + 2) for i, d in enumerate(ranked[:k]) if d in relevant)
    ideal = sum(1 / math.log2(i + 2) for i in range(min(k, len(relevant))))
    return dcg / ideal


@dataclass(frozen=True)
class Result:
    per_query: npt.NDArray[np.float64]
    """(queries, 3): recall@5, recall@10, nDCG@10 of each query."""
    ms: float
    """Median latency per query."""


def evaluate(rank: Callable[[Query], list[str]], queries: list[Query]) -> Result:
    rows, times = [], []
    for q in queries:
        start = time.perf_counter()
        ranked = rank(q)
        times.append(time.perf_counter() - start)
        rows.append(
            (recall_at(ranked, q.relevant, 5), recall_at(ranked, q.relevant, 10), ndcg_at(ranked, q.relevant, 10))
        )
    return Result(np.asarray(rows, dtype=np.float64), float(np.median(times)) * 1e3)


def bootstrap_ci(diff: npt.NDArray[np.float64], *, rounds: int = 2000, seed: int = 0) -> npt.NDArray[np.float64]:
    """95% bootstrap interval (over queries) of the mean of each column of `diff`: shape (2, columns)."""
    rng = np.random.default_rng(seed)
    means = np.stack([diff[rng.integers(0, len(diff), len(diff))].mean(axis=0) for _ in range(rounds)])
    interval: npt.NDArray[np.float64] = np.percentile(means, [2.5, 97.5], axis=0)
    return interval


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data-dir", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--smoke", action="store_true", help="40 documents, a hashing embedder: checks it runs")
    parser.add_argument(
        "--windows",
        type=int,
        nargs="*",
        default=[50, 100, 256, 1000],
        help="also print the hybrid with RRF over each ranking's first W items only, for each W (and in full)",
    )
    args = parser.parse_args()
    docs, queries = load(args.data_dir)
    if args.smoke:
        docs = docs[:40]
        kept = {d["id"] for d in docs}
        queries = [Query(q.id, q.text, q.relevant & kept) for q in queries if q.relevant & kept][:20]
    book, doc_of = build(docs)
    emb = TestEmbedder() if args.smoke else default_embedder()
    index = search_index(book, emb)
    start = time.perf_counter()
    index.sync(book)
    embed_s = time.perf_counter() - start

    def ours(mode: SearchMode) -> Callable[[Query], list[str]]:
        return lambda q: [doc_of[s.id] for s in index.search(book, q.text, top_k=10, mode=mode)]

    from rank_bm25 import BM25Okapi

    skills = book.skills()
    reference = BM25Okapi([tokenize(s.embedding_text()) for s in skills])

    def rank_bm25(q: Query) -> list[str]:
        scores = reference.get_scores(tokenize(q.text))
        return [doc_of[skills[i].id] for i in np.argsort(-scores, kind="stable")[:10]]

    full_rankings: dict[tuple[str, SearchMode], list[Skill]] = {}

    def full_ranking(q: Query, mode: SearchMode) -> list[Skill]:
        """Every skill the `mode` ranks, in order (embedding a long query takes MiniLM ~1 s: once per query)."""
        if (q.id, mode) not in full_rankings:
            full_rankings[q.id, mode] = index.search(book, q.text, top_k=len(skills), mode=mode)
        return full_rankings[q.id, mode]

    def windowed(window: int | None) -> Callable[[Query], list[str]]:
        """RRF (k = 60) of the full BM25 and dense rankings, each cut at `window` (`None`: in full)."""
        order = {s.id: i for i, s in enumerate(skills)}  # creation order: how equal fused scores rank

        def rank(q: Query) -> list[str]:
            fused: dict[str, float] = {}
            modes: tuple[SearchMode, SearchMode] = ("dense", "bm25")
            for mode in modes:
                ranked = full_ranking(q, mode)
                for r, s in enumerate(ranked[:window] if window is not None else ranked, start=1):
                    fused[s.id] = fused.get(s.id, 0.0) + 1.0 / (60 + r)
            best = sorted(fused, key=lambda sid: (-fused[sid], order[sid]))
            return [doc_of[sid] for sid in best[:10]]

        return rank

    rows = {
        "BM25 (ours)": evaluate(ours("bm25"), queries),
        "BM25 (rank-bm25 reference)": evaluate(rank_bm25, queries),
        DENSE: evaluate(ours("dense"), queries),
        "hybrid RRF k=60": evaluate(ours("hybrid"), queries),
    }
    full = windowed(None)
    for window in [*args.windows, None]:
        rows[f"  RRF window {window or 'full'}"] = evaluate(windowed(window), queries)
    for window in args.windows:
        same = sum(windowed(window)(q) == full(q) for q in queries)
        print(f"RRF window {window}: the same top 10 as full RRF on {same} of {len(queries)} queries")
    print(f"{len(docs)} documents, {len(queries)} queries; embedding the documents took {embed_s:.1f} s")
    print(f"{'ranking':<28} {'recall@5':>9} {'recall@10':>10} {'nDCG@10':>8} {'ms/query':>9}")
    for name, res in rows.items():
        r5, r10, n10 = res.per_query.mean(axis=0)
        print(f"{name:<28} {r5:>9.3f} {r10:>10.3f} {n10:>8.3f} {res.ms:>9.1f}")
    hybrid = rows["hybrid RRF k=60"].per_query
    for single in ("BM25 (ours)", DENSE):
        diff = hybrid - rows[single].per_query
        lo, hi = bootstrap_ci(diff)
        spans = ", ".join(
            f"{m} {d:+.3f} [{a:+.3f}, {b:+.3f}]"
            for m, d, a, b in zip(("recall@5", "recall@10", "nDCG@10"), diff.mean(axis=0), lo, hi, strict=True)
        )
        wins, losses = int((diff[:, 2] > 1e-9).sum()), int((diff[:, 2] < -1e-9).sum())
        print(f"hybrid minus {single}: {spans} (95% bootstrap CI); nDCG@10 better on {wins}, worse on {losses} queries")


if __name__ == "__main__":
    main()
