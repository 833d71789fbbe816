"""The `Embedder` protocol, output checks and the deterministic test embedder."""

from __future__ import annotations

import numpy as np
import pytest

from ace.embeddings import Embedder, EmbeddingError, TestEmbedder, check_embeddings, l2_normalize


def test_test_embedder_is_deterministic_normalised_and_word_sensitive() -> None:
    emb = TestEmbedder(dimension=128)
    assert isinstance(emb, Embedder)
    m = emb.embed(["refund the ticket", "Refund the TICKET!", "seat map timeout", ""])
    assert m.dtype == np.float32 and m.shape == (4, 128)
    np.testing.assert_allclose(np.linalg.norm(m[:3], axis=1), 1.0, rtol=1e-6)
    assert not m[3].any()  # no words, zero vector
    assert float(m[0] @ m[1]) == pytest.approx(1.0)
    assert float(m[0] @ m[2]) < 0.5
    np.testing.assert_array_equal(
        m, TestEmbedder(dimension=128).embed(["refund the ticket", "Refund the TICKET!", "seat map timeout", ""])
    )
    assert emb.embedded_texts == ["refund the ticket", "Refund the TICKET!", "seat map timeout", ""]


def test_test_embedder_can_be_told_to_fail() -> None:
    emb = TestEmbedder(fail_on="boom")
    assert emb.embed(["fine"]).shape == (1, 64)
    with pytest.raises(EmbeddingError, match="boom"):
        emb.embed(["fine", "boom here"])


def test_check_embeddings_accepts_a_right_matrix_and_names_the_problem_otherwise() -> None:
    good = check_embeddings([[1, 0], [0, 1]], n_texts=2, dimension=2, model_name="m")
    assert good.dtype == np.float32 and good.flags.c_contiguous
    with pytest.raises(EmbeddingError, match=r"shape \(2, 3\) for 2 text\(s\); expected \(2, 2\)"):
        check_embeddings(np.zeros((2, 3)), n_texts=2, dimension=2, model_name="m")
    with pytest.raises(EmbeddingError, match="NaN or infinite"):
        check_embeddings([[np.inf, 0.0]], n_texts=1, dimension=2, model_name="m")
    with pytest.raises(EmbeddingError, match="not a matrix"):
        check_embeddings([[1.0], [1.0, 2.0]], n_texts=2, dimension=2, model_name="m")


def test_l2_normalize_scales_rows_and_keeps_zero_rows() -> None:
    out = l2_normalize(np.array([[3.0, 4.0], [0.0, 0.0]]))
    np.testing.assert_allclose(out, [[0.6, 0.8], [0.0, 0.0]])
    assert out.dtype == np.float32
