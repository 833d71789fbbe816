"""Similar-pair detection: every pair of active skills in a section whose embeddings' cosine passes a threshold.

Up to `EXACT_PAIRS_MAX` skills per section, vectors are compared with blocked numpy matrix products
(`block x block` tiles of the upper triangle), so memory stays bounded: one 1,024 x 1,024 tile at a time. Above
it, all pairs would cost O(n^2) (21 s at 100,000 skills), so the rows are first grouped into k-means buckets and
compared exactly only within nearby buckets (`ace.deduplication._buckets`: ~8 n sqrt(n) products; its recall of
the planted near-duplicates is measured by `benchmarks/scale.py`).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from ace.core.skill import Section, validate_section
from ace.core.skillbook import Skillbook
from ace.deduplication._buckets import bucketed_pairs
from ace.embeddings.base import Embedder, l2_normalize
from ace.exceptions import SkillbookError
from ace.retrieval.index import search_index

__all__ = ["DEFAULT_THRESHOLD", "EXACT_PAIRS_MAX", "SimilarPair", "find_similar_pairs", "similar_pairs_in_matrix"]

DEFAULT_THRESHOLD = 0.85
EXACT_PAIRS_MAX = 20_000
"""Largest section compared pair by pair; larger ones go through k-means buckets (approximate, near-linear)."""
_BLOCK = 1024
_SECTIONS: tuple[Section, ...] = ("context", "harness")


@dataclass(frozen=True)
class SimilarPair:
    """Two skills of one section whose embeddings have cosine similarity `similarity`."""

    first_id: str
    second_id: str
    similarity: float
    section: Section

    @property
    def key(self) -> frozenset[str]:
        """Order-free identity of the pair, as used for decisions already taken."""
        return frozenset((self.first_id, self.second_id))


def similar_pairs_in_matrix(
    vectors: npt.NDArray[np.floating], threshold: float, *, block: int = _BLOCK, unit_rows: bool = False
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64], npt.NDArray[np.float32]]:
    """All `(i, j, cosine)` with `i < j` and cosine >= `threshold` among the rows, most similar first.

    Rows are L2-normalised here (into a copy) unless `unit_rows` says they already are; ties keep
    `(i, j)` order. Memory is `block**2` floats plus the hits.
    """
    if block < 1:
        raise ValueError(f"block must be >= 1, got {block}")
    unit = np.asarray(vectors, dtype=np.float32) if unit_rows else l2_normalize(np.asarray(vectors))
    n = unit.shape[0]
    rows: list[npt.NDArray[np.int64]] = []
    cols: list[npt.NDArray[np.int64]] = []
    sims: list[npt.NDArray[np.float32]] = []
    for a in range(0, n, block):
        left = unit[a : a + block]
        for b in range(a, n, block):
            tile = left @ unit[b : b + block].T
            i, j = np.nonzero(tile >= threshold)
            if a == b:  # a diagonal tile: keep the upper triangle, no self-pairs
                upper = i < j
                i, j = i[upper], j[upper]
            if i.size:
                rows.append(i.astype(np.int64) + a)
                cols.append(j.astype(np.int64) + b)
                sims.append(tile[i, j])
    if not rows:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty.copy(), np.zeros(0, dtype=np.float32)
    i_all, j_all, s_all = np.concatenate(rows), np.concatenate(cols), np.concatenate(sims)
    order = np.lexsort((j_all, i_all, -s_all))
    return i_all[order], j_all[order], s_all[order]


def find_similar_pairs(
    skillbook: Skillbook,
    *,
    threshold: float = DEFAULT_THRESHOLD,
    section: Section | None = None,
    keep_pairs: Iterable[Collection[str]] = (),
    embedder: Embedder | None = None,
    block: int = _BLOCK,
    exact_max: int = EXACT_PAIRS_MAX,
) -> list[SimilarPair]:
    """Pairs of active skills in the same section with cosine >= `threshold`, most similar first.

    Missing vectors are computed first (the same lazy, cached embedding as search, with `embedder` or
    the skillbook's search embedder). `keep_pairs` are pairs already decided KEEP, given as any
    two-element collections of skill ids (order does not matter); they are skipped. A section of more than
    `exact_max` skills is searched through k-means buckets (see the module docstring).
    """
    if not -1.0 <= threshold <= 1.0:
        raise SkillbookError(f"threshold must be a cosine between -1 and 1, got {threshold!r}")
    decided = {frozenset(p) for p in keep_pairs}
    search_index(skillbook, embedder).sync(skillbook)
    sections = _SECTIONS if section is None else (validate_section(section),)
    found: list[SimilarPair] = []
    for sec in sections:
        with skillbook.locked():
            skills = [s for s in skillbook.skills(section=sec) if s.embedding is not None]
            ids = [s.id for s in skills]
            matrix = np.stack([s.embedding for s in skills if s.embedding is not None]) if skills else None
        if matrix is None or len(ids) < 2:
            continue
        norms = np.linalg.norm(matrix, axis=1, keepdims=True)
        np.divide(matrix, norms, out=matrix, where=norms > 0)  # in place: one copy of the vectors, not two
        if len(ids) > exact_max:
            first, second, sims = bucketed_pairs(matrix, threshold)
        else:
            first, second, sims = similar_pairs_in_matrix(matrix, threshold, block=block, unit_rows=True)
        for i, j, sim in zip(first.tolist(), second.tolist(), sims.tolist(), strict=True):
            if frozenset((ids[i], ids[j])) not in decided:
                found.append(SimilarPair(ids[i], ids[j], float(sim), sec))
    found.sort(key=lambda p: (-p.similarity, p.first_id, p.second_id))
    return found
