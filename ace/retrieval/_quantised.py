"""int8 codes of the dense store's unit rows, scanned to pick the few rows scored exactly.

Each row `x` is stored as `c = round(x / s)` with `s = max|x| / 127` (its own scale), so `q . x` is approximated by
`(q8 . c) s_q s` with the query quantised the same way: one SIMD int8 pass (SimSIMD, the `ann` extra) reads a
quarter of the float32 matrix's bytes (~2 ms at 100,000 x 384 against ~10 ms for float32). By Cauchy-Schwarz the
error is at most `|q| |x - s c| + |q - s_q q8| |s c| `: `bounds` gives it per row, so callers can prove which rows
need an exact score (`DenseStore.above`, and the dense window of a search: `ace.retrieval._lists`).
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from types import ModuleType
from typing import Any

import numpy as np
import numpy.typing as npt

from ace.core.npz import drop_resident

__all__ = ["Int8Codes", "Query8", "encode_query", "simsimd_module"]

_F32 = npt.NDArray[np.float32]
Query8 = tuple[npt.NDArray[np.int8], float, float, float]
"""A query as `encode_query` gives it: (int8 codes, 1 x d; scale; quantisation error; norm)."""
_CHUNK = 4096
_SLOP = 1e-5
"""Added to every bound: float32 rounding in the products and the scales."""


def simsimd_module() -> ModuleType | None:
    """SimSIMD, when the `ann` extra is installed; `None` otherwise."""
    try:
        return importlib.import_module("simsimd")
    except ImportError:
        return None


class Int8Codes:
    """int8 codes of rows `0 .. count - 1`, appended in order (rows never change once written)."""

    def __init__(self, dim: int) -> None:
        self.dim = dim
        self.count = 0
        self._codes = np.zeros((0, dim), dtype=np.int8)
        self._scales = np.zeros(0, dtype=np.float32)
        self._errors = np.zeros(0, dtype=np.float32)
        """Per row: `|x - s c|`, the quantisation error's norm."""

    @classmethod
    def from_arrays(cls, codes: npt.NDArray[Any], scales: npt.NDArray[Any], errors: npt.NDArray[Any]) -> Int8Codes:
        """Codes as `arrays` gave them, read back (shapes checked by the caller); `ValueError` for impossible
        scales or bounds (a bound too small would let `DenseStore.above` miss a row)."""
        if not (np.isfinite(scales).all() and (scales > 0).all() and np.isfinite(errors).all() and (errors >= 0).all()):
            raise ValueError("its int8 codes have scales or error bounds that cannot be")
        out = cls(int(codes.shape[1]))
        out._codes, out._scales, out._errors = codes, scales, errors
        out.count = int(codes.shape[0])
        return out

    def arrays(self, n: int) -> dict[str, npt.NDArray[np.generic]]:
        """Rows `0 .. n - 1` (`n <= count`) for a sidecar."""
        return {"codes": self._codes[:n], "code_scales": self._scales[:n], "code_errors": self._errors[:n]}

    def extend(self, parts: Sequence[_F32], n: int) -> None:
        """Encode rows `count .. n - 1`, given rows `0 .. n - 1` in `parts` (blocks in order)."""
        if n <= self.count:
            return
        if n > self._codes.shape[0]:
            cap = max(n, 2 * self._codes.shape[0])
            self._codes = np.resize(self._codes, (cap, self.dim))
            self._scales = np.resize(self._scales, cap)
            self._errors = np.resize(self._errors, cap)
        at = 0
        for part in parts:
            lo, hi = max(self.count, at), min(n, at + part.shape[0])
            for start in range(lo, hi, _CHUNK):  # a few MB of temporaries at a time
                stop = min(hi, start + _CHUNK)
                codes, scales, errors = _encode(np.asarray(part[start - at : stop - at], dtype=np.float32))
                self._codes[start:stop], self._scales[start:stop], self._errors[start:stop] = codes, scales, errors
            at += part.shape[0]
        self.count = n

    def decode(self, rows: npt.NDArray[np.int64]) -> _F32:
        """The rows `s c` these codes stand for (float32)."""
        decoded: _F32 = self._codes[rows].astype(np.float32) * self._scales[rows, None]
        return decoded

    def reordered(self, order: npt.NDArray[np.int64]) -> Int8Codes:
        """A copy whose row `i` is this one's row `order[i]`. Read in order a chunk at a time, each chunk's mapped
        pages let go again (`drop_resident`), so a mapped sidecar's codes are not all resident beside the copy."""
        out = Int8Codes(self.dim)
        n = int(order.size)
        where = np.empty(self.count, dtype=np.int64)
        where[order] = np.arange(n, dtype=np.int64)
        out._codes = np.empty((n, self.dim), dtype=np.int8)
        for start in range(0, self.count, _CHUNK):
            chunk = self._codes[start : min(self.count, start + _CHUNK)]
            out._codes[where[start : start + chunk.shape[0]]] = chunk
            drop_resident(chunk)
        out._scales, out._errors, out.count = self._scales[order], self._errors[order], n
        return out

    def rows_scores(self, simsimd: ModuleType, query: Query8, rows: npt.NDArray[np.int64]) -> tuple[_F32, _F32]:
        """`scores` of these rows only (their codes gathered, then one scan) for a query encoded by `encode_query`."""
        codes = np.take(self._codes, rows, axis=0)  # twice as fast as `self._codes[rows]`
        return self._scored(simsimd, query, codes, self._scales[rows], self._errors[rows])

    def ranges_scores(self, simsimd: ModuleType, query: Query8, ranges: Sequence[tuple[int, int]]) -> tuple[_F32, _F32]:
        """`scores` of the rows of these `(start, stop)` ranges, in order (their codes copied as blocks: ~4x faster
        than gathering as many rows one by one)."""
        if not ranges:
            return np.zeros(0, dtype=np.float32), np.zeros(0, dtype=np.float32)
        codes = np.concatenate([self._codes[lo:hi] for lo, hi in ranges])
        scales = np.concatenate([self._scales[lo:hi] for lo, hi in ranges])
        return self._scored(simsimd, query, codes, scales, np.concatenate([self._errors[lo:hi] for lo, hi in ranges]))

    def _scored(
        self, simsimd: ModuleType, query: Query8, codes: npt.NDArray[np.int8], scales: _F32, errors: _F32
    ) -> tuple[_F32, _F32]:
        q_codes, q_scale, q_error, q_norm = query
        if not codes.shape[0]:
            return np.zeros(0, dtype=np.float32), np.zeros(0, dtype=np.float32)
        dots = np.asarray(simsimd.cdist(q_codes, codes, metric="dot", threads=1), dtype=np.float32)
        approx: _F32 = dots[0] * (scales * q_scale)
        bound: _F32 = q_norm * errors + q_error * (1.0 + errors)
        return approx, bound + np.float32(_SLOP)

    def scores(self, simsimd: ModuleType, query: _F32) -> tuple[_F32, _F32]:
        """(approximate `query . row` of every row, the bound on each one's error)."""
        approx, error = self._approximate(simsimd, query)
        q_norm = float(np.linalg.norm(query))
        bound: _F32 = q_norm * self._errors[: self.count] + error * (1.0 + self._errors[: self.count])
        return approx, bound + np.float32(_SLOP)

    def _approximate(self, simsimd: ModuleType, query: _F32) -> tuple[_F32, float]:
        """(approximate `query . row` of every row, the query's own quantisation error)."""
        codes, scale, error = _encode(query[None, :])
        dots = np.asarray(simsimd.cdist(codes, self._codes[: self.count], metric="dot", threads=1), dtype=np.float32)
        approx: _F32 = dots[0] * (self._scales[: self.count] * scale[0])
        return approx, float(error[0])


def encode_query(query: _F32) -> Query8:
    """The query's int8 codes, scale, quantisation error and norm, for `rows_scores` / `ranges_scores`."""
    codes, scale, error = _encode(query[None, :])
    return codes, float(scale[0]), float(error[0]), float(np.linalg.norm(query))


def _encode(rows: _F32) -> tuple[npt.NDArray[np.int8], _F32, _F32]:
    peak = np.abs(rows).max(axis=1)
    scales = np.where(peak > 0, peak / 127.0, 1.0).astype(np.float32)
    codes = np.clip(np.rint(rows / scales[:, None]), -127, 127).astype(np.int8)
    errors = np.linalg.norm(rows - codes.astype(np.float32) * scales[:, None], axis=1).astype(np.float32)
    return codes, scales, errors
