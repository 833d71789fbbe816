"""RRF over a window per ranking: the fast fusion, its reference and a brute-force definition agree, ties included."""

from __future__ import annotations

import numpy as np
import pytest

from ace.retrieval.fusion import Ranking, fuse_window, fuse_window_full, rrf_fuse


def _random_case(rng: np.random.Generator, m: int) -> tuple[list[Ranking], np.ndarray | None]:
    """Two rankings of `m` positions, and a dense `extra` share per position (or none)."""
    # Few distinct values so that ties (within a list, at the window's edge, between fused scores) are frequent.
    levels = int(rng.integers(2, 50))
    dense = Ranking(np.arange(m, dtype=np.int64), rng.integers(0, levels, m).astype(np.float32))
    hits = np.flatnonzero(rng.random(m) < rng.uniform(0.0, 1.0))
    lexical = Ranking(hits.astype(np.int64), rng.integers(0, levels, hits.size).astype(np.float64))
    extra = None
    if rng.random() < 0.5:
        extra = np.where(rng.random(m) < 0.1, 1 / 61, 0.0)
    return [dense, lexical], extra


def _brute_force(rankings: list[Ranking], m: int, top_k: int, window: int, extra: np.ndarray | None) -> list[int]:
    """The definition in plain Python: sort each ranking by (score desc, position), keep the first `window`, add
    `1 / (60 + rank)`, add `extra`; the `top_k` positions with a share by (fused desc, position)."""
    fused = [0.0] * m
    for r in rankings:
        ranked = sorted(zip(r.items.tolist(), r.scores.tolist(), strict=True), key=lambda p: (-p[1], p[0]))
        for rank, (item, _) in enumerate(ranked[:window], start=1):
            fused[item] += 1.0 / (60 + rank)
    if extra is not None:
        fused = [f + float(e) for f, e in zip(fused, extra, strict=True)]
    shared = [i for i in range(m) if fused[i] > 0]
    return sorted(shared, key=lambda i: (-fused[i], i))[:top_k]


@pytest.mark.parametrize("seed", range(40))
def test_windowed_fusion_equals_the_reference_and_the_definition(seed: int) -> None:
    rng = np.random.default_rng(seed)
    m = int(rng.integers(1, 1500))
    rankings, extra = _random_case(rng, m)
    for top_k in (1, 5, 10):
        for window in (1, 10, 100, 5000):
            window = max(window, top_k)
            expected = _brute_force(rankings, m, top_k, window, extra)
            boost = (np.flatnonzero(extra), extra[extra > 0]) if extra is not None else None
            assert fuse_window_full(rankings, m, top_k, window=window, extra=boost).tolist() == expected
            assert fuse_window(rankings, top_k, window=window, extra=boost).tolist() == expected


def test_a_window_as_long_as_the_rankings_is_full_rrf() -> None:
    rng = np.random.default_rng(1)
    m = 3000
    dense = Ranking(np.arange(m, dtype=np.int64), rng.standard_normal(m))
    lexical = Ranking(np.sort(rng.choice(m, 700, replace=False)).astype(np.int64), rng.random(700))
    full = rrf_fuse(
        [(r.items[np.argsort(-r.scores, kind="stable")], np.arange(1, r.items.size + 1)) for r in (dense, lexical)], m
    )
    assert fuse_window([dense, lexical], 5, window=m).tolist() == np.argsort(-full, kind="stable")[:5].tolist()
    assert fuse_window([dense], 3, window=100).tolist() == np.argsort(-dense.scores)[:3].tolist()


def test_an_item_beyond_every_window_gets_nothing() -> None:
    """Item 0 is second in both full rankings' tails but outside both windows: it cannot be fused in."""
    dense = Ranking(np.arange(4, dtype=np.int64), np.array([0.1, 0.9, 0.8, 0.05]))
    lexical = Ranking(np.array([0, 3], dtype=np.int64), np.array([1.0, 2.0]))
    assert fuse_window([dense, lexical], 4, window=1).tolist() == [1, 3]
    assert fuse_window_full([dense, lexical], 4, 4, window=1).tolist() == [1, 3]
