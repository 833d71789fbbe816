"""Side by side with the peer, ace-framework 0.13.0: mutations, search, save, load, first search after load, pairs.

    .venv/bin/python benchmarks/peer_side_by_side.py --peer-python /work/venvs/peer/bin/python [--sizes 1000 5000]
        [--rounds 3] [--ours-python PYTHON]

The peer's import package is also named `ace`, so each side runs as a subprocess of this script (`--worker`) in its
own environment (the peer needs Python 3.12+: `python3.12 -m venv peer && peer/bin/pip install
ace-framework==0.13.0`). Both sides get the same skills (Zipf words, both sections, two keywords, an insight and a
provenance record on every add / update / tag: the peer's `tag_skill` takes one too) and the same deterministic
384-d vectors (no network). The sides alternate, size by size and round by round (`--rounds`), so both see the same
load; each cell is the median over the rounds of each round's median, and the table prints the peer's time over ours
from this one run (above 1: we are faster; for the file sizes, above 1: ours are smaller). The peer needs Python
3.12+; `--ours-python` runs our side on another interpreter (e.g. a 3.12 venv with this checkout installed) so both
run on the same Python. The machine's load average is printed before and after.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

DIM = 384
VOCAB = [f"{a}{b}" for a in ("ka", "lo", "mi", "nu", "pe", "ra", "si", "tu", "vo", "ze") for b in range(300)]


def vector(text: str) -> np.ndarray:
    seed = int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "little")
    v = np.random.default_rng(seed).standard_normal(DIM).astype(np.float32)
    return v / np.linalg.norm(v)


def words(rng: random.Random, n: int) -> str:
    return " ".join(VOCAB[min(int(rng.paretovariate(1.1)) - 1, len(VOCAB) - 1)] for _ in range(n))


def median_us(fn: Callable[[int], object], count: int) -> float:
    times = []
    for i in range(count):
        start = time.perf_counter()
        fn(i)
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e6


def worker(n: int, queries: int) -> dict[str, float]:
    """Run the workload against whichever `ace` this interpreter imports."""
    ours = importlib.util.find_spec("ace.retrieval") is not None
    from ace import Skillbook
    from ace.core.insight_source import InsightSource

    source = InsightSource(
        trace_uid="bench:task-1-trial-0",
        source_system="bench",
        trace_id="task-1-trial-0",
        sample_question="Change my flight to tomorrow and keep the cabin class.",
        epoch=0,
        error_identification="The agent skipped the fare confirmation.",
        learning_text="Confirm the fare difference before updating.",
    )
    if ours:
        from ace.deduplication.detector import find_similar_pairs
        from ace.retrieval.top_k import retrieve_top_k

        class Embedder:
            dimension, model_name = DIM, "bench-384"

            def embed(self, texts: list[str]) -> np.ndarray:
                return np.stack([vector(t) for t in texts])

        emb = Embedder()

        def search(book: Any, q: str, **kw: Any) -> object:
            return retrieve_top_k(book, q, top_k=5, embedder=emb, **kw)  # type: ignore[arg-type]

        def pairs(book: Any) -> object:
            return find_similar_pairs(book, threshold=0.9, embedder=emb)  # type: ignore[arg-type]

        def add(book: Any, section: str, issue: str, kws: list[str], insight: str) -> Any:
            return book.add_skill(section, issue, kws, insight, insight_source=source)

        def update(book: Any, sid: str, issue: str) -> object:
            return book.update_skill(sid, issue, insight_source=source)

        def tag(book: Any, sid: str) -> object:
            return book.tag_skill(sid, 1, insight_source=source)

    else:
        from ace.deduplication.detector import SimilarityDetector
        from ace.implementations.skill_rendering import retrieve_top_k as peer_top_k

        class Detector(SimilarityDetector):  # type: ignore[misc]
            def compute_embedding(self, text: str) -> list[float]:
                return vector(text).tolist()  # type: ignore[no-any-return]

            def compute_embeddings_batch(self, texts: list[str]) -> list[list[float]]:
                return [self.compute_embedding(t) for t in texts]

        det = Detector()

        def search(book: Any, q: str, **kw: Any) -> object:
            return peer_top_k(book, q, top_k=5, detector=det, **kw)

        def pairs(book: Any) -> object:
            return det.detect_similar_pairs(book, threshold=0.9)

        def add(book: Any, section: str, issue: str, kws: list[str], insight: str) -> Any:
            return book.add_skill(section, issue, keywords=kws, insight=insight, insight_source=source)

        def update(book: Any, sid: str, issue: str) -> object:
            return book.update_skill(sid, issue=issue, insight_source=source)

        def tag(book: Any, sid: str) -> object:
            return book.tag_skill(sid, 1, insight_source=source)

    rng = random.Random(0)
    texts = [(words(rng, rng.randint(25, 60)), words(rng, rng.randint(10, 25))) for _ in range(n)]
    book = Skillbook()
    ids: list[str] = []
    out: dict[str, float] = {}

    def add_one(i: int) -> None:
        section = "context" if i % 10 < 7 else "harness"
        ids.append(add(book, section, texts[i][0], [f"topic_{i % 200}", f"topic_{i % 7}"], texts[i][1]).id)

    out["add_us"] = median_us(add_one, n)
    picked = random.Random(1).sample(ids, min(300, n))
    out["update_us"] = median_us(lambda i: update(book, picked[i], texts[i][0] + " widened"), len(picked))
    out["tag_us"] = median_us(lambda i: tag(book, picked[i]), len(picked))
    qrng = random.Random(2)
    qs = [words(qrng, qrng.randint(8, 30)) for _ in range(queries + 1)]
    search(book, qs[-1])  # embeds every skill (not timed: the model's cost)
    out["search_ms"] = median_us(lambda i: search(book, qs[i], section="context", keywords=["topic_3"]), queries) / 1e3
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "skillbook.json")
        start = time.perf_counter()
        book.save_to_file(path)
        out["save_s"] = time.perf_counter() - start
        start = time.perf_counter()
        loaded = type(book).load_from_file(path)
        out["load_s"] = time.perf_counter() - start
        start = time.perf_counter()
        search(loaded, qs[0], section="context", keywords=["topic_3"])
        out["first_search_s"] = time.perf_counter() - start
        out["file_mb"] = sum(os.path.getsize(os.path.join(tmp, f)) for f in os.listdir(tmp)) / 1e6
        out["json_mb"] = os.path.getsize(path) / 1e6
        out["other_mb"] = out["file_mb"] - out["json_mb"]
    start = time.perf_counter()
    pairs(book)
    out["pairs_s"] = time.perf_counter() - start
    return out


ROWS = [
    ("add µs", "add_us"),
    ("update µs", "update_us"),
    ("tag µs", "tag_us"),
    ("search ms", "search_ms"),
    ("save s", "save_s"),
    ("load s", "load_s"),
    ("first search after load s", "first_search_s"),
    ("similar pairs s", "pairs_s"),
    ("files MB", "file_mb"),
    ("  skillbook.json MB", "json_mb"),
    ("  beside it (vectors, index) MB", "other_mb"),
]


def load_average() -> str:
    with open("/proc/loadavg", encoding="ascii") as f:
        return " ".join(f.read().split()[:3])


def python_version(python: str) -> str:
    result = subprocess.run([python, "-c", "import sys; print(sys.version.split()[0])"], capture_output=True, text=True)
    return f"{python} (Python {result.stdout.strip() or '?'})"


def run_side(python: str, n: int, queries: int) -> dict[str, float]:
    result = subprocess.run(
        [python, __file__, "--worker", "--sizes", str(n), "--queries", str(queries)],
        capture_output=True,
        text=True,
        check=False,
        cwd=tempfile.gettempdir(),  # not the repository: the peer must not import our `ace` from the cwd
    )
    if result.returncode != 0:
        sys.exit(f"{python} failed at {n} skills:\n{result.stderr[-3000:]}")
    data: dict[str, float] = json.loads(result.stdout.strip().splitlines()[-1])
    return data


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--peer-python", default="/work/venvs/peer/bin/python", help="python of the peer's venv")
    parser.add_argument("--ours-python", default=sys.executable)
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 5000])
    parser.add_argument("--queries", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=1, help="alternate the two sides this many times per size")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        print(json.dumps(worker(args.sizes[0], args.queries)))
        return
    if not Path(args.peer_python).exists():
        sys.exit(f"no peer interpreter at {args.peer_python}: pass --peer-python (a venv with ace-framework==0.13.0)")
    print(f"load average before: {load_average()}")
    print(f"ours: {python_version(args.ours_python)}; peer: {python_version(args.peer_python)}")
    for n in args.sizes:
        runs: dict[str, list[dict[str, float]]] = {"ours": [], "peer": []}
        for _ in range(args.rounds):
            runs["ours"].append(run_side(args.ours_python, n, args.queries))
            runs["peer"].append(run_side(args.peer_python, n, args.queries))
        ours, peer = ({k: statistics.median(r[k] for r in rs) for k in rs[0]} for rs in runs.values())
        print(f"\n{f'{n:,} skills, {args.rounds} round(s)':<32} {'ours':>10} {'peer':>10} {'peer / ours':>12}")
        for label, key in ROWS:
            ratio = f"{peer[key] / ours[key]:>11.2f}x" if ours[key] > 0 else f"{'-':>12}"
            print(f"{label:<32} {ours[key]:>10.3f} {peer[key]:>10.3f} {ratio}")
    print(f"\nload average after: {load_average()}")


if __name__ == "__main__":
    main()
