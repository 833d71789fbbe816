"""`TestEmbedder`: a deterministic, offline stand-in for unit tests and scale benchmarks."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from ace.embeddings.base import EmbeddingError, EmbeddingMatrix, l2_normalize

__all__ = ["TestEmbedder"]

_WORD = re.compile(r"[a-z0-9]+")


@dataclass
class TestEmbedder:
    """Hashed bag of words, L2-normalised: texts sharing words get a high cosine, no model involved.

    Each lowercase word adds +1 or -1 to one of `dimension` buckets chosen by a stable hash, so vectors
    are identical across processes and platforms. `calls` records every batch, so tests can assert what
    was (re-)embedded; `fail_on` makes any batch containing that substring raise `EmbeddingError`.
    """

    __test__ = False  # not a pytest test class

    dimension: int = 64
    model_name: str = "test-hashing"
    fail_on: str | None = None
    calls: list[list[str]] = field(default_factory=list[list[str]])

    def embed(self, texts: Sequence[str]) -> EmbeddingMatrix:
        """One hashed bag-of-words vector per text."""
        batch = list(texts)
        self.calls.append(batch)
        if self.fail_on is not None and any(self.fail_on in t for t in batch):
            raise EmbeddingError(f"{self.model_name}: refused to embed a text containing {self.fail_on!r}")
        out = np.zeros((len(batch), self.dimension), dtype=np.float32)
        for row, text in enumerate(batch):
            for word in _WORD.findall(text.lower()):
                digest = hashlib.blake2b(word.encode("utf-8"), digest_size=8).digest()
                value = int.from_bytes(digest, "little")
                out[row, value % self.dimension] += 1.0 if (value >> 63) & 1 else -1.0
        return l2_normalize(out)

    @property
    def embedded_texts(self) -> list[str]:
        """Every text embedded so far, in call order."""
        return [t for batch in self.calls for t in batch]
