"""k-means lists over the dense rows, so that a query finds the exact best `window` of its dense ranking (all that RRF
over a window needs, `ace.retrieval.fusion.fuse_window`) without a pass over every row.

The rows are clustered once into about `sqrt(n)` lists (k-means on a sample of the int8 codes, decoded, then every
row assigned to its nearest centroid; later rows are assigned as they come). A query ranks the lists by an estimate
of the best cosine inside each, `q . c + PROBE_MARGIN * r / sqrt(d)` (`c` the centroid, `r` the farthest member's
distance from it, `d` the dimension), probes the best until it has seen `_MIN_PROBED` rows (more when a section
filter keeps only part of them), takes the `window`-th best exact cosine `t` among them, then probes every other
list whose estimate reaches `t`. Within the probed lists the best `window` are exact (int8 scan, then float32 for
every row whose error bound reaches the threshold). A row of a list left out whose cosine beats `t` is a miss: the
margin is chosen by measurement (docs/performance.md); the reference (`exact=True`) scores every row.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from ace.retrieval._quantised import Int8Codes, Query8, encode_query

__all__ = ["PROBE_MARGIN", "ProbeLists", "probe_window"]

PROBE_MARGIN = 3.0
"""How far above its centroid's cosine a list's best member may lie, in units of `r / sqrt(d)` (the spread of a
member's offset from the centroid along a random direction: `r` the list's radius, `d` the dimension)."""
_MIN_PROBED = 2048
"""Rows probed before the window's threshold is taken (divided by the share of rows the search allows)."""
_SLACK = 64
"""Rows scored exactly beyond the window's by the int8 scan, before the error bounds decide the rest."""
_TAIL_MIN = 4096
"""Rows assigned after the list-ordered copy was made that are gathered one by one before it is made again."""
_ITERATIONS = 8
_SAMPLE_PER_LIST = 40
_BLOCK = 8192
"""Rows decoded and assigned at a time (12 MB as float32)."""
_SEED = 0

_F32 = npt.NDArray[np.float32]
_I64 = npt.NDArray[np.int64]


@dataclass(frozen=True)
class _Ordered:
    """The int8 codes in list order: `codes` row `i` is row `rows[i]`, list `l` is `starts[l] .. starts[l + 1]`, for the
    first `count` rows; rows from `count` on (assigned since) are read from the codes themselves."""

    codes: Int8Codes
    rows: _I64
    starts: _I64
    count: int

    def scores(
        self, simsimd: Any, query: Query8, lists: _I64, list_of: npt.NDArray[np.int32], codes: Int8Codes
    ) -> tuple[_I64, _F32, _F32]:
        """(rows of these lists, their approximate cosines, the bounds on their errors)."""
        starts, stops = self.starts[lists].tolist(), self.starts[lists + 1].tolist()
        ranges = [(lo, hi) for lo, hi in zip(starts, stops, strict=True) if hi > lo]
        approx, bound = self.codes.ranges_scores(simsimd, query, ranges)
        rows = np.concatenate([self.rows[lo:hi] for lo, hi in ranges] or [lists[:0]])
        if list_of.shape[0] > self.count:
            tail = self.count + np.flatnonzero(np.isin(list_of[self.count :], lists))
            more_approx, more_bound = codes.rows_scores(simsimd, query, tail)
            rows = np.concatenate([rows, tail])
            approx, bound = np.concatenate([approx, more_approx]), np.concatenate([bound, more_bound])
        return rows, approx, bound

    def sizes(self, list_of: npt.NDArray[np.int32]) -> _I64:
        """Rows per list."""
        sizes: _I64 = np.diff(self.starts)
        if list_of.shape[0] > self.count:
            sizes = sizes + np.bincount(list_of[self.count :], minlength=sizes.size)
        return sizes


