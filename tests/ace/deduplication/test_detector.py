"""Similar-pair detection: blocked matrix products agree with a brute-force loop; sections and KEEP respected."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from ace.core.skillbook import Skillbook
from ace.deduplication.detector import find_similar_pairs, similar_pairs_in_matrix
from ace.embeddings import TestEmbedder
from ace.exceptions import SkillbookError


def brute_force(vectors: np.ndarray, threshold: float) -> list[tuple[int, int, float]]:
    unit = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    pairs = []
    for i, j in itertools.combinations(range(len(unit)), 2):
        sim = float(np.dot(unit[i].astype(np.float64), unit[j].astype(np.float64)))
        if sim >= threshold:
            pairs.append((i, j, sim))
    return sorted(pairs, key=lambda p: (-p[2], p[0], p[1]))


def planted(n: int, dim: int, seed: int) -> np.ndarray:
    """Random vectors with some near-copies (noise of several sizes) so there are pairs at many similarities."""
    rng = np.random.default_rng(seed)
    base = rng.standard_normal((n, dim)).astype(np.float32)
    for k in range(0, n - 1, 3):
        base[k + 1] = base[k] + rng.uniform(0.05, 0.8) * rng.standard_normal(dim)
    return base


@pytest.mark.parametrize(("block", "threshold"), [(7, 0.85), (16, 0.6), (1000, 0.85), (5, 0.95)])
def test_blocked_pairs_equal_brute_force_on_random_data(block: int, threshold: float) -> None:
    vectors = planted(90, 24, seed=block)
    i, j, sims = similar_pairs_in_matrix(vectors, threshold, block=block)
    expected = brute_force(vectors, threshold)
    assert len(expected) > 5  # the planted pairs are there
    assert list(zip(i.tolist(), j.tolist(), strict=True)) == [(a, b) for a, b, _ in expected]
    np.testing.assert_allclose(sims, [s for _, _, s in expected], atol=1e-5)
    assert (np.diff(sims) <= 0).all()  # most similar first


def test_no_pairs_and_negative_threshold_edge_cases() -> None:
    rng = np.random.default_rng(0)
    vectors = rng.standard_normal((20, 64)).astype(np.float32)
    assert similar_pairs_in_matrix(vectors, 0.99)[0].size == 0
    i, j, _ = similar_pairs_in_matrix(vectors, -1.0, block=6)  # every pair, never a self-pair
    assert sorted(zip(i.tolist(), j.tolist(), strict=True)) == list(itertools.combinations(range(20), 2))
    with pytest.raises(ValueError, match="block"):
        similar_pairs_in_matrix(vectors, 0.5, block=0)


def _book() -> Skillbook:
    sb = Skillbook()
    sb.add_skill("context", "Refund requests need the booking reference", ["refund"], "Ask for the reference")
    sb.add_skill("context", "Refund requests need the booking reference number", ["refund"], "Ask for the reference")
    sb.add_skill("context", "Seat maps time out on long flights", ["seats"], "Retry once")
    sb.add_skill("harness", "Refund requests need the booking reference", ["refund"])  # same text, other section
    sb.add_skill("context", "Refund requests need the booking reference", ["refund"], "Ask for the reference")
    return sb


def test_pairs_stay_within_a_section_most_similar_first() -> None:
    sb = _book()
    pairs = find_similar_pairs(sb, threshold=0.85, embedder=TestEmbedder())
    keys = [tuple(sorted(p.key)) for p in pairs]
    assert keys[0] == ("context-00001", "context-00004")  # identical texts first
    assert set(keys) == {
        ("context-00001", "context-00004"),
        ("context-00001", "context-00002"),
        ("context-00002", "context-00004"),
    }
    assert all(p.section == "context" for p in pairs)
    assert [p.similarity for p in pairs] == sorted((p.similarity for p in pairs), reverse=True)
    assert pairs[0].similarity == pytest.approx(1.0, abs=1e-5)
    assert find_similar_pairs(sb, section="harness", embedder=TestEmbedder()) == []


def test_keep_pairs_and_inactive_skills_are_skipped() -> None:
    sb, emb = _book(), TestEmbedder()
    kept = find_similar_pairs(sb, keep_pairs=[("context-00004", "context-00001")], embedder=emb)
    assert {tuple(sorted(p.key)) for p in kept} == {
        ("context-00001", "context-00002"),
        ("context-00002", "context-00004"),
    }
    sb.remove_skill("context-00002", "merged")
    assert [tuple(sorted(p.key)) for p in find_similar_pairs(sb, embedder=emb)] == [("context-00001", "context-00004")]


def test_threshold_must_be_a_cosine() -> None:
    with pytest.raises(SkillbookError, match="threshold"):
        find_similar_pairs(_book(), threshold=1.5, embedder=TestEmbedder())
