"""The bounded top-k fusion gives exactly the full-sort result, ties included."""

from __future__ import annotations

import numpy as np
import pytest

from ace.retrieval.fusion import Ranking, fuse_full, fuse_top_k


def _random_case(rng: np.random.Generator, m: int) -> tuple[list[Ranking], np.ndarray | None]:
    # Few distinct values so that ties (within a list and between fused scores) are frequent.
    levels = int(rng.integers(2, 50))
    dense = Ranking(np.arange(m, dtype=np.int64), rng.integers(0, levels, m).astype(np.float32))
    hits = np.flatnonzero(rng.random(m) < rng.uniform(0.0, 1.0))
    lexical = Ranking(hits.astype(np.int64), rng.integers(0, levels, hits.size).astype(np.float64))
    extra = None
    if rng.random() < 0.5:
        extra = np.where(rng.random(m) < 0.1, 1 / 61, 0.0)
    return [dense, lexical], extra


@pytest.mark.parametrize("seed", range(40))
def test_bounded_fusion_equals_full_sorting(seed: int) -> None:
    rng = np.random.default_rng(seed)
    m = int(rng.integers(1, 3000))
    rankings, extra = _random_case(rng, m)
    for top_k in (1, 5, 10):
        for depth in (1, 8, 64):
            expected = fuse_full(rankings, m, top_k, extra=extra)
            got = fuse_top_k(rankings, m, top_k, extra=extra, depth=depth)
            assert got.tolist() == expected.tolist()


def test_continuous_scores_and_a_single_ranking() -> None:
    rng = np.random.default_rng(1)
    m = 5000
    dense = Ranking(np.arange(m, dtype=np.int64), rng.standard_normal(m))
    lexical = Ranking(np.sort(rng.choice(m, 700, replace=False)).astype(np.int64), rng.random(700))
    for rankings in ([dense, lexical], [dense], [lexical]):
        assert fuse_top_k(rankings, m, 5).tolist() == fuse_full(rankings, m, 5).tolist()
    assert fuse_top_k([dense], m, 3).tolist() == np.argsort(-dense.scores)[:3].tolist()


@pytest.mark.parametrize("seed", range(30))
def test_contenders_found_among_the_prefixes_alone_give_the_full_result(
    seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Continuous scores with ties sprinkled in, a keyword-like `extra`: the bound that looks only at the
    prefixes' items (no pass over every position) is taken, and the answer is still the full sort's."""
    from ace.retrieval import fusion

    rng = np.random.default_rng(100 + seed)
    m = int(rng.integers(300, 4000))
    dense_scores = np.round(rng.standard_normal(m), int(rng.integers(1, 4))).astype(np.float32)
    hits = np.flatnonzero(rng.random(m) < rng.uniform(0.05, 1.0))
    lexical = Ranking(hits.astype(np.int64), np.round(rng.random(hits.size) * 10, 1))
    rankings = [Ranking(np.arange(m, dtype=np.int64), dense_scores), lexical]
    extra = np.where(rng.random(m) < 0.05, 1 / 61, 0.0) if seed % 2 else None
    slow_calls = []
    whole = fusion._all_contenders
    monkeypatch.setattr(fusion, "_all_contenders", lambda *a: slow_calls.append(1) or whole(*a))
    for top_k in (1, 5, 10):
        for depth in (16, 64, 256):
            got = fuse_top_k(rankings, m, top_k, extra=extra, depth=depth)
            assert got.tolist() == fuse_full(rankings, m, top_k, extra=extra).tolist()
    assert len(slow_calls) < 9  # most calls never looked at every position