class ProbeLists:
    """The list of each row (`list_of`), the lists' centroids and radii; rows `0 .. count - 1`."""

    def __init__(self, centroids: _F32, radii: _F32, list_of: npt.NDArray[np.int32]) -> None:
        self.centroids = centroids
        self.radii = radii
        self.list_of = list_of
        self._ordered: _Ordered | None = None
        """The codes in list order, made when first probed (`ordered`)."""

    @property
    def count(self) -> int:
        """Rows assigned to a list."""
        return int(self.list_of.shape[0])

    def outgrown(self, n: int) -> bool:
        """Whether `n` rows have outgrown the lists (4x the rows they were made for): time to cluster again."""
        return n > 4 * int(self.centroids.shape[0]) ** 2

    @classmethod
    def build(cls, codes: Int8Codes, n: int) -> ProbeLists:
        """Cluster rows `0 .. n - 1` of `codes` (k-means, `_ITERATIONS` rounds on a seeded sample)."""
        n_lists = max(1, round(math.sqrt(n)))
        rng = np.random.default_rng(_SEED)
        sample = codes.decode(np.sort(rng.choice(n, min(n, n_lists * _SAMPLE_PER_LIST), replace=False)))
        centroids = sample[rng.choice(sample.shape[0], n_lists, replace=False)].copy()
        for _ in range(_ITERATIONS):
            nearest = _nearest(sample, centroids)
            counts = np.bincount(nearest, minlength=n_lists)
            sums = np.zeros_like(centroids)
            np.add.at(sums, nearest, sample)
            filled = counts > 0  # an empty list keeps its centroid
            centroids[filled] = sums[filled] / counts[filled, None]
        empty = np.zeros(0, dtype=np.int32)
        lists = cls(centroids, np.zeros(n_lists, dtype=np.float32), empty)
        lists.extend(codes, n)
        return lists

    def extend(self, codes: Int8Codes, n: int) -> None:
        """Assign rows `count .. n - 1` to their nearest lists (widening the lists' radii)."""
        if n <= self.count:
            return
        parts = [self.list_of]
        for start in range(self.count, n, _BLOCK):
            rows = codes.decode(np.arange(start, min(n, start + _BLOCK)))
            nearest = _nearest(rows, self.centroids)
            far = np.linalg.norm(rows - self.centroids[nearest], axis=1).astype(np.float32)
            np.maximum.at(self.radii, nearest, far)
            parts.append(nearest.astype(np.int32))
        self.list_of = np.concatenate(parts)

    def ranked(self, query: _F32) -> tuple[_I64, _F32]:
        """(the lists, best estimate first; their estimates)."""
        spread = PROBE_MARGIN / math.sqrt(self.centroids.shape[1])
        upper = (self.centroids @ query + spread * self.radii).astype(np.float32)
        order = np.argsort(-upper, kind="stable").astype(np.int64)
        return order, upper[order]

    def ordered(self, codes: Int8Codes) -> _Ordered:
        """The codes of the rows in list order (a copy: 38 MB at 100,000 x 384), so that probing a list reads a block
        of them; rows assigned since are gathered one by one (`_Ordered.tail`) until they are an eighth of all."""
        made = self._ordered
        if made is None or self.count - made.count > max(_TAIL_MIN, self.count // 8):
            rows = np.argsort(self.list_of, kind="stable").astype(np.int64)
            counts = np.bincount(self.list_of, minlength=self.centroids.shape[0])
            starts = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
            made = self._ordered = _Ordered(codes.reordered(rows), rows, starts, self.count)
        return made

    def arrays(self, n: int) -> dict[str, npt.NDArray[np.generic]]:
        """Rows `0 .. n - 1` (`n <= count`) for a sidecar: `list_of`, `list_centroids`, `list_radii`."""
        return {"list_of": self.list_of[:n], "list_centroids": self.centroids, "list_radii": self.radii}

    @classmethod
    def from_arrays(cls, arrays: Mapping[str, npt.NDArray[Any]]) -> ProbeLists:
        """Lists as `arrays` gave them (shapes checked by the caller); `ValueError` for a row in no list or a radius
        that cannot be (the search would probe the wrong rows)."""
        centroids, radii, list_of = arrays["list_centroids"], arrays["list_radii"], arrays["list_of"]
        n_lists = centroids.shape[0]
        if not (np.isfinite(centroids).all() and np.isfinite(radii).all() and (radii >= 0).all()):
            raise ValueError("its probe lists have centroids or radii that cannot be")
        if list_of.size and (int(list_of.min()) < 0 or int(list_of.max()) >= n_lists):
            raise ValueError("its probe lists name a list that does not exist")
        return cls(np.asarray(centroids), np.array(radii, dtype=np.float32), np.asarray(list_of))


def _nearest(rows: _F32, centroids: _F32) -> npt.NDArray[np.intp]:
    """The nearest centroid of each row (Euclidean: the largest `x . c - |c|^2 / 2`)."""
    half = 0.5 * np.einsum("ij,ij->i", centroids, centroids)
    nearest: npt.NDArray[np.intp] = np.argmax(rows @ centroids.T - half, axis=1)
    return nearest


def probe_window(
    lists: ProbeLists,
    codes: Int8Codes,
    simsimd: Any,
    query: _F32,
    pos: _I64,
    share: float,
    window: int,
    exact_rows: Callable[[_I64], _F32],
) -> tuple[_I64, npt.NDArray[np.floating]]:
    """The best `window` of the probed rows allowed by `pos` (each row's position in the search's candidates, -1 for
    none; `share`: the share of rows allowed): (their positions, ascending; their exact cosines). `exact_rows(rows)`
    gives rows' float32 vectors."""
    order, upper = lists.ranked(query)
    ordered = lists.ordered(codes)
    encoded = encode_query(query)
    wanted = max(_MIN_PROBED, 4 * window) / max(share, 1e-9)
    first = int(np.searchsorted(np.cumsum(ordered.sizes(lists.list_of)[order]), wanted)) + 1
    found = [
        _best_in(*ordered.scores(simsimd, encoded, order[:first], lists.list_of, codes), query, pos, window, exact_rows)
    ]
    if first < order.size:
        kept = found[0][1]
        if kept.size >= window:
            threshold = np.partition(kept, kept.size - window)[kept.size - window]
            more = order[first:][upper[first:] >= threshold]
        else:
            more = order[first:]
        if more.size:
            scored = ordered.scores(simsimd, encoded, more, lists.list_of, codes)
            found.append(_best_in(*scored, query, pos, window, exact_rows))
    positions = np.concatenate([p for p, _ in found])
    scores = np.concatenate([s for _, s in found])
    best = np.lexsort((positions, -scores))[:window]  # higher first, ties in position order
    best = best[np.argsort(positions[best])]
    return positions[best], scores[best]


def _best_in(
    rows: _I64,
    approx: _F32,
    bound: _F32,
    query: _F32,
    pos: _I64,
    window: int,
    exact_rows: Callable[[_I64], _F32],
) -> tuple[_I64, npt.NDArray[np.floating]]:
    """(positions, exact cosines) of the allowed `rows` holding their best `window` by exact cosine: the best by the
    int8 scan (`approx`), and every other row whose error `bound` reaches the `window`-th best exact cosine of those."""
    at = pos[rows]
    allowed = at >= 0
    rows, at, approx, bound = rows[allowed], at[allowed], approx[allowed], bound[allowed]
    if rows.size <= window:
        return at, np.einsum("ij,j->i", exact_rows(rows), query)
    take = min(rows.size, window + _SLACK)
    chosen = np.argpartition(-approx, take - 1)[:take] if take < rows.size else np.arange(rows.size)
    exact = np.einsum("ij,j->i", exact_rows(rows[chosen]), query)
    if take < rows.size:
        threshold = np.partition(exact, exact.size - window)[exact.size - window]
        left = np.ones(rows.size, dtype=np.bool_)
        left[chosen] = False
        more = np.flatnonzero(left & (approx + bound >= threshold))
        if more.size:
            chosen = np.concatenate([chosen, more])
            exact = np.concatenate([exact, np.einsum("ij,j->i", exact_rows(rows[more]), query)])
    return at[chosen], exact
