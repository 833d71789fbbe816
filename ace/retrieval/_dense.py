"""The dense half of skill search: float32 rows (scanned first as int8 codes at scale), or an opt-in HNSW graph.

By default every candidate is scored from the float32 rows. From `_QUANT_MIN` slots, with the `ace[ann]` extra
(SimSIMD), the rows also have int8 codes (`ace.retrieval._quantised`): a search's dense window scans the codes of the
k-means lists it probes (`window`, `ace.retrieval._lists`) and scores the best in float32; similar pairs scan every
code and score in float32 each row its error bound cannot rule out (`above`: exact). An index built with `ann_min`
(e.g. `ANN_MIN`) moves its vectors at that size into a faiss `IndexHNSWSQ` (float16 codes, inner product, M=16): the
only copy of them, searched with a bitmap of the allowed slots (live, in the section), at a measured recall (0.91 of
the exact top 5 at 100,000). HNSW ids are slot numbers: slots are added in order and never reused; dead ones are
filtered out by the bitmap.
"""

from __future__ import annotations

import contextlib
import functools
import os
import weakref
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import numpy.typing as npt

from ace.core.npz import RowReader, Streamed, drop_resident
from ace.extras import missing_extra_message
from ace.retrieval._graph import byte_reader, faiss_module, graph_problem
from ace.retrieval._lists import ProbeLists, probe_window
from ace.retrieval._quantised import Int8Codes, simsimd_module
from ace.retrieval._rows import RowBlocks
from ace.retrieval.fusion import Ranking

__all__ = ["ANN_MIN", "DenseStore", "RowBlocks", "faiss_module", "graph_problem"]

ANN_MIN = 50_000
"""Live vectors from which an index built with `ann_min=ANN_MIN` (opt-in) moves to an HNSW graph (faiss installed):
its recall@5 against the exact answer was 0.91 at 100,000 skills, the int8 scan's 1.0 (docs/performance.md)."""
_HNSW_M = 16
_EF_CONSTRUCTION = 64
_EF_SEARCH = 128
_EXACT_BELOW = 4096
"""Fewer allowed slots than this are scored exactly even in HNSW mode (decoded from the float16 codes)."""
_DECODE_BLOCK = 4096
"""Rows decoded from the float16 codes at a time when `above` scores every candidate (6 MB as float32)."""
_DEPTH_MIN = 512
"""The first best-k list `above` asks the graph for (efSearch 512 / the share of slots allowed): at 100,000 skills
it found 0.96 of the planted near-duplicates' pairs, 0.93 at 64 (`benchmarks/dedup_scale.py`)."""
_DEPTH_MAX = 4096
"""Longest best-k list `above` asks the graph for before it scores every candidate."""

_QUANT_MIN = 16_384
"""Slots from which the rows get int8 codes (with SimSIMD, the `ann` extra): a search probes k-means lists of them
for its dense window (`window`) and `above` scans them all, scoring in float32 what the codes cannot rule out."""

_F32 = npt.NDArray[np.float32]
_I64 = npt.NDArray[np.int64]


