"""The dense half of skill search: exact float32 products, or a faiss HNSW graph over float16 codes at scale.

Below `ANN_MIN` live vectors (or without faiss) every candidate is scored exactly, so results are those of a full
sort. From `ANN_MIN` on, with the `ace[ann]` extra installed, the vectors move into a faiss `IndexHNSWSQ` (float16
codes, inner product, M=16): the only copy of them, searched with a bitmap of the allowed slots (live, in the
section) in ~1-2 ms at 100,000 instead of ~7-30 ms, at a measured recall (`benchmarks/search.py`). HNSW ids are
slot numbers: slots are added in order and never reused; dead ones are filtered out by the bitmap.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from contextlib import AbstractContextManager
from types import ModuleType
from typing import Any

import numpy as np
import numpy.typing as npt

__all__ = ["ANN_MIN", "DenseStore", "faiss_module"]

ANN_MIN = 50_000
"""Live vectors from which the HNSW graph replaces exact search (when faiss is installed)."""
_HNSW_M = 16
_EF_CONSTRUCTION = 64
_EF_SEARCH = 128
_EXACT_BELOW = 4096
"""Fewer allowed slots than this are scored exactly even in HNSW mode (decoded from the float16 codes)."""

_F32 = npt.NDArray[np.float32]
_I64 = npt.NDArray[np.int64]


def faiss_module() -> ModuleType | None:
    """faiss, when the `ace[ann]` extra is installed; `None` otherwise."""
    try:
        return importlib.import_module("faiss")
    except ImportError:
        return None


class DenseStore:
    """Unit vectors by slot: a float32 matrix (exact), or a faiss HNSW index once `ann_min` live vectors exist."""

    def __init__(self, dim: int, *, ann_min: int | None = ANN_MIN) -> None:
        self.dim = dim
        self.ann_min = ann_min
        """Live vectors from which to switch to HNSW; `None`: always exact."""
        self._matrix: _F32 = np.zeros((64, dim), dtype=np.float32)
        self._hnsw: Any = None
        self._pending: list[_F32] = []
        """Vectors of slots `hnsw.ntotal ...` not yet added to the graph (added in one batch before a search)."""

    @property
    def approximate(self) -> bool:
        """Whether searches go through the HNSW graph."""
        return self._hnsw is not None

    @property
    def matrix(self) -> _F32 | None:
        """The exact float32 matrix (rows are slots), or `None` in HNSW mode."""
        return None if self._hnsw is not None else self._matrix

    def set(self, slot: int, unit: _F32) -> None:
        """Store the vector of a new slot (slots arrive in increasing order)."""
        if self._hnsw is not None:
            self._pending.append(unit)
            return
        if slot >= self._matrix.shape[0]:
            self.reserve(slot + 1)
        self._matrix[slot] = unit

    def reserve(self, n: int) -> None:
        """Room for `n` slots in the exact matrix (grown by doubling, or to `n` at once)."""
        if self._hnsw is not None or n <= self._matrix.shape[0]:
            return
        grown = np.zeros((max(n, 2 * self._matrix.shape[0]), self.dim), dtype=np.float32)
        grown[: self._matrix.shape[0]] = self._matrix
        self._matrix = grown

    def maybe_switch(self, n_slots: int, n_live: int) -> None:
        """Move the first `n_slots` vectors into an HNSW graph once `n_live` reaches `ann_min` (faiss installed)."""
        if self._hnsw is not None or self.ann_min is None or n_live < self.ann_min:
            return
        faiss = faiss_module()
        if faiss is None:
            return
        index = faiss.IndexHNSWSQ(self.dim, faiss.ScalarQuantizer.QT_fp16, _HNSW_M, faiss.METRIC_INNER_PRODUCT)
        index.hnsw.efConstruction = _EF_CONSTRUCTION
        index.train(self._matrix[:1])  # fp16 needs no training data; the call just marks the index trained
        index.add(np.ascontiguousarray(self._matrix[:n_slots]))
        self._hnsw = index
        self._matrix = np.zeros((0, self.dim), dtype=np.float32)

    def _flush(self) -> None:
        if self._pending:
            self._hnsw.add(np.stack(self._pending))
            self._pending = []

    def scores(self, query: _F32, n_slots: int, cand: _I64, depth: int) -> tuple[_I64, npt.NDArray[np.floating]]:
        """Dense ranking over the candidate slots `cand`: (positions in `cand`, ascending; their cosines).

        Exact mode scores every candidate. HNSW mode returns about the `depth` best, searched with a bitmap of
        `cand` (efSearch raised by the share of slots allowed), or scores all when there are few.
        """
        m = cand.size
        if self._hnsw is None:
            # einsum's own single-threaded loop, not BLAS: a matrix-vector product is memory-bound, and a
            # multi-threaded sgemv slows down several-fold when other threads (parallel workers) share the cores.
            dense = np.einsum("ij,j->i", self._matrix[:n_slots], query)[cand]
            return np.arange(m, dtype=np.int64), dense
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

    # ----------------------------------------------------------- persistence
    def state(self, n_slots: int) -> dict[str, npt.NDArray[np.generic]]:
        """The vectors as arrays for a sidecar: `vectors` (float32) or `hnsw` (faiss's serialised index)."""
        if self._hnsw is None:
            return {"vectors": self._matrix[:n_slots]}
        self._flush()
        faiss = faiss_module()
        assert faiss is not None
        return {"hnsw": faiss.serialize_index(self._hnsw)}

    @classmethod
    def from_state(
        cls,
        state: dict[str, npt.NDArray[np.generic]],
        dim: int,
        n_slots: int,
        *,
        ann_min: int | None,
        graph: AbstractContextManager[Callable[[int], bytes]] | None = None,
    ) -> DenseStore:
        """A store from `state()` output, the HNSW graph read from `graph` (a `read(n)`) when `vectors` is absent;
        raises `ValueError` when it does not fit (or needs faiss, absent)."""
        store = cls(dim, ann_min=ann_min)
        if graph is None:
            matrix = np.asarray(state.get("vectors"))
            if matrix.dtype != np.float32 or matrix.shape != (n_slots, dim):
                raise ValueError(f"vectors of shape {matrix.shape}, expected ({n_slots}, {dim}) float32")
            store._matrix = matrix
            return store
        faiss = faiss_module()
        if faiss is None or ann_min is None:
            raise ValueError("the index holds an HNSW graph: pip install 'agentic-context-engine[ann]' (the ann extra)")
        with graph as read:
            try:
                index = faiss.read_index(faiss.PyCallbackIOReader(read))
            except Exception as e:  # faiss's RuntimeError, or the zip member's CRC error (BadZipFile)
                raise ValueError(f"its HNSW graph cannot be read ({type(e).__name__}: {e})") from None
        if index.d != dim or index.ntotal != n_slots:
            raise ValueError(f"HNSW graph of {index.ntotal} vectors of dimension {index.d}, expected {n_slots}, {dim}")
        store._hnsw = index
        store._matrix = np.zeros((0, dim), dtype=np.float32)
        return store
