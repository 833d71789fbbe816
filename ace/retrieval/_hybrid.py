"""The hybrid ranking of one search: dense and BM25 rankings of the candidate slots, fused by RRF over a window.

`exact=True` is the reference: every candidate gets its dense cosine in float32 (from the skills' own vectors when
the index searches an HNSW graph) and every ranking is sorted in full, then cut at the window (`fuse_window_full`),
at any size. The default gives the same top k from the float32 rows (`fuse_window` is proven equal); from
`_dense._QUANT_MIN` slots with SimSIMD, the dense window comes from probed k-means lists (`ace.retrieval._lists`:
approximate, measured against the reference in docs/performance.md); with an opt-in HNSW graph, from the graph's best.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import numpy as np
import numpy.typing as npt

import ace.retrieval.fusion as fusion
from ace.core.skillbook import Skillbook
from ace.retrieval._dense import DenseStore
from ace.retrieval._keywords import KeywordTable
from ace.retrieval._slots import TextColumn
from ace.retrieval.bm25 import BM25Index
from ace.retrieval.fusion import Boost, Ranking, best_prefix, fuse_window, fuse_window_full

__all__ = ["UnitRows", "exact_cosines", "hybrid_rank", "keyword_boost", "skill_unit_rows"]

_ROWS_BLOCK = 4096
_F32 = npt.NDArray[np.float32]
_I64 = npt.NDArray[np.int64]
UnitRows = Callable[[int], Iterator[_F32]]
"""`rows(n)`: the float32 unit vectors of slots `0 .. n - 1` in blocks (zeros for slots without one)."""


def hybrid_rank(
    dense: DenseStore,
    bm25: BM25Index,
    query_vec: _F32 | None,
    tokens: list[str],
    cand: _I64,
    pos: _I64,
    top_k: int,
    *,
    k: int,
    extra: Boost | None,
    exact: bool,
    unit_rows: UnitRows,
) -> _I64:
    """Positions in `cand` of the `top_k` best, best first (`cand`: slots in tie order; `pos`: each slot's position
    in `cand`, -1 for none)."""
    n, m = bm25.n_slots, cand.size
    window = max(fusion.RRF_WINDOW, top_k)
    lists: list[Ranking] = []
    if query_vec is not None:
        if exact and dense.approximate:
            lists.append(Ranking(np.arange(m, dtype=np.int64), exact_cosines(unit_rows, query_vec, n)[cand]))
        else:
            lists.append(dense.window(query_vec, n, cand, pos, window, exact=exact))
    if tokens:
        scores, hit = bm25.scores(tokens)
        if exact:
            matched = np.flatnonzero(hit[cand])
            lists.append(Ranking(matched, scores[cand[matched]]))
        else:
            lists.append(_lexical_window(scores, hit, pos, window))
    if exact:
        return fuse_window_full(lists, m, top_k, window=window, k=k, extra=extra)
    return fuse_window(lists, top_k, window=window, k=k, extra=extra)


def _lexical_window(scores: npt.NDArray[np.float64], hit: npt.NDArray[np.bool_], pos: _I64, window: int) -> Ranking:
    """The BM25 ranking's first `window` candidates (ties in position order), chosen among the slots: only those
    are moved to their positions (the full ranking would gather every matched candidate's score)."""
    matched = hit & (pos >= 0)
    allowed = np.where(matched, scores, -np.inf)
    if np.count_nonzero(matched) <= window:
        best = np.flatnonzero(matched)
    else:  # every slot scoring at least the `window`-th best: the ties of the last one too, whatever their order
        best = best_prefix(Ranking(np.arange(allowed.size, dtype=np.int64), allowed), window)
    items, kept = pos[best], allowed[best]
    first = np.lexsort((items, -kept))[:window]
    items, kept = items[first], kept[first]
    ascending = np.argsort(items)
    return Ranking(items[ascending], kept[ascending])


def keyword_boost(
    table: KeywordTable, alive: npt.NDArray[np.bool_], keywords: list[str], pos: _I64, k: int
) -> Boost | None:
    """The keyword ranking's RRF share per candidate: tied ranks by how many of `keywords` a skill carries (`pos`:
    each slot's position among the candidates, -1 for none)."""
    found = [table.slots(kw, lambda: alive) for kw in keywords]
    slots = np.concatenate([np.fromiter(hits, dtype=np.int64, count=len(hits)) for hits in found] or [pos[:0]])
    positions = np.sort(pos[slots])
    positions = positions[positions >= 0]
    if not positions.size:
        return None
    starts = np.flatnonzero(np.diff(positions, prepend=-1))  # each position once, with how many keywords it has
    counts = np.diff(np.append(starts, positions.size))
    # Tied ranks: every skill sharing the same number of keywords gets the same rank.
    ranks = 1 + np.searchsorted(np.sort(-counts), -counts, side="left")
    return positions[starts], 1.0 / (k + ranks.astype(np.float64))


def skill_unit_rows(skillbook: Skillbook, slot_ids: TextColumn, alive: npt.NDArray[np.bool_], dim: int) -> UnitRows:
    """`UnitRows` from the skills' own vectors (divided by their norms as the exact store does), 4,096 at a time."""

    def rows(n: int) -> Iterator[_F32]:
        for start in range(0, n, _ROWS_BLOCK):
            block = np.zeros((min(n, start + _ROWS_BLOCK) - start, dim), dtype=np.float32)
            for i in np.flatnonzero(alive[start : start + block.shape[0]]).tolist():
                skill = skillbook.get_skill(slot_ids[start + i])
                vec = skill.embedding if skill is not None else None
                norm = float(np.linalg.norm(vec)) if vec is not None else 0.0
                if vec is not None and norm > 0:
                    block[i] = vec / norm
            yield block

    return rows


def exact_cosines(unit_rows: UnitRows, query: _F32, n: int) -> npt.NDArray[np.float32]:
    """The float32 cosine of every slot's unit vector with `query`, computed as the exact store does (einsum)."""
    out = np.zeros(n, dtype=np.result_type(query.dtype, np.float32))
    at = 0
    for block in unit_rows(n):
        np.einsum("ij,j->i", block, query, out=out[at : at + block.shape[0]])
        at += block.shape[0]
    return out
