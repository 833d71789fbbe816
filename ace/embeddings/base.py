"""The `Embedder` protocol every embedding backend implements, and the checks on what it returns."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from ace.exceptions import RunError

__all__ = ["Embedder", "EmbeddingError", "EmbeddingMatrix", "check_embeddings", "l2_normalize"]

EmbeddingMatrix = npt.NDArray[np.float32]
"""A `(n_texts, dimension)` float32 matrix, one row per input text."""


class EmbeddingError(RunError):
    """Texts could not be embedded (the backend failed or returned something unusable)."""


@runtime_checkable
class Embedder(Protocol):
    """Turns a batch of texts into a float32 matrix, one row per text.

    Implementations are thread-safe and deterministic for a given `model_name`: two vectors may only be
    compared when they come from the same `model_name`.
    """

    @property
    def model_name(self) -> str:
        """Identifies the vector space; a skillbook re-embeds everything when it changes."""
        ...

    @property
    def dimension(self) -> int:
        """Length of every vector this embedder returns."""
        ...

    def embed(self, texts: Sequence[str]) -> EmbeddingMatrix:
        """Embed `texts` (in order); raise `EmbeddingError` when they cannot be embedded."""
        ...


def l2_normalize(matrix: npt.NDArray[np.floating]) -> EmbeddingMatrix:
    """Rows scaled to unit length (all-zero rows stay zero), as a new float32 matrix."""
    out = np.asarray(matrix, dtype=np.float32)
    norms = np.linalg.norm(out, axis=1, keepdims=True)
    result: EmbeddingMatrix = np.divide(out, norms, out=np.zeros_like(out), where=norms > 0)
    return result


def check_embeddings(matrix: object, *, n_texts: int, dimension: int, model_name: str) -> EmbeddingMatrix:
    """`matrix` as a C-contiguous float32 `(n_texts, dimension)` array of finite numbers, or `EmbeddingError`."""
    try:
        arr = np.ascontiguousarray(matrix, dtype=np.float32)
    except (TypeError, ValueError) as e:
        raise EmbeddingError(f"embedder {model_name!r} returned something that is not a matrix: {e}") from e
    if arr.shape != (n_texts, dimension):
        raise EmbeddingError(
            f"embedder {model_name!r} returned shape {arr.shape} for {n_texts} text(s); expected "
            f"({n_texts}, {dimension}): check that its `dimension` matches the model"
        )
    if not np.isfinite(arr).all():
        raise EmbeddingError(f"embedder {model_name!r} returned NaN or infinite values")
    return arr
