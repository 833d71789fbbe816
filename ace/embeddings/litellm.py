"""`LiteLLMEmbedder`: hosted embedding models through litellm, batched, with bounded retries and backoff."""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

import numpy as np

from ace.embeddings.base import EmbeddingError, EmbeddingMatrix, check_embeddings
from ace.llm.third_party_env import litellm_defaults

__all__ = ["KNOWN_DIMENSIONS", "LiteLLMEmbedder"]

KNOWN_DIMENSIONS: dict[str, int] = {
    "text-embedding-3-small": 1536,
    "text-embedding-3-large": 3072,
    "text-embedding-ada-002": 1536,
    "bedrock/amazon.titan-embed-text-v2:0": 1024,
    "bedrock/amazon.titan-embed-text-v1": 1536,
    "bedrock/cohere.embed-english-v3": 1024,
    "bedrock/cohere.embed-multilingual-v3": 1024,
    "gemini/text-embedding-004": 768,
}
"""Default vector length of common models (an `openai/` prefix is ignored); pass `dimension=` for others."""

_RETRYABLE = ("RateLimitError", "Timeout", "APIConnectionError", "ServiceUnavailableError", "InternalServerError")


def _import_litellm() -> ModuleType:
    litellm_defaults()  # no cost map from the network, no .env file from an ancestor folder
    import litellm

    return litellm


def _retryable(litellm: ModuleType) -> tuple[type[BaseException], ...]:
    return tuple(c for n in _RETRYABLE if isinstance(c := getattr(litellm, n, None), type))


@dataclass(kw_only=True)
class LiteLLMEmbedder:
    """Any embedding model litellm reaches (`text-embedding-3-small`, `bedrock/amazon.titan-embed-text-v2:0`, ...).

    Texts go out in batches of `batch_size`. A rate limit, timeout, connection or server error is retried
    up to `max_retries` times, waiting `initial_backoff * 2**attempt` seconds (capped at `max_backoff`,
    with jitter); any other error, or the last failed retry, raises `EmbeddingError`. API keys come from
    the environment, as litellm expects.
    """

    model: str
    dimension: int = 0
    """Vector length; `0` looks the model up in `KNOWN_DIMENSIONS`."""
    batch_size: int = 128
    max_retries: int = 5
    initial_backoff: float = 1.0
    max_backoff: float = 30.0
    timeout: float = 60.0
    extra: dict[str, Any] = field(default_factory=dict[str, Any])
    """Further keyword arguments for `litellm.embedding` (e.g. `api_base`, `dimensions`)."""
    sleep: Callable[[float], None] = time.sleep
    """How to wait between retries (tests pass a recorder)."""

    def __post_init__(self) -> None:
        if not self.dimension:
            bare = self.model.removeprefix("openai/")
            known = KNOWN_DIMENSIONS.get(bare)
            if known is None:
                raise EmbeddingError(
                    f"unknown vector length for embedding model {self.model!r}: pass dimension= "
                    "(the length of the vectors it returns)"
                )
            self.dimension = known
        if self.batch_size < 1 or self.max_retries < 0:
            raise EmbeddingError("batch_size must be >= 1 and max_retries >= 0")

    @property
    def model_name(self) -> str:
        """The litellm model string."""
        return self.model

    def embed(self, texts: Sequence[str]) -> EmbeddingMatrix:
        """Embed `texts` in batches, retrying transient failures."""
        litellm = _import_litellm()
        batch = list(texts)
        rows = [self._call(litellm, batch[i : i + self.batch_size]) for i in range(0, len(batch), self.batch_size)]
        return self._stack(rows, len(batch))

    async def aembed(self, texts: Sequence[str]) -> EmbeddingMatrix:
        """Async `embed` through `litellm.aembedding`; waits with `asyncio.sleep`."""
        litellm = _import_litellm()
        batch = list(texts)
        rows = [
            await self._acall(litellm, batch[i : i + self.batch_size]) for i in range(0, len(batch), self.batch_size)
        ]
        return self._stack(rows, len(batch))

    # ---------------------------------------------------------------- internal
    def _call(self, litellm: ModuleType, batch: list[str]) -> EmbeddingMatrix:
        retryable = _retryable(litellm)
        for attempt in range(self.max_retries + 1):
            try:
                response = litellm.embedding(model=self.model, input=batch, timeout=self.timeout, **self.extra)
                return self._parse(response, len(batch))
            except retryable as e:
                if attempt == self.max_retries:
                    raise self._gave_up(e, len(batch)) from e
                self.sleep(self._backoff(attempt))
            except EmbeddingError:
                raise
            except Exception as e:
                raise EmbeddingError(f"embedding model {self.model!r} failed: {type(e).__name__}: {e}") from e
        raise AssertionError("unreachable")  # pragma: no cover

    async def _acall(self, litellm: ModuleType, batch: list[str]) -> EmbeddingMatrix:
        retryable = _retryable(litellm)
        for attempt in range(self.max_retries + 1):
            try:
                response = await litellm.aembedding(model=self.model, input=batch, timeout=self.timeout, **self.extra)
                return self._parse(response, len(batch))
            except retryable as e:
                if attempt == self.max_retries:
                    raise self._gave_up(e, len(batch)) from e
                await asyncio.sleep(self._backoff(attempt))
            except EmbeddingError:
                raise
            except Exception as e:
                raise EmbeddingError(f"embedding model {self.model!r} failed: {type(e).__name__}: {e}") from e
        raise AssertionError("unreachable")  # pragma: no cover

    def _backoff(self, attempt: int) -> float:
        base = min(self.max_backoff, self.initial_backoff * 2.0**attempt)
        return base * (0.5 + random.random() / 2)  # jitter so parallel workers do not retry in step

    def _gave_up(self, error: BaseException, n: int) -> EmbeddingError:
        return EmbeddingError(
            f"embedding model {self.model!r} still failing after {self.max_retries} retries ({n} text(s)): "
            f"{type(error).__name__}: {error}. Lower the request rate (smaller batch_size, fewer workers) or "
            "raise max_retries"
        )

    def _parse(self, response: Any, n: int) -> EmbeddingMatrix:
        data = response["data"] if isinstance(response, dict) else getattr(response, "data", None)
        if not isinstance(data, list) or len(data) != n:
            raise EmbeddingError(f"embedding model {self.model!r} returned {type(data).__name__} for {n} text(s)")
        items = sorted(data, key=lambda d: _field(d, "index") or 0)
        matrix = np.asarray([_field(d, "embedding") for d in items], dtype=np.float32)
        return check_embeddings(matrix, n_texts=n, dimension=self.dimension, model_name=self.model)

    def _stack(self, rows: list[EmbeddingMatrix], n: int) -> EmbeddingMatrix:
        if not rows:
            return np.zeros((0, self.dimension), dtype=np.float32)
        return check_embeddings(np.concatenate(rows), n_texts=n, dimension=self.dimension, model_name=self.model)


def _field(item: Any, name: str) -> Any:
    return item.get(name) if isinstance(item, dict) else getattr(item, name, None)
