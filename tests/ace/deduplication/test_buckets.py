"""The k-means bucketed pair search finds the planted near-duplicates the exact search finds."""

from __future__ import annotations

import numpy as np

from ace.deduplication._buckets import bucketed_pairs
from ace.deduplication.detector import similar_pairs_in_matrix


def _planted(n: int, copies: int, seed: int = 0) -> np.ndarray:
    """Clustered unit vectors (40 topics) with `copies` rows replaced by near-copies (cosine ~0.95) of others."""
    rng = np.random.default_rng(seed)
    topics = rng.standard_normal((40, 64)).astype(np.float32)
    v = 0.6 * topics[rng.integers(0, 40, n)] + rng.standard_normal((n, 64)).astype(np.float32)
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    src = rng.choice(n // 2, copies, replace=False)
    dst = n // 2 + rng.choice(n - n // 2, copies, replace=False)
    noisy = v[src] + 0.3 * rng.standard_normal((copies, 64)).astype(np.float32) / 8
    v[dst] = noisy / np.linalg.norm(noisy, axis=1, keepdims=True)
    return v


def test_bucketed_pairs_match_the_exact_pairs() -> None:
    v = _planted(4000, 40)
    exact = similar_pairs_in_matrix(v, 0.85, unit_rows=True)
    got = bucketed_pairs(v, 0.85)
    exact_set = set(zip(exact[0].tolist(), exact[1].tolist(), strict=True))
    got_set = set(zip(got[0].tolist(), got[1].tolist(), strict=True))
    assert len(exact_set) >= 40
    assert got_set <= exact_set  # never a pair below the threshold
    assert len(got_set & exact_set) / len(exact_set) >= 0.99
    assert (got[0] < got[1]).all()
    assert (np.diff(got[2]) <= 0).all()  # most similar first
    np.testing.assert_allclose(got[2], (v[got[0]] * v[got[1]]).sum(axis=1), atol=1e-5)


def test_bucketed_pairs_of_tiny_and_pairless_inputs() -> None:
    assert bucketed_pairs(_planted(3, 0)[:1], 0.9)[0].size == 0
    rng = np.random.default_rng(1)
    v = rng.standard_normal((500, 64)).astype(np.float32)
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    assert bucketed_pairs(v, 0.9)[0].size == 0
    first, second, _ = bucketed_pairs(np.vstack([v, v[:1]]), 0.99)
    assert list(zip(first.tolist(), second.tolist(), strict=True)) == [(0, 500)]