class DenseStore:
    """Unit vectors by slot: float32 rows (exact), or a faiss HNSW index once `ann_min` live vectors exist.

    Exact rows read from a sidecar stay where they are (`_base`, mapped from the file and never written). Rows of
    slots added since go to `RowBlocks`, so a skill can hold its vector's row instead of a copy of its own: the
    unit row itself when dividing the vector by its norm changes no bit (`set` returns it), else a row of `_kept`
    (`keep`), a block store of such vectors as they are. A graph read from a mapped sidecar is a view of the file's
    bytes (faiss's zero-copy reader, checked on load): it moves into memory of its own only when a vector is added.
    """

    def __init__(self, dim: int, *, ann_min: int | None = ANN_MIN) -> None:
        self.dim = dim
        self.ann_min = ann_min
        """Live vectors from which to switch to HNSW; `None`: always exact."""
        self._base: _F32 = np.zeros((0, dim), dtype=np.float32)
        """Rows of slots `0 .. len(_base) - 1` as read from a sidecar; never written."""
        self._rows = RowBlocks(dim)
        """Rows of the later slots, from `len(_base)` on."""
        self._kept = RowBlocks(dim)
        """Vectors that are not exactly unit, as skills hold them (`keep`)."""
        self._hnsw: Any = None
        self._graph: npt.NDArray[np.uint8] | None = None
        """The sidecar bytes `_hnsw` is a view of; `None` when the graph owns its memory."""
        self._pending: list[_F32] = []
        """Vectors of slots `hnsw.ntotal ...` not yet added to the graph (added in one batch before a search)."""
        self._base_norms: _F32 | None = None
        """When set, `_base` holds the vectors as skills do (the vector cache's rows) and a slot's unit row is its
        row divided by its norm here: the same float32 division that made it, so the same bits."""
        self._base_rows: RowReader | None = None
        """Reads rows of `_base` from its file when it is mapped (`rows_of`)."""
        self._codes = Int8Codes(dim)
        """int8 codes of the exact rows, encoded at the first search that scans them (`_encoded`)."""
        self._lists: ProbeLists | None = None
        """k-means lists of the rows (`ace.retrieval._lists`), made at the first search that probes them."""

    @property
    def approximate(self) -> bool:
        """Whether searches go through the HNSW graph."""
        return self._hnsw is not None

    def set(self, slot: int, unit: _F32, *, row: bool = False) -> _F32 | None:
        """Store the vector of a new slot (slots arrive in increasing order, after any read from a sidecar); with
        `row`, returns its stored row (read-only, never changed) in exact mode."""
        if self._hnsw is not None:
            self._pending.append(unit)
            return None
        assert slot == self._base.shape[0] + self._rows.count, "slots arrive in order"
        return self._rows.append(unit, view=row)

    def keep(self, vector: _F32) -> _F32:
        """`vector` stored as it is (not as a unit row), compactly, for its skill to hold (read-only)."""
        kept = self._kept.append(vector)
        assert kept is not None
        return kept

    def reserve(self, n: int) -> None:
        """Room for `n` slots in the exact rows (one block for all that are missing, as a rebuild asks)."""
        if self._hnsw is None:
            self._rows.reserve(n - self._base.shape[0])

    def _exact(self, n_slots: int) -> list[_F32]:
        """The exact rows of slots `0 .. n_slots - 1`, part after part (base, then the blocks). A base of the vector
        cache's rows becomes its unit rows here, once, in memory of its own: what asks for every row (a scan
        without int8 codes, below `_QUANT_MIN` slots or without SimSIMD; an encoding) reads them all anyway."""
        if self._base_norms is not None:
            self._base = np.divide(self._base, self._base_norms[:, None], dtype=np.float32)
            self._base_norms, reader, self._base_rows = None, self._base_rows, None
            if reader is not None:
                reader.close()
        return self._stored(n_slots)

    def _to_encode(self, n_slots: int) -> list[_F32]:
        """`_exact`, for int8 codes to encode their missing rows: as stored when none of those is in the base."""
        return self._stored(n_slots) if self._codes.count >= self._base.shape[0] else self._exact(n_slots)

    def _stored(self, n_slots: int) -> list[_F32]:
        """The rows of slots `0 .. n_slots - 1` as stored, part after part (base, then the blocks)."""
        parts = [self._base[:n_slots], *self._rows.parts(n_slots - self._base.shape[0])]
        return [part for part in parts if part.shape[0]]

    def would_switch(self, n_live: int) -> bool:
        """Whether `n_live` live vectors make (or keep) this store an HNSW graph."""
        return self._hnsw is not None or (
            self.ann_min is not None and n_live >= self.ann_min and faiss_module() is not None
        )

    def maybe_switch(self, n_slots: int, n_live: int) -> RowBlocks | None:
        """Move the first `n_slots` vectors into an HNSW graph once `n_live` reaches `ann_min` (faiss installed);
        returns the unit rows it let go of, which skills may still hold (to move them to `keep`)."""
        if self._hnsw is not None or not self.would_switch(n_live):
            return None
        faiss = faiss_module()
        assert faiss is not None
        index = faiss.IndexHNSWSQ(self.dim, faiss.ScalarQuantizer.QT_fp16, _HNSW_M, faiss.METRIC_INNER_PRODUCT)
        index.hnsw.efConstruction = _EF_CONSTRUCTION
        index.train(np.zeros((1, self.dim), dtype=np.float32))  # fp16 needs no training data: this marks it trained
        for part in self._exact(n_slots):
            index.add(np.ascontiguousarray(part))
        self._hnsw = index
        rows, self._rows, self._base = self._rows, RowBlocks(self.dim), np.zeros((0, self.dim), dtype=np.float32)
        self._base_norms = None
        return rows

    def _encoded(self, n_slots: int) -> ModuleType | None:
        """SimSIMD, once the int8 codes hold every slot, in exact mode from `_QUANT_MIN` slots with SimSIMD installed;
        `None` otherwise (no scan)."""
        simsimd = simsimd_module() if self._hnsw is None and n_slots >= _QUANT_MIN else None
        if simsimd is not None and self._codes.count < n_slots:
            self._codes.extend(self._to_encode(n_slots), n_slots)
            drop_resident(self._base)  # the encoding read every mapped row: let the pages go again
        return simsimd

    def rows_of(self, slots: _I64, n_slots: int) -> _F32:
        """The exact rows of `slots` (a copy); those of a mapped sidecar read from its file (`RowReader`)."""
        out = np.empty((slots.size, self.dim), dtype=np.float32)
        at = 0
        for part in self._stored(n_slots):
            inside = (slots >= at) & (slots < at + part.shape[0])
            if at == 0 and self._base_norms is not None and self._base.shape[0]:
                taken = slots[inside]
                rows = self._base_rows.take(taken) if self._base_rows is not None else part[taken]
                out[inside] = rows / self._base_norms[taken, None]
            elif at == 0 and self._base_rows is not None and part.shape[0] == self._base.shape[0]:
                out[inside] = self._base_rows.take(slots[inside])
            else:
                out[inside] = part[slots[inside] - at]
            at += part.shape[0]
        return out

    def window(self, query: _F32, n_slots: int, cand: _I64, pos: _I64, window: int, *, exact: bool = False) -> Ranking:
        """The dense `Ranking` for RRF over a `window` (`fuse_window`): from `_QUANT_MIN` slots with SimSIMD (unless
        `exact`), the exact best `window` of the probed lists (`ace.retrieval._lists.probe_window`: approximate,
        measured); otherwise every candidate's cosine, or the HNSW graph's best `window`. `pos`: each slot's position
        in `cand`, -1 for none."""
        simsimd = None if exact or self._hnsw is not None or cand.size <= window else self._encoded(n_slots)
        if simsimd is None:
            return Ranking(*self.scores(query, n_slots, cand, window))
        lists = self._probe_lists(n_slots)
        rows = functools.partial(self.rows_of, n_slots=n_slots)
        return Ranking(*probe_window(lists, self._codes, simsimd, query, pos, cand.size / n_slots, window, rows))

    def _probe_lists(self, n_slots: int) -> ProbeLists:
        """The k-means lists of the codes of every slot (made, or made again once outgrown: ~1 s at 100,000)."""
        self._encoded(n_slots)
        if self._lists is None or self._lists.outgrown(n_slots) or self._lists.count > n_slots:
            self._lists = ProbeLists.build(self._codes, n_slots)
        self._lists.extend(self._codes, n_slots)
        return self._lists

    def _flush(self) -> None:
        if self._pending:
            self._own()
            self._hnsw.add(np.stack(self._pending))
            self._pending = []

    def _own(self) -> None:
        """Copy a graph that views a sidecar's bytes into memory of its own, so that it can grow."""
        if self._graph is None:
            return
        faiss = faiss_module()
        assert faiss is not None
        self._hnsw = faiss.read_index(faiss.PyCallbackIOReader(byte_reader(self._graph)))
        self._graph = None  # only now: the viewing graph is gone with the line above

    def scores(self, query: _F32, n_slots: int, cand: _I64, depth: int) -> tuple[_I64, npt.NDArray[np.floating]]:
        """Dense ranking over the candidate slots `cand`: (positions in `cand`, ascending; their cosines).

        Exact mode scores every candidate in float32. HNSW mode returns about the `depth` best, searched with a
        bitmap of `cand` (efSearch raised by the share of slots allowed), or scores all when there are few.
        """
        m = cand.size
        if self._hnsw is None and self._base_norms is not None and n_slots >= _QUANT_MIN and m <= depth:
            return np.arange(m, dtype=np.int64), np.einsum("ij,j->i", self.rows_of(cand, n_slots), query)
        if self._hnsw is None:
            # einsum's own single-threaded loop, not BLAS: a matrix-vector product is memory-bound, and a
            # multi-threaded sgemv slows down several-fold when other threads (parallel workers) share the cores.
            out = np.empty(n_slots, dtype=np.result_type(query.dtype, np.float32))
            at = 0
            for part in self._exact(n_slots):
                np.einsum("ij,j->i", part, query, out=out[at : at + part.shape[0]])
                at += part.shape[0]
            return np.arange(m, dtype=np.int64), out[cand]
        self._flush()
        if m <= _EXACT_BELOW:
            rows = self._hnsw.reconstruct_batch(cand)
            return np.arange(m, dtype=np.int64), rows @ query
        faiss = faiss_module()
        assert faiss is not None
        allowed = np.zeros(n_slots, dtype=np.bool_)
        allowed[cand] = True
        bits = np.packbits(allowed, bitorder="little")
        share = m / max(n_slots, 1)
        params = faiss.SearchParametersHNSW(
            sel=faiss.IDSelectorBitmap(n_slots, faiss.swig_ptr(bits)),
            efSearch=int(min(max(_EF_SEARCH, depth) / share, 4096)),
        )
        sims, labels = self._hnsw.search(query[None, :], depth, params=params)
        found = labels[0] >= 0
        labels, sims = labels[0][found], sims[0][found]
        position = np.full(n_slots, -1, dtype=np.int64)
        position[cand] = np.arange(m, dtype=np.int64)
        items = position[labels]
        order = np.argsort(items, kind="stable")
        return items[order], sims[order]

    def above(self, query: _F32, n_slots: int, cand: _I64, floor: float, *, own: int = -1) -> _I64:
        """The slots of `cand` whose cosine with the unit `query` is `floor` or more (in no particular order).

        Exact mode scores every candidate (one matrix-vector product, no copy of the rows). HNSW mode asks the graph
        for the best `k` (512, then 2,048) while all `k` pass: approximate (its recall on planted near-duplicates:
        `benchmarks/dedup_scale.py`). Scored exactly from the float16 codes instead, in blocks: few candidates
        (`_EXACT_BELOW`), a list still full at `_DEPTH_MAX`, and a search that did not find `own` (the query's own
        slot: the graph leaves a few percent of its vectors hard to reach). HNSW cosines are float16's (~1e-3 off):
        callers lower `floor` by a margin and score the hits again.
        """
        scanned = self._codes.scores(simsimd, query) if (simsimd := self._encoded(n_slots)) is not None else None
        if scanned is not None:  # exact: every row the bounds cannot rule out is scored in float32
            approx, bound = scanned
            maybe = cand[approx[cand] + bound[cand] >= floor]
            scored: _I64 = maybe[np.einsum("ij,j->i", self.rows_of(maybe, n_slots), query) >= floor]
            return scored
        depth = _DEPTH_MIN
        while depth <= _DEPTH_MAX:
            items, sims = self.scores(query, n_slots, cand, depth)
            if self._hnsw is None or cand.size <= _EXACT_BELOW:
                exact: _I64 = cand[items[sims >= floor]]
                return exact
            hit: _I64 = cand[items[sims >= floor]]
            if own >= 0 and own not in hit:
                break  # the graph did not lead to the query's own skill: it may have missed its neighbours too
            if items.size < depth or float(sims.min()) < floor:
                return hit
            depth *= 4
        hits = [np.zeros(0, dtype=np.int64)]
        for start in range(0, cand.size, _DECODE_BLOCK):  # every candidate, a few MB of decoded rows at a time
            part = cand[start : start + _DECODE_BLOCK]
            hits.append(part[self._hnsw.reconstruct_batch(part) @ query >= floor])
        return np.concatenate(hits)

    # ----------------------------------------------------------- persistence
    def state(self, n_slots: int, *, vectors: bool = True) -> dict[str, npt.NDArray[np.generic] | Streamed]:
        """The vectors for a sidecar: `vectors` (float32 rows, written in parts; left out without `vectors`: the
        sidecar names the rows of the vector cache instead) and, from `_QUANT_MIN` slots with SimSIMD, their int8
        codes (`codes`, `code_scales`, `code_errors`: encoding them at the first search after a load would cost ~1 s
        at 100,000); or `hnsw` (faiss's serialised index, a snapshot: the graph may grow before the sidecar is
        written)."""
        if self._hnsw is None:
            out: dict[str, npt.NDArray[np.generic] | Streamed] = {}
            if vectors:
                parts = self._exact(n_slots)
                out["vectors"] = parts[0] if len(parts) == 1 else np.zeros((0, self.dim), dtype=np.float32)
            if vectors and len(parts) > 1:
                out["vectors"] = Streamed((n_slots, self.dim), np.dtype(np.float32), _parts(parts))
            if n_slots >= _QUANT_MIN and simsimd_module() is not None:
                lists = self._probe_lists(n_slots)  # encodes the missing codes first
                out.update(self._codes.arrays(n_slots))
                out.update(lists.arrays(n_slots))
            return out
        self._flush()
        faiss = faiss_module()
        assert faiss is not None
        return {"hnsw": faiss.serialize_index(self._hnsw)}

    @classmethod
    def from_state(
        cls,
        state: Mapping[str, npt.NDArray[np.generic]],
        dim: int,
        n_slots: int,
        *,
        ann_min: int | None,
        graph: AbstractContextManager[Callable[[int], bytes]] | None = None,
        rows_from: tuple[Path, os.stat_result] | None = None,
    ) -> DenseStore:
        """A store from `state()` output as read from a sidecar: `vectors`, or the HNSW graph, viewed in place when
        `hnsw` is there (mapped) and else read from `graph` (a `read(n)`); raises `ValueError` when it does not fit
        (or needs faiss, absent)."""
        store = cls(dim, ann_min=ann_min)
        mapped = state.get("hnsw")
        if graph is None and mapped is None:
            matrix = np.asarray(state.get("vectors"))
            if matrix.dtype != np.float32 or matrix.shape != (n_slots, dim):
                raise ValueError(f"vectors of shape {matrix.shape}, expected ({n_slots}, {dim}) float32")
            store._base = matrix
            norms = state.get("vector_norms")
            if norms is not None:
                store._base_norms = np.asarray(norms, dtype=np.float32)
            reader = RowReader.reader(matrix, *rows_from) if rows_from is not None else None
            if reader is not None:
                store._base_rows = reader
                weakref.finalize(store, reader.close)
            if "codes" in state:
                store._codes = Int8Codes.from_arrays(state["codes"], state["code_scales"], state["code_errors"])
            if "list_of" in state:
                store._lists = ProbeLists.from_arrays(state)
            return store
        faiss = faiss_module()
        if faiss is None:
            raise ValueError(f"the index holds an HNSW graph, and {missing_extra_message('ann')}")
        if ann_min is None:
            raise ValueError("the index holds an HNSW graph and approximate search is off (ann_min=None)")
        try:
            view = np.asarray(mapped, dtype=np.uint8) if mapped is not None else None
            if view is not None and hasattr(faiss, "ZeroCopyIOReader"):
                index = faiss.read_index(faiss.ZeroCopyIOReader(faiss.swig_ptr(view), view.size))
                store._graph = view
            else:
                source = contextlib.nullcontext(byte_reader(view)) if view is not None else graph
                assert source is not None
                with source as read:
                    index = faiss.read_index(faiss.PyCallbackIOReader(read))
        except Exception as e:  # faiss's RuntimeError, or the zip member's CRC error (BadZipFile)
            raise ValueError(f"its HNSW graph cannot be read ({type(e).__name__}: {e})") from None
        problem = graph_problem(faiss, index, dim, n_slots)
        if store._graph is not None:
            drop_resident(store._graph)  # the check touched the graph's links: let the pages go again
        if problem is not None:
            raise ValueError(problem)
        store._hnsw = index
        return store


def _parts(parts: list[_F32]) -> Callable[[Callable[[Any], object]], None]:
    def fill(write: Callable[[Any], object]) -> None:
        for part in parts:
            write(np.ascontiguousarray(part).data)

    return fill
