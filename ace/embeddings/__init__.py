"""Embedders: the `Embedder` protocol, the offline default (MiniLM int8 ONNX), litellm and a test double."""

from ace.embeddings.base import Embedder, EmbeddingError, EmbeddingMatrix, check_embeddings, l2_normalize
from ace.embeddings.litellm import LiteLLMEmbedder
from ace.embeddings.minilm import MINILM_MODEL_NAME, MiniLMEmbedder, default_embedder
from ace.embeddings.test import TestEmbedder

__all__ = [
    "MINILM_MODEL_NAME",
    "Embedder",
    "EmbeddingError",
    "EmbeddingMatrix",
    "LiteLLMEmbedder",
    "MiniLMEmbedder",
    "TestEmbedder",
    "check_embeddings",
    "default_embedder",
    "l2_normalize",
]
