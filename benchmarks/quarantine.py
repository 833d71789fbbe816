"""Cost of the effectiveness gate at scale: the `quarantine` step's check per sample, and search around quarantines.

    .venv/bin/python benchmarks/quarantine.py [--sizes 1000 5000] [--queries 200]

A synthetic skillbook (`_synthetic.py`, synthetic 384-d embedder) where every fifth skill carries a TAG from one
of 50 traces, as in `skillbook_ops.py`. Rows: the first evidence fold (the whole audit log), the gate's check after
one more sample (its TAG folded in, every tagged skill weighed), search median with no skill quarantined and with
10% quarantined, and a quarantine (or release) immediately followed by a search: the index drops or re-adds the one
skill in place, it is never rebuilt per query.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _synthetic import SyntheticEmbedder, synthetic_queries, synthetic_skillbook
from _timing import call_times, median_time

from ace import InsightSource, QuarantinePolicy, Skillbook
from ace.core.effectiveness import evidence_ledger
from ace.retrieval import search_index
from ace.retrieval.top_k import retrieve_top_k


def _source(i: int) -> InsightSource:
    trace = f"bench:trace-{i % 50}"
    return InsightSource(trace_uid=trace, source_system="bench", trace_id=trace)


def _search_median(book: Skillbook, emb: SyntheticEmbedder, queries: list[str]) -> float:
    times: list[float] = []
    for q in queries:
        start = time.perf_counter()
        retrieve_top_k(book, q, top_k=5, embedder=emb)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def bench(n: int, n_queries: int) -> dict[str, str]:
    emb = SyntheticEmbedder()
    book = synthetic_skillbook(n)
    ids = [s.id for s in book.skills()]
    for i, sid in enumerate(ids[::5]):
        book.tag_skill(sid, 1 if i % 3 else -1, insight_source=_source(i))
    index = search_index(book, emb)
    index.sync(book)
    queries = synthetic_queries(n_queries)
    policy = QuarantinePolicy()
    first = call_times(lambda: evidence_ledger(book), 1)[0]  # folds the whole log once, then it is cached

    def one_sample() -> None:
        book.tag_skill(ids[1], 0, insight_source=_source(7))
        policy.due(book)

    check = median_time(one_sample, 50)
    plain = _search_median(book, emb, queries)
    held = ids[::10]
    for sid in held:
        book.quarantine_skill(sid, "bench")
    quarantined = _search_median(book, emb, queries)
    flips = iter(held * 2)

    def flip_then_search() -> None:
        sid = next(flips)
        skill = book.require_skill(sid)
        if skill.quarantine is None:
            book.quarantine_skill(sid, "bench")
        else:
            book.release_skill(sid, "bench")
        retrieve_top_k(book, queries[0], top_k=5, embedder=emb)

    flip = median_time(flip_then_search, min(50, len(held)))
    assert search_index(book, emb) is index, "the index is the same object: updated in place, never rebuilt"
    return {
        "skills": f"{n:,}",
        "first evidence fold": f"{first * 1e3:.2f} ms",
        "gate check per sample": f"{check * 1e3:.3f} ms",
        "search median": f"{plain * 1e3:.2f} ms",
        "search, 10% quarantined": f"{quarantined * 1e3:.2f} ms",
        "quarantine/release + search": f"{flip * 1e3:.2f} ms",
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 5000])
    parser.add_argument("--queries", type=int, default=200)
    args = parser.parse_args()
    rows = [bench(n, args.queries) for n in args.sizes]
    keys = list(rows[0])
    widths = {k: max(len(k), *(len(r[k]) for r in rows)) for k in keys}
    print(" | ".join(k.ljust(widths[k]) for k in keys))
    print("-+-".join("-" * widths[k] for k in keys))
    for row in rows:
        print(" | ".join(row[k].ljust(widths[k]) for k in keys))


if __name__ == "__main__":
    main()
