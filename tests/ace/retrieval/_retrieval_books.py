"""Small skillbooks and a fixed query set shared by the retrieval tests."""

from __future__ import annotations

import random
from collections.abc import Sequence

from ace.core.skillbook import Skillbook
from ace.retrieval import SkillSearchIndex

WORDS = [f"{a}{b}" for a in ("ka", "lo", "mi", "nu", "pe") for b in range(40)]


def small_book(n: int, seed: int = 0) -> Skillbook:
    """`n` skills of 5-15 random words, two in three in `context` (with an insight), the rest `harness`."""
    rng = random.Random(seed)
    sb = Skillbook()
    for i in range(n):
        issue = " ".join(rng.choice(WORDS) for _ in range(rng.randint(5, 15)))
        sb.add_skill("context" if i % 3 else "harness", issue, [f"kw{i % 7}"], f"do step {i}" if i % 3 else None)
    return sb


def search_results(
    sb: Skillbook, index: SkillSearchIndex, *, n: int = 12, exact: bool = False, keywords: Sequence[str] = ()
) -> list[list[str]]:
    """The top-5 ids of `n` fixed 6-word queries; every other one filtered on `harness` (and `keywords`)."""
    rng = random.Random(9)
    queries = [" ".join(rng.choice(WORDS) for _ in range(6)) for _ in range(n)]
    out = []
    for k, q in enumerate(queries):
        filters = {"section": "harness", "keywords": list(keywords) or None} if k % 2 else {}
        out.append([s.id for s in index.search(sb, q, top_k=5, exact=exact, **filters)])  # type: ignore[arg-type]
    return out
