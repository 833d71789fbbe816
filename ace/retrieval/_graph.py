"""The HNSW graph's helpers for `ace.retrieval._dense`: faiss itself (the `ann` extra) and the checks of a graph read
from a sidecar before it is searched."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from types import ModuleType
from typing import Any

import numpy as np
import numpy.typing as npt

from ace.core.storage import gc_paused

__all__ = ["byte_reader", "faiss_module", "graph_problem"]


def faiss_module() -> ModuleType | None:
    """faiss, when the `ace[ann]` extra is installed; `None` otherwise."""
    try:
        # Paused: the import makes enough objects to set off full collections, each walking every live object
        # (~0.5 s with 100,000 loaded skills, against ~50 ms in a fresh process).
        with gc_paused():
            return importlib.import_module("faiss")
    except ImportError:
        return None


def graph_problem(faiss: ModuleType, index: Any, dim: int, n_slots: int) -> str | None:
    """What makes a graph read from a file unfit to search, or `None`: faiss trusts its file, and a link to a vector
    that does not exist would make a search read (and write) out of bounds."""
    if not isinstance(index, faiss.IndexHNSW) or index.metric_type != faiss.METRIC_INNER_PRODUCT:
        return f"its graph is a {type(index).__name__}, not an inner-product HNSW index"
    if index.d != dim or index.ntotal != n_slots:
        return f"HNSW graph of {index.ntotal} vectors of dimension {index.d}, expected {n_slots}, {dim}"
    storage = faiss.downcast_index(index.storage)
    if (
        not isinstance(storage, faiss.IndexFlatCodes)
        or storage.ntotal != n_slots
        or storage.d != dim
        or storage.codes.size() != n_slots * storage.code_size
    ):
        return "its HNSW graph's vectors do not fit its size"
    hnsw = index.hnsw
    levels = faiss.vector_to_array(hnsw.levels).astype(np.int64)
    offsets = faiss.vector_to_array(hnsw.offsets).astype(np.int64)
    per_level = faiss.vector_to_array(hnsw.cum_nneighbor_per_level).astype(np.int64)
    size = int(hnsw.neighbors.size())
    links = faiss.rev_swig_ptr(hnsw.neighbors.data(), size) if size else np.zeros(0, dtype=np.int32)
    top = per_level.shape[0] - 1
    fits = (
        levels.shape == (n_slots,)
        and offsets.shape == (n_slots + 1,)
        and int(offsets[0]) == 0
        and int(offsets[-1]) == size
        and bool(((levels >= 1) & (levels <= top)).all())
        and bool((np.diff(offsets) == per_level[np.clip(levels, 0, top)]).all())
    )
    entry = int(hnsw.entry_point)
    if n_slots and fits:
        fits = 0 <= entry < n_slots and int(hnsw.max_level) == int(levels[entry]) - 1
    if not fits or (size and (int(links.min()) < -1 or int(links.max()) >= n_slots)):
        return "its HNSW graph's links do not fit its vectors"
    return None


def byte_reader(buffer: npt.NDArray[np.uint8]) -> Callable[[int], bytes]:
    """A `read(n)` over bytes in memory, for faiss's callback reader."""
    position = 0

    def read(n: int) -> bytes:
        nonlocal position
        chunk = buffer[position : position + n].tobytes()
        position += len(chunk)
        return chunk

    return read
