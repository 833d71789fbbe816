"""The embedder a run's `--embedding-model` names: the embedded MiniLM (`local`) or a litellm embedding model."""

from __future__ import annotations

from ace.embeddings.base import Embedder, EmbeddingError
from ace.embeddings.litellm import LiteLLMEmbedder
from ace.embeddings.minilm import MINILM_MODEL_NAME, default_embedder
from ace_eval.e2e.config import DEFAULT_MODEL, ConfigError

__all__ = ["LOCAL_EMBEDDING_NAMES", "embedder_for"]

LOCAL_EMBEDDING_NAMES = frozenset({DEFAULT_MODEL, "default", "minilm", MINILM_MODEL_NAME.lower()})
"""Embedding model strings that name the embedded offline MiniLM."""


def embedder_for(model: str) -> Embedder:
    """The embedder of a model string: `local` (MiniLM, offline) or any litellm embedding model."""
    name = model.strip()
    if name.lower() in LOCAL_EMBEDDING_NAMES:
        return default_embedder()
    try:
        return LiteLLMEmbedder(model=name)
    except EmbeddingError as e:
        raise ConfigError(f"embedding model {name!r} (ACE_EMBEDDING_MODEL / --embedding-model): {e}") from None
