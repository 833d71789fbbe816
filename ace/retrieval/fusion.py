"""Reciprocal Rank Fusion (k = 60) over a window per ranking, as Elasticsearch / OpenSearch (`rank_window_size`),
Azure AI Search and Weaviate define it: each ranking gives `1 / (k + rank)` to its first `RRF_WINDOW` items only.

Items are positions `0..m-1` in a fixed tie order (creation order of the skills): within a ranking, equal
scores rank in that order, and so do equal fused scores. `fuse_window` touches only each ranking's window (found by
a partition, not a sort), so no ranking needs the deep ranks of its other items; `fuse_window_full` is the reference
(every ranking sorted in full, then cut), and both give the same positions, bit for bit.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

__all__ = [
    "RRF_K",
    "RRF_WINDOW",
    "Boost",
    "Ranking",
    "best_prefix",
    "fuse_window",
    "fuse_window_full",
    "rrf_fuse",
    "window_of",
]

RRF_K = 60
RRF_WINDOW = 100
"""Items each ranking gives a share to (at least the `top_k` asked for). On the banking retrieval set the hybrid's
nDCG@10 is 0.371 at 100, 256, 1,000 and in full (0.372 at 50; docs/performance.md); a window needs only the exact
best 100 of the dense ranking, which probed lists find without scanning every row (`ace.retrieval._lists`), where
full RRF needed the deep ranks of the BM25 leaders among every cosine. 100 rather than 50: the same answers as full
RRF on more of the benchmark's queries at 5,000 skills, at little cost."""
_SAMPLED = 16
"""A ranking longer than `2 * _SAMPLED * depth` is first cut at the best of a sample of `~_SAMPLED * depth` scores."""
_IntArray = npt.NDArray[np.int64]
_FloatArray = npt.NDArray[np.float64]
Boost = tuple[_IntArray, _FloatArray]
"""An already fused share per position, added last (the keyword ranking's): (positions, ascending; their shares)."""


@dataclass(frozen=True)
class Ranking:
    """One ranked list: `items` (ascending positions) and their `scores`, higher is better."""

    items: _IntArray
    scores: npt.NDArray[np.floating]


def rrf_fuse(rankings: Sequence[tuple[_IntArray, _IntArray]], n: int, *, k: int = RRF_K) -> _FloatArray:
    """Reciprocal Rank Fusion: `sum(1 / (k + rank))` over the lists an item appears in (ranks start at 1).

    Each ranking is `(items, ranks)`; items absent from a list get nothing from it.
    """
    fused = np.zeros(n, dtype=np.float64)
    for items, ranks in rankings:
        fused[items] += 1.0 / (k + ranks.astype(np.float64))
    return fused


def _full_ranks(r: Ranking) -> tuple[_IntArray, _IntArray]:
    order = r.items[np.argsort(-r.scores, kind="stable")]
    return order, np.arange(1, order.shape[0] + 1, dtype=np.int64)


def _top_items(fused: _FloatArray, positions: _IntArray, top_k: int) -> _IntArray:
    """`top_k` positions by fused score, ties in position order (`positions` ascending); unranked ones never."""
    ranked = fused > 0
    positions, fused = positions[ranked], fused[ranked]
    if top_k < positions.size:
        # Everything tied with the k-th best stays in, so the stable sort breaks ties as a full sort would.
        kth = np.partition(fused, positions.size - top_k)[positions.size - top_k]
        keep = fused >= kth
        positions, fused = positions[keep], fused[keep]
    return positions[np.argsort(-fused, kind="stable")[:top_k]]


def window_of(r: Ranking, window: int) -> _IntArray:
    """The first `window` items of the ranking sorted in full (higher score first, ties in position order)."""
    return best_prefix(r, window)[:window]


def fuse_window(
    rankings: Sequence[Ranking], top_k: int, *, window: int, k: int = RRF_K, extra: Boost | None = None
) -> _IntArray:
    """RRF over a window per ranking: each ranking gives `1 / (k + rank)` to its first `window` items only, `extra`
    (`Boost`: the keyword ranking's shares) is added last; the `top_k` positions, best first.

    Touches only the windows' items and the `extra` ones: no pass over the rankings' other items but finding their
    first `window` (a partition). `fuse_window_full` is the same by a full sort of every ranking."""
    tops = [window_of(r, window) for r in rankings]
    labelled = [extra[0]] if extra is not None else []
    union = np.sort(np.concatenate([*tops, *labelled, np.zeros(0, dtype=np.int64)]))
    union = union[np.diff(union, prepend=-1) != 0]  # not `np.unique`: its first call imports for ~0.3 s
    fused = np.zeros(union.size, dtype=np.float64)
    for top in tops:  # in the order `rrf_fuse` adds them: the same sums, bit for bit
        fused[np.searchsorted(union, top)] += 1.0 / (k + np.arange(1, top.size + 1, dtype=np.int64).astype(np.float64))
    if extra is not None:
        fused[np.searchsorted(union, extra[0])] += extra[1]
    return _top_items(fused, union, top_k)


def fuse_window_full(
    rankings: Sequence[Ranking], m: int, top_k: int, *, window: int, k: int = RRF_K, extra: Boost | None = None
) -> _IntArray:
    """The reference for `fuse_window`: every ranking sorted in full and cut at `window`, fused over all `m`."""
    cut = [(items[:window], ranks[:window]) for items, ranks in (_full_ranks(r) for r in rankings)]
    fused = rrf_fuse(cut, m, k=k)
    if extra is not None:
        fused[extra[0]] += extra[1]
    return _top_items(fused, np.arange(m, dtype=np.int64), top_k)


def best_prefix(r: Ranking, depth: int) -> _IntArray:
    """The first items of the full ranking: at least `depth` of them, all ties of the last one included.

    A long ranking is cut first at the `depth`-th best score of an evenly spaced sample of it (no higher than the
    `depth`-th best of all), so that the partition runs over ~`_SAMPLED` times fewer scores."""
    n = r.items.size
    if n <= depth:
        return r.items[np.argsort(-r.scores, kind="stable")]
    scores, at = r.scores, None
    step = n // (_SAMPLED * depth)
    if step >= 2:
        sample = scores[::step]
        floor = np.partition(sample, sample.size - depth)[sample.size - depth]
        at = np.flatnonzero(scores >= floor)  # holds the sample's best `depth`: at least `depth` items
        scores = scores[at]
    threshold = np.partition(scores, scores.size - depth)[scores.size - depth]
    chosen = np.flatnonzero(scores >= threshold)
    if at is not None:
        chosen = at[chosen]
    return r.items[chosen[np.argsort(-r.scores[chosen], kind="stable")]]
