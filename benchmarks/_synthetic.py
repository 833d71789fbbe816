"""Synthetic skillbooks for the scale benchmarks: Zipf-distributed words, realistic lengths, both sections."""

from __future__ import annotations

import hashlib
import random
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from ace.core.skillbook import Skillbook

__all__ = ["ClusteredEmbedder", "SyntheticEmbedder", "synthetic_queries", "synthetic_skillbook", "words"]

_VOCAB = [f"{a}{b}" for a in ("ka", "lo", "mi", "nu", "pe", "ra", "si", "tu", "vo", "ze") for b in range(300)]
_KEYWORDS = [f"topic_{i}" for i in range(200)]


def words(rng: random.Random, n: int) -> str:
    """`n` words of the Zipf-like vocabulary."""
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
        issue = words(rng, rng.randint(25, 60))
        if issues[section] and rng.random() < duplicates:
            issue = " ".join(rng.choice(issues[section]).split()[:20]) + " " + words(rng, rng.randint(5, 30))
        issues[section].append(issue)
        insight = words(rng, rng.randint(10, 25)) if section == "context" or rng.random() < 0.5 else None
        keywords = rng.sample(_KEYWORDS, rng.randint(1, 4))
        sb.add_skill(section, issue, keywords, insight)
    return sb


def synthetic_queries(n: int, *, seed: int = 1) -> list[str]:
    """`n` queries of 8-30 words from the same distribution."""
    rng = random.Random(seed)
    return [words(rng, rng.randint(8, 30)) for _ in range(n)]


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


@dataclass
class ClusteredEmbedder:
    """`SyntheticEmbedder` with the structure of a sentence model's vectors, for approximate search to find.

    v = 0.30 g + 0.45 topic + 0.45 subtopic + 0.70 head + 0.21 text: `g` is shared by all (sentence models are
    anisotropic), the topic (of 200) comes from the first word, its subtopic (of 10) from the second, `head` from the
    first 20 words (so the planted near-duplicates keep cosine ~0.95) and `text` from the whole text. Unrelated
    skills: cosine ~0.09 on average.
    Isotropic random vectors (`SyntheticEmbedder`) have no neighbours to find: an HNSW graph's recall there is
    0.3-0.8, which says nothing about real text.
    """

    dimension: int = 384
    model_name: str = "synthetic-clustered-384"

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        out = np.empty((len(texts), self.dimension), dtype=np.float32)
        shared = _direction("shared direction", self.dimension)
        for row, text in enumerate(texts):
            words = text.split()
            topic = _bucket(" ".join(words[:1]), 200)
            subtopic = _bucket(" ".join(words[1:2]), 10)
            out[row] = (
                0.30 * shared
                + 0.45 * _direction(f"topic {topic}", self.dimension)
                + 0.45 * _direction(f"topic {topic}/{subtopic}", self.dimension)
                + 0.70 * _direction(" ".join(words[:20]), self.dimension)
                + 0.21 * _direction(text, self.dimension)
            ) / np.sqrt(self.dimension)
        unit: npt.NDArray[np.float32] = out / np.linalg.norm(out, axis=1, keepdims=True)
        return unit


def _bucket(word: str, n: int) -> int:
    return int.from_bytes(hashlib.blake2b(word.encode(), digest_size=4).digest(), "little") % n
