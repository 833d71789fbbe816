"""`RowBlocks`: float32 rows in blocks that never move, so that a skill can hold a view of its row of the index."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

__all__ = ["RowBlocks"]

_BLOCK_MAX = 16_384
"""The most rows a new block of the exact store holds (blocks grow geometrically up to it)."""

_F32 = npt.NDArray[np.float32]


class RowBlocks:
    """float32 rows in blocks that are never moved, and rows never written twice: a view of a row stays valid and
    unchanged for as long as anyone holds it. Blocks grow geometrically up to `_BLOCK_MAX` rows."""

    def __init__(self, dim: int) -> None:
        self.dim = dim
        self.blocks: list[_F32] = []
        self.count = 0
        """Rows appended so far."""
        self._held = 0
        self._block = 0
        """The block the next row goes to, which starts at row `_start`."""
        self._start = 0

    def reserve(self, n: int) -> None:
        """Room for `n` rows: a new block of what is missing, at least the rows held so far (up to `_BLOCK_MAX`)."""
        if n > self._held:
            rows = max(n - self._held, min(max(64, self._held), _BLOCK_MAX))
            self.blocks.append(np.zeros((rows, self.dim), dtype=np.float32))
            self._held += rows

    def append(self, row: _F32, *, view: bool = True) -> _F32 | None:
        """Store `row` as the next one; returns the stored row, read-only (with `view`)."""
        if self.count >= self._held:
            self.reserve(self.count + 1)
        while self.count >= self._start + self.blocks[self._block].shape[0]:
            self._start += self.blocks[self._block].shape[0]
            self._block += 1
        block, at = self.blocks[self._block], self.count - self._start
        block[at] = row
        self.count += 1
        if not view:
            return None
        stored: _F32 = block[at]
        stored.flags.writeable = False
        return stored

    def holds(self, vector: _F32) -> bool:
        """Whether `vector` is one of these rows."""
        at = vector.__array_interface__["data"][0]
        for block in self.blocks:
            start = block.__array_interface__["data"][0]
            if start <= at < start + block.nbytes:
                return True
        return False

    def parts(self, n: int) -> list[_F32]:
        """Rows `0 .. n - 1`, block after block."""
        parts, left = [], n
        for block in self.blocks:
            if left <= 0:
                break
            parts.append(block[:left])
            left -= block.shape[0]
        return parts
