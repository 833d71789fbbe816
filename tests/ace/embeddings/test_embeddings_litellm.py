"""`LiteLLMEmbedder` against a fake `litellm` module: batching, retry with backoff, give-up, no network."""

from __future__ import annotations

import asyncio
import os
import sys
import types
from typing import Any

import pytest

from ace.embeddings import EmbeddingError
from ace.embeddings.litellm import LiteLLMEmbedder


class RateLimitError(Exception):
    pass


class Timeout(Exception):
    pass


class AuthenticationError(Exception):
    pass


class FakeLiteLLM:
    """Stands in for `litellm`: records requests, answers with vectors [len(text), index], fails on cue."""

    def __init__(self, failures: list[Exception] | None = None) -> None:
        self.requests: list[dict[str, Any]] = []
        self.failures = list(failures or [])

    def _answer(self, model: str, input: list[str], **kwargs: Any) -> dict[str, Any]:
        self.requests.append({"model": model, "input": list(input), **kwargs})
        if self.failures:
            raise self.failures.pop(0)
        data = [{"index": i, "embedding": [float(len(t)), float(i)]} for i, t in enumerate(input)]
        return {"data": list(reversed(data))}  # out of order: the embedder must sort by index

    def module(self) -> types.ModuleType:
        mod = types.ModuleType("litellm")
        mod.embedding = self._answer  # type: ignore[attr-defined]

        async def aembedding(**kwargs: Any) -> dict[str, Any]:
            return self._answer(**kwargs)

        mod.aembedding = aembedding  # type: ignore[attr-defined]
        mod.RateLimitError = RateLimitError  # type: ignore[attr-defined]
        mod.Timeout = Timeout  # type: ignore[attr-defined]
        mod.AuthenticationError = AuthenticationError  # type: ignore[attr-defined]
        return mod


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> FakeLiteLLM:
    fake = FakeLiteLLM()
    monkeypatch.setitem(sys.modules, "litellm", fake.module())
    return fake


def test_batches_in_order_and_keeps_the_local_cost_map(fake: FakeLiteLLM) -> None:
    emb = LiteLLMEmbedder(model="my-model", dimension=2, batch_size=2, extra={"api_base": "http://x"})
    out = emb.embed(["a", "bb", "ccc", "dddd", "e"])
    assert out.tolist() == [[1, 0], [2, 1], [3, 0], [4, 1], [1, 0]]
    assert [r["input"] for r in fake.requests] == [["a", "bb"], ["ccc", "dddd"], ["e"]]
    assert all(r["api_base"] == "http://x" and r["model"] == "my-model" for r in fake.requests)
    assert os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] == "True"
    assert emb.model_name == "my-model"


def test_retries_rate_limits_and_timeouts_with_growing_backoff(fake: FakeLiteLLM) -> None:
    fake.failures = [RateLimitError("429"), Timeout("slow"), RateLimitError("429")]
    waits: list[float] = []
    emb = LiteLLMEmbedder(model="m", dimension=2, initial_backoff=1.0, max_backoff=3.0, sleep=waits.append)
    assert emb.embed(["x"]).tolist() == [[1, 0]]
    assert len(fake.requests) == 4
    assert 0.5 <= waits[0] <= 1.0 and 1.0 <= waits[1] <= 2.0 and 1.5 <= waits[2] <= 3.0  # 1, 2, 4->3 with jitter


def test_gives_up_after_max_retries(fake: FakeLiteLLM) -> None:
    fake.failures = [RateLimitError("429")] * 3
    emb = LiteLLMEmbedder(model="m", dimension=2, max_retries=2, sleep=lambda _: None)
    with pytest.raises(EmbeddingError, match=r"still failing after 2 retries.*RateLimitError"):
        emb.embed(["x"])
    assert len(fake.requests) == 3


def test_other_errors_are_not_retried(fake: FakeLiteLLM) -> None:
    fake.failures = [AuthenticationError("bad key")]
    emb = LiteLLMEmbedder(model="m", dimension=2, sleep=lambda _: pytest.fail("must not wait"))
    with pytest.raises(EmbeddingError, match="AuthenticationError: bad key"):
        emb.embed(["x"])
    assert len(fake.requests) == 1


def test_wrong_dimension_from_the_backend_is_refused(fake: FakeLiteLLM) -> None:
    with pytest.raises(EmbeddingError, match="expected"):
        LiteLLMEmbedder(model="m", dimension=3).embed(["x"])


def test_async_embed_retries_too(fake: FakeLiteLLM, monkeypatch: pytest.MonkeyPatch) -> None:
    async def no_wait(_: float) -> None:
        return None

    monkeypatch.setattr(asyncio, "sleep", no_wait)
    fake.failures = [RateLimitError("429")]
    emb = LiteLLMEmbedder(model="m", dimension=2, batch_size=1)
    assert asyncio.run(emb.aembed(["a", "bb"])).tolist() == [[1, 0], [2, 0]]
    assert len(fake.requests) == 3


def test_dimension_comes_from_known_models_or_must_be_given() -> None:
    assert LiteLLMEmbedder(model="text-embedding-3-small").dimension == 1536
    assert LiteLLMEmbedder(model="openai/text-embedding-3-small").dimension == 1536
    assert LiteLLMEmbedder(model="bedrock/amazon.titan-embed-text-v2:0").dimension == 1024
    with pytest.raises(EmbeddingError, match="pass dimension="):
        LiteLLMEmbedder(model="ollama/nomic-embed-text")
