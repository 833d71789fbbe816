"""The memory of a loaded skillbook and the cost of one mutation (issue #27): RSS after loading 10,000 to 100,000
skills in a fresh process, bytes per skill, and add / update / tag µs with and without redaction.

    .venv/bin/python benchmarks/memory.py [--sizes 10000 50000 100000] [--mutations 1000] [--smoke]

The skills look trained: Zipf words (`_synthetic.py`), 1-4 keywords, both sections, a 384-d float32 vector each;
one in three learned from a trace (one `InsightSource` for all of that trace's mutations), one in five tagged, one
in ten updated. The file is saved, then a fresh process loads it and reports its RSS after `import ace` and after
the load, the vectors' share (n x 384 x 4 bytes plus a row object per skill) and the rest per skill; then the skills
and the audit log as Python objects, each object counted once (a string shared by several skills counts once).
Mutations: medians over `--mutations` calls of each kind on the full-size skillbook (the peer's workload in
`peer_side_by_side.py`: 25-60-word issues, 10-25-word insights, a provenance record on every call), each call with
redaction followed by the same call without (`skillbook.redactor = None`), so both columns see the same load.
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
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np
from _report import load_average, print_table, rss_mb
from _synthetic import words

from ace import InsightSource, Skillbook
from ace.redaction import Redactor

DIM = 384


def source(trace: int) -> InsightSource:
    return InsightSource(
        trace_uid=f"bench:task-{trace}-trial-0",
        source_system="bench",
        trace_id=f"task-{trace}-trial-0",
        sample_question="Change my flight to tomorrow and keep the cabin class.",
        epoch=trace % 3,
        error_identification="The agent skipped the fare confirmation.",
        learning_text="Confirm the fare difference before updating.",
    )


def build(n: int, seed: int = 0) -> Skillbook:
    """`n` skills with the history of a training run (module docstring) and a vector each."""
    rng = random.Random(seed)
    book = Skillbook()
    book.embedding_model = "bench-384"
    vectors = np.random.default_rng(seed).standard_normal((n, DIM)).astype(np.float32)
    for i in range(n):
        section = "context" if rng.random() < 0.7 else "harness"
        insight = words(rng, rng.randint(10, 25)) if section == "context" or rng.random() < 0.5 else None
        learned = source(i // 10) if i % 3 == 0 else None
        keywords = [f"topic_{k}" for k in rng.sample(range(200), rng.randint(1, 4))]
        skill = book.add_skill(section, words(rng, rng.randint(25, 60)), keywords, insight, insight_source=learned)
        if i % 5 == 0:
            book.tag_skill(skill.id, rng.choice((-1, 0, 1)), insight_source=learned)
        if i % 10 == 0:
            book.update_skill(skill.id, words(rng, rng.randint(25, 60)), insight_source=learned)
        book.set_embedding(skill.id, vectors[i])
    return book


def deep_size(roots: list[Any], seen: set[int]) -> int:
    """Bytes of `roots` and everything they hold but vectors (counted apart), each object once across calls that
    share `seen`."""
    total, stack = 0, list(roots)
    while stack:
        obj = stack.pop()
        if obj is None or id(obj) in seen or type(obj) in (bool, int, float, np.ndarray):
            continue
        seen.add(id(obj))
        total += sys.getsizeof(obj)
        if isinstance(obj, dict):
            stack.extend(obj.keys())
            stack.extend(obj.values())
        elif isinstance(obj, list | tuple):
            stack.extend(obj)
        elif hasattr(obj, "__dict__"):
            stack.append(obj.__dict__)
        elif hasattr(type(obj), "__slots__"):
            stack.extend(getattr(obj, name) for c in type(obj).__mro__ for name in getattr(c, "__slots__", ()))
    return total


def child(path: str) -> None:
    """Fresh process: import, load, report RSS and object sizes as JSON."""
    out: dict[str, float] = {"rss_import": rss_mb()}
    cpu = time.process_time()
    book = Skillbook.load_from_file(path)
    out["load_cpu_s"], out["rss_load"] = time.process_time() - cpu, rss_mb()
    skills = book.skills(include_inactive=True)
    out["n"] = len(skills)
    vectors = [s.embedding for s in skills if s.embedding is not None]
    out["vectors_mb"] = sum(sys.getsizeof(v) + (v.nbytes if v.base is not None else 0) for v in vectors) / 1e6
    seen: set[int] = set()
    out["skill_bytes"] = deep_size(skills, seen) / len(skills)
    out["log_bytes"] = deep_size(list(book.operations), seen) / len(skills)
    out["log_entries"] = book.operations_count / len(skills)
    print(json.dumps(out))


def mutation_us(book: Skillbook, count: int, seed: int = 1) -> dict[str, float]:
    """Median µs per add / update / tag with redaction and without (`_r` / `_plain`), each call followed by the
    same call without (or with) the redactor."""
    rng = random.Random(seed)
    texts = [(words(rng, rng.randint(25, 60)), words(rng, rng.randint(10, 25))) for _ in range(count)]
    learned, redactor = source(10**6), book.redactor or Redactor()
    times: dict[str, list[float]] = {}

    def timed(kind: str, call: Callable[[], Any]) -> Any:
        order: list[tuple[str, Redactor | None]] = [("r", redactor), ("plain", None)]
        if len(times.setdefault(f"{kind}_r", [])) % 2:
            order.reverse()  # each comes first half the time
        for label, active in order:
            book.redactor = active
            start = time.perf_counter()
            result = call()
            times.setdefault(f"{kind}_{label}", []).append((time.perf_counter() - start) * 1e6)
        return result

    added: list[str] = []
    for i, (issue, insight) in enumerate(texts):
        kws = [f"topic_{i % 200}", f"topic_{i % 7}"]
        add = lambda issue=issue, kws=kws, insight=insight: book.add_skill(  # noqa: E731
            "context", issue, kws, insight, insight_source=learned
        )
        added.append(timed("add", add).id)
    for sid, (issue, _) in zip(added, texts, strict=True):
        timed("update", lambda sid=sid, issue=issue: book.update_skill(sid, issue + " widened", insight_source=learned))
    for sid in added:
        timed("tag", lambda sid=sid: book.tag_skill(sid, 1, insight_source=learned))
    book.redactor = redactor
    return {k: statistics.median(v) for k, v in times.items()}


def bench(n: int, mutations: int, folder: Path) -> dict[str, str]:
    book = build(n)
    path = folder / f"skillbook-{n}.json"
    book.save_to_file(path)
    done = subprocess.run([sys.executable, __file__, "--child", str(path)], check=True, capture_output=True, text=True)
    got = json.loads(done.stdout)
    rest = (got["rss_load"] - got["rss_import"] - got["vectors_mb"]) * 1e6 / got["n"]
    ops = mutation_us(book, mutations)
    return {
        "skills": f"{n:,}",
        "load s (CPU)": f"{got['load_cpu_s']:.2f}",
        "RSS MB import / load": f"{got['rss_import']:.0f} / {got['rss_load']:.0f}",
        "vectors MB": f"{got['vectors_mb']:.0f}",
        "RSS B/skill but vectors": f"{rest:,.0f}",
        "objects B/skill: skills + log": "{:,.0f} + {:,.0f} ({:.2f} entries)".format(
            got["skill_bytes"], got["log_bytes"], got["log_entries"]
        ),
        "add / update / tag µs": "{add_r:.1f} / {update_r:.1f} / {tag_r:.1f}".format(**ops),
        "without redaction": "{add_plain:.1f} / {update_plain:.1f} / {tag_plain:.1f}".format(**ops),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 50_000, 100_000])
    parser.add_argument("--mutations", type=int, default=1000)
    parser.add_argument("--smoke", action="store_true", help="500 skills, 50 mutations: checks that it runs")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child)
        return
    sizes, mutations = ([500], 50) if args.smoke else (args.sizes, args.mutations)
    print(f"load average at start: {load_average()}")
    rows = []
    with tempfile.TemporaryDirectory(prefix="ace-memory-") as tmp:
        for n in sizes:
            rows.append(bench(n, mutations, Path(tmp)))
            print(json.dumps(rows[-1], ensure_ascii=False), file=sys.stderr, flush=True)
    print(f"load average at end: {load_average()}")
    print_table(rows)


if __name__ == "__main__":
    main()
