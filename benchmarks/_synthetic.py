"""Synthetic skillbooks for the scale benchmarks: Zipf-distributed words, realistic lengths, both sections."""

from __future__ import annotations

import hashlib
import random
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from ace.core.skillbook import Skillbook

__all__ = ["SyntheticEmbedder", "synthetic_queries", "synthetic_skillbook"]

_VOCAB = [f"{a}{b}" for a in ("ka", "lo", "mi", "nu", "pe", "ra", "si", "tu", "vo", "ze") for b in range(300)]
_KEYWORDS = [f"topic_{i}" for i in range(200)]


def _words(rng: random.Random, n: int) -> str:
    # Zipf-like: a few words are very common (as in real prose), most are rare.
    return " ".join(_VOCAB[min(int(rng.paretovariate(1.1)) - 1, len(_VOCAB) - 1)] for _ in range(n))


def synthetic_skillbook(n: int, *, seed: int = 0, duplicates: float = 0.01) -> Skillbook:
    """`n` skills (70% context, 30% harness) of 25-60 words issue + 10-25 words insight, 1-4 keywords.

    A `duplicates` share are near-duplicates of an earlier skill of the same section: same opening, new ending.
    """
    rng = random.Random(seed)
    sb = Skillbook()
    issues: dict[str, list[str]] = {"context": [], "harness": []}
    for _ in range(n):
        section = "context" if rng.random() < 0.7 else "harness"
        issue = _words(rng, rng.randint(25, 60))
        if issues[section] and rng.random() < duplicates:
            issue = " ".join(rng.choice(issues[section]).split()[:20]) + " " + _words(rng, rng.randint(5, 30))
        issues[section].append(issue)
        insight = _words(rng, rng.randint(10, 25)) if section == "context" or rng.random() < 0.5 else None
        keywords = rng.sample(_KEYWORDS, rng.randint(1, 4))
        sb.add_skill(section, issue, keywords, insight)
    return sb


def synthetic_queries(n: int, *, seed: int = 1) -> list[str]:
    """`n` queries of 8-30 words from the same distribution."""
    rng = random.Random(seed)
    return [_words(rng, rng.randint(8, 30)) for _ in range(n)]


@dataclass
class SyntheticEmbedder:
    """A fast stand-in for a sentence model at scale: unrelated texts get near-orthogonal vectors.

    A text's vector is a random direction seeded by its first 20 words plus a smaller one seeded by the
    whole text, so texts sharing their opening (the planted near-duplicates) have cosine ~0.92 and all
    others ~0 +- 0.05 in 384 dimensions. It measures the index and the detector, not a model.
    """

    dimension: int = 384
    model_name: str = "synthetic-384"

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        out = np.empty((len(texts), self.dimension), dtype=np.float32)
        for row, text in enumerate(texts):
            head = " ".join(text.split()[:20])
            out[row] = _direction(head, self.dimension) + 0.3 * _direction(text, self.dimension)
        unit: npt.NDArray[np.float32] = out / np.linalg.norm(out, axis=1, keepdims=True)
        return unit


def _direction(text: str, dim: int) -> npt.NDArray[np.float32]:
    seed = int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "little")
    return np.random.default_rng(seed).standard_normal(dim).astype(np.float32)
