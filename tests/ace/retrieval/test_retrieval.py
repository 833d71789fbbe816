"""Hybrid skill search: filters, inactive skills, RRF order, embedding failures, and an index kept in step."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest
from rank_bm25 import BM25Okapi

from ace.core.skillbook import Skillbook
from ace.embeddings import EmbeddingError, EmbeddingMatrix, TestEmbedder
from ace.exceptions import SkillbookError
from ace.retrieval import rrf_fuse, tokenize
from ace.retrieval.top_k import retrieve_top_k, search_index


def _book() -> Skillbook:
    sb = Skillbook()
    sb.add_skill(
        "context",
        "Cabin class in update_reservation_flights applies to every leg and passenger",
        ["airline", "booking_api"],
        "Tell the user cabin class is all-or-nothing before offering upgrades",
    )
    sb.add_skill(
        "context",
        "Refunds for cancelled flights need the booking reference",
        ["airline", "refund"],
        "Ask for the booking reference before calling the refund tool",
    )
    sb.add_skill("harness", "Bedrock 429 rate limit errors block the whole pipeline", ["rate_limit", "bedrock"])
    sb.add_skill("harness", "The retail runner drops the refund tool output when it is long", ["retail", "refund"])
    return sb


def ids(skills: Sequence[object]) -> list[str]:
    return [s.id for s in skills]  # type: ignore[attr-defined]


# ------------------------------------------------------------------ filters
def test_section_filter_returns_only_that_section() -> None:
    sb, emb = _book(), TestEmbedder()
    both = ids(retrieve_top_k(sb, "refund tool", top_k=10, embedder=emb))
    assert {"context-00002", "harness-00002"} <= set(both)
    assert ids(retrieve_top_k(sb, "refund tool", top_k=10, section="harness", embedder=emb)) == [
        "harness-00002",
        "harness-00001",
    ]
    assert all(i.startswith("context-") for i in ids(retrieve_top_k(sb, "refund", section="context", embedder=emb)))


def test_unknown_section_bad_top_k_and_empty_query_are_refused() -> None:
    sb, emb = _book(), TestEmbedder()
    with pytest.raises(SkillbookError, match="section must be one of"):
        retrieve_top_k(sb, "refund", section="airline", embedder=emb)  # type: ignore[arg-type]
    with pytest.raises(SkillbookError, match="top_k"):
        retrieve_top_k(sb, "refund", top_k=0, embedder=emb)
    with pytest.raises(SkillbookError, match="query must be non-empty"):
        retrieve_top_k(sb, "   ", embedder=emb)


def test_top_k_limits_and_empty_skillbook_gives_nothing() -> None:
    emb = TestEmbedder()
    assert retrieve_top_k(Skillbook(), "anything", embedder=emb) == []
    assert len(retrieve_top_k(_book(), "refund", top_k=2, embedder=emb)) == 2


def _twins() -> Skillbook:
    """Two skills with the same text apart from their keywords, plus an unrelated one."""
    sb = Skillbook()
    sb.add_skill("context", "Seat map requests time out on long flights", ["seats"], "Retry the seat map once")
    sb.add_skill("context", "Seat map requests time out on long flights", ["airline"], "Retry the seat map once")
    sb.add_skill("context", "Hotel loyalty points expire after a year", ["hotel"], "Mention the expiry date")
    return sb


def test_keywords_boost_matching_skills_above_equal_ones() -> None:
    sb, emb = _twins(), TestEmbedder()
    assert ids(retrieve_top_k(sb, "seat map timeout", top_k=2, embedder=emb)) == ["context-00001", "context-00002"]
    boosted = retrieve_top_k(sb, "seat map timeout", top_k=2, keywords=["Airline"], embedder=emb)
    assert ids(boosted) == ["context-00002", "context-00001"]


def test_keywords_do_not_hide_a_strong_match_with_other_labels() -> None:
    sb, emb = _twins(), TestEmbedder()
    plain = ids(retrieve_top_k(sb, "seat map requests time out", top_k=3, embedder=emb))
    assert plain == ["context-00001", "context-00002", "context-00003"]
    # Only the hotel skill carries the keyword: it moves up, but the seat-map skills (not labelled
    # "hotel") are still returned, the best match still first.
    found = ids(retrieve_top_k(sb, "seat map requests time out", top_k=3, keywords=["hotel"], embedder=emb))
    assert found == ["context-00001", "context-00003", "context-00002"]


# --------------------------------------------------------- inactive skills
def test_inactive_skills_are_never_returned() -> None:
    sb, emb = _book(), TestEmbedder()
    assert ids(retrieve_top_k(sb, "Bedrock 429 rate limit", top_k=1, embedder=emb)) == ["harness-00001"]
    sb.remove_skill("harness-00001", "fixed upstream")
    found = ids(retrieve_top_k(sb, "Bedrock 429 rate limit", top_k=10, embedder=emb))
    assert "harness-00001" not in found
    assert len(found) == 3
    assert all(s.active for s in retrieve_top_k(sb, "rate limit", top_k=10, embedder=emb))


# --------------------------------------------------------------------- RRF
@dataclass
class FixedEmbedder:
    """Vectors chosen by the test: a text containing `marker` gets `vectors[marker]`; queries get e0."""

    vectors: dict[str, tuple[float, float]]
    model_name: str = "fixed-2d"
    dimension: int = 2
    calls: list[list[str]] = field(default_factory=list[list[str]])

    def embed(self, texts: Sequence[str]) -> EmbeddingMatrix:
        self.calls.append(list(texts))
        rows = [next((v for m, v in self.vectors.items() if m in t), (1.0, 0.0)) for t in texts]
        return np.asarray(rows, dtype=np.float32)


def _angle(deg: float) -> tuple[float, float]:
    return (float(np.cos(np.radians(deg))), float(np.sin(np.radians(deg))))


def test_rrf_order_matches_a_hand_computed_example() -> None:
    sb = Skillbook()
    sb.add_skill("harness", "alpha nothing in common here", ["aa"])  # A: dense 1st, no query word
    sb.add_skill("harness", "bravo mentions voucher once among many other words today", ["bb"])  # B: dense 2nd
    sb.add_skill("harness", "charlie refund voucher refund voucher", ["cc"])  # C: dense 3rd
    sb.add_skill("harness", "delta refund voucher with extra filler words", ["dd"])  # D: dense 4th
    emb = FixedEmbedder({"alpha": _angle(10), "bravo": _angle(20), "charlie": _angle(30), "delta": _angle(40)})
    query = "refund voucher"
    docs = [tokenize(s.embedding_text()) for s in sb.skills()]
    lexical = BM25Okapi(docs).get_scores(tokenize(query))
    assert lexical[0] == 0 and lexical[2] > lexical[3] > lexical[1] > 0  # BM25: C, D, B; A unmatched
    # By hand: A = 1/61; B = 1/62 + 1/63; C = 1/63 + 1/61; D = 1/64 + 1/62
    fused = {"A": 1 / 61, "B": 1 / 62 + 1 / 63, "C": 1 / 63 + 1 / 61, "D": 1 / 64 + 1 / 62}
    assert sorted(fused, key=fused.__getitem__, reverse=True) == ["C", "B", "D", "A"]
    got = ids(retrieve_top_k(sb, query, top_k=4, embedder=emb))
    assert got == ["harness-00003", "harness-00002", "harness-00004", "harness-00001"]
    # Neither ranking alone gives that order.
    assert got != ["harness-00001", "harness-00002", "harness-00003", "harness-00004"]
    assert got[:3] != ["harness-00003", "harness-00004", "harness-00002"]


def test_rrf_fuse_adds_reciprocal_ranks() -> None:
    dense = (np.array([0, 1, 2, 3]), np.array([1, 2, 3, 4]))
    lexical = (np.array([2, 3, 1]), np.array([1, 2, 3]))
    fused = rrf_fuse([dense, lexical], 4, k=60)
    np.testing.assert_allclose(fused, [1 / 61, 1 / 62 + 1 / 63, 1 / 63 + 1 / 61, 1 / 64 + 1 / 62])
    np.testing.assert_allclose(rrf_fuse([dense], 4, k=0), [1, 1 / 2, 1 / 3, 1 / 4])


def test_the_default_rrf_k_is_60_by_a_hand_computed_example() -> None:
    """Skills X (dense 1st, no query word), Z (dense 5th, BM25 1st) and Y (dense 6th, BM25 2nd), plus F1-F3.

    k = 60: Z = 1/65 + 1/61 = 0.03178, Y = 1/66 + 1/62 = 0.03128, X = 1/61 = 0.01639: Z, Y, X.
    k = 1:  Z = 1/6 + 1/2 = 0.667, X = 1/2 = 0.5, Y = 1/7 + 1/3 = 0.476: Z, X, Y. The default ranks as k = 60 does.
    """
    sb = Skillbook()
    for word in ("xray", "foxtrot", "golf", "hotel"):
        sb.add_skill("harness", f"{word} nothing in common with the question here", [word])
    sb.add_skill("harness", "zulu refund voucher refund voucher", ["zz"])
    sb.add_skill("harness", "yankee refund voucher with some extra filler words", ["yy"])
    angles = {"xray": 5, "foxtrot": 10, "golf": 15, "hotel": 20, "zulu": 25, "yankee": 30}
    emb = FixedEmbedder({word: _angle(deg) for word, deg in angles.items()})
    lexical = BM25Okapi([tokenize(s.embedding_text()) for s in sb.skills()]).get_scores(tokenize("refund voucher"))
    assert list(lexical[:4]) == [0, 0, 0, 0] and lexical[4] > lexical[5] > 0  # BM25: Z, Y; the others unmatched

    def fused(k: int) -> dict[str, float]:
        return {"X": 1 / (k + 1), "F1": 1 / (k + 2), "Z": 1 / (k + 5) + 1 / (k + 1), "Y": 1 / (k + 6) + 1 / (k + 2)}

    def order(scores: dict[str, float]) -> list[str]:
        return sorted(scores, key=scores.__getitem__, reverse=True)[:3]

    assert order(fused(60)) == ["Z", "Y", "X"] and order(fused(1)) == ["Z", "X", "Y"]
    got = ids(retrieve_top_k(sb, "refund voucher", top_k=3, embedder=emb))
    assert got == ["harness-00005", "harness-00006", "harness-00001"]  # Z, Y, X


def test_rrf_fuse_defaults_to_k_60() -> None:
    dense = (np.array([0, 1, 2]), np.array([1, 2, 3]))
    lexical = (np.array([2, 0]), np.array([1, 2]))
    np.testing.assert_allclose(rrf_fuse([dense, lexical], 3), [1 / 61 + 1 / 62, 1 / 62, 1 / 63 + 1 / 61], rtol=1e-12)


# -------------------------------------------------------- embedding failure
def test_query_that_cannot_be_embedded_raises() -> None:
    sb = _book()
    with pytest.raises(EmbeddingError, match="refused"):
        retrieve_top_k(sb, "explode please", embedder=TestEmbedder(fail_on="explode"))


class BrokenEmbedder(TestEmbedder):
    def embed(self, texts: Sequence[str]) -> EmbeddingMatrix:
        raise RuntimeError("connection reset")


class WrongShapeEmbedder(TestEmbedder):
    def embed(self, texts: Sequence[str]) -> EmbeddingMatrix:
        return np.zeros((len(texts), 3), dtype=np.float32)


class NanEmbedder(TestEmbedder):
    def embed(self, texts: Sequence[str]) -> EmbeddingMatrix:
        return np.full((len(texts), self.dimension), np.nan, dtype=np.float32)


@pytest.mark.parametrize(
    ("embedder", "message"),
    [
        (BrokenEmbedder(model_name="broken"), "could not embed the search query.*connection reset"),
        (WrongShapeEmbedder(model_name="wrong"), r"shape \(1, 3\)"),
        (NanEmbedder(model_name="nan"), "NaN"),
    ],
)
def test_backend_failures_and_garbage_vectors_raise_embedding_error(embedder: TestEmbedder, message: str) -> None:
    with pytest.raises(EmbeddingError, match=message):
        retrieve_top_k(_book(), "refund", embedder=embedder)


def test_skill_that_cannot_be_embedded_raises_and_caches_nothing() -> None:
    sb = _book()
    sb.add_skill("harness", "poison text that the backend refuses", ["poison"])
    with pytest.raises(EmbeddingError, match="refused"):
        retrieve_top_k(sb, "refund", embedder=TestEmbedder(fail_on="poison", model_name="strict"))
    assert all(s.embedding is None for s in sb.skills())


# ---------------------------------------------------- index kept in step
def test_index_follows_add_update_remove_and_purge() -> None:
    sb, emb = _book(), TestEmbedder()
    index = search_index(sb, emb)
    assert retrieve_top_k(sb, "volcano ash closures", top_k=1, embedder=emb)[0].id != "context-00003"
    assert index.size == 4

    added = sb.add_skill("context", "Volcano ash closes airports for days", ["airline"], "Offer rebooking early")
    assert ids(retrieve_top_k(sb, "volcano ash closures", top_k=1, embedder=emb)) == [added.id]
    assert index.size == 5

    sb.update_skill(added.id, "Strikes close airports for days", insight="Offer rebooking early")
    top = retrieve_top_k(sb, "airport strikes", top_k=1, embedder=emb)[0]
    assert top.id == added.id
    assert top is sb.get_skill(added.id)  # the current object, never a stale copy
    assert "volcano" not in top.issue.lower()
    assert added.id not in ids(retrieve_top_k(sb, "volcano", top_k=5, section="harness", embedder=emb))

    sb.remove_skill(added.id, "obsolete")
    assert added.id not in ids(retrieve_top_k(sb, "airport strikes", top_k=5, embedder=emb))
    sb.purge("harness-00001")
    assert "harness-00001" not in ids(retrieve_top_k(sb, "Bedrock 429 rate limit", top_k=5, embedder=emb))
    assert index.size == 3
    assert search_index(sb) is index  # cached on the skillbook, reused by later calls


def test_same_results_as_a_fresh_index_after_many_mutations() -> None:
    sb, emb = _book(), TestEmbedder()
    retrieve_top_k(sb, "warm up", embedder=emb)
    for i in range(40):
        s = sb.add_skill("context", f"Issue number {i} about refund step {i % 7}", ["misc"], f"Do step {i % 5}")
        if i % 3 == 0:
            sb.update_skill(s.id, f"Reworded issue {i} about vouchers", insight="Check vouchers")
        if i % 4 == 0:
            sb.remove_skill(s.id, "duplicate")
        if i % 5 == 0:
            sb.tag_skill("context-00001", 1)
        retrieve_top_k(sb, "refund vouchers", embedder=emb)
    fresh = Skillbook.from_dict(sb.to_dict())
    for query in ("refund step 3", "vouchers", "cabin class upgrade"):
        for section in (None, "context"):
            kept = ids(retrieve_top_k(sb, query, top_k=8, section=section, embedder=emb))
            new = ids(retrieve_top_k(fresh, query, top_k=8, section=section, embedder=emb))
            assert kept == new


# ------------------------------------------------------- lazy embedding
def test_embeds_lazily_in_batches_and_only_what_changed() -> None:
    sb = _book()
    emb = TestEmbedder()
    search_index(sb, emb).batch_size = 3
    retrieve_top_k(sb, "refund", embedder=emb)
    assert [len(c) for c in emb.calls] == [1, 3, 1]  # the query, then the 4 skills in batches of 3 and 1
    assert sb.embedding_model == "test-hashing"
    assert all(s.embedding is not None for s in sb.skills())

    emb.calls.clear()
    retrieve_top_k(sb, "refund", embedder=emb)
    assert emb.calls == [["refund"]]  # nothing re-embedded

    emb.calls.clear()
    sb.update_skill("context-00002", "Refunds need the ticket number", insight="Ask for the ticket number")
    sb.tag_skill("context-00001", 1)  # counters only: the vector stays valid
    sb.remove_skill("harness-00001", "fixed")  # removal: nothing to embed
    retrieve_top_k(sb, "refund", embedder=emb)
    assert emb.embedded_texts == ["refund", sb.require_skill("context-00002").embedding_text()]


def test_a_different_embedding_model_re_embeds_everything() -> None:
    sb = _book()
    retrieve_top_k(sb, "refund", embedder=TestEmbedder())
    other = TestEmbedder(model_name="other-model", dimension=32)
    retrieve_top_k(sb, "refund", embedder=other)
    assert sb.embedding_model == "other-model"
    assert sorted(other.embedded_texts[1:]) == sorted(s.embedding_text() for s in sb.skills())
    assert {s.embedding.shape for s in sb.skills() if s.embedding is not None} == {(32,)}


def test_vectors_loaded_from_the_sidecar_are_reused(tmp_path: Path) -> None:
    sb, emb = _book(), TestEmbedder()
    retrieve_top_k(sb, "refund", embedder=emb)
    sb.save_to_file(tmp_path / "skillbook.json")
    loaded = Skillbook.load_from_file(tmp_path / "skillbook.json")
    emb.calls.clear()
    assert ids(retrieve_top_k(loaded, "refund", embedder=emb)) == ids(retrieve_top_k(sb, "refund", embedder=emb))
    assert emb.calls == [["refund"], ["refund"]]  # only the two queries


def test_default_embedder_is_the_offline_minilm() -> None:
    sb = _book()
    top = retrieve_top_k(sb, "the airline API applies cabin class to all legs", top_k=1)
    assert top[0].id == "context-00001"
    assert sb.embedding_model == "all-MiniLM-L6-v2-onnx-int8"


def test_concurrent_searches_and_mutations_stay_consistent() -> None:
    sb, emb = _book(), TestEmbedder()
    errors: list[BaseException] = []

    def searcher() -> None:
        try:
            for _ in range(30):
                for skill in retrieve_top_k(sb, "refund booking reference", top_k=3, embedder=emb):
                    assert skill.active
        except BaseException as e:  # surfaced below
            errors.append(e)

    threads = [threading.Thread(target=searcher) for _ in range(3)]
    for t in threads:
        t.start()
    for i in range(30):
        s = sb.add_skill("context", f"Refund booking reference case {i}", ["refund"], "Ask for it")
        if i % 2:
            sb.remove_skill(s.id, "duplicate")
    for t in threads:
        t.join()
    assert errors == []
    fresh = Skillbook.from_dict(sb.to_dict())
    query = "refund booking reference case 7"
    assert ids(retrieve_top_k(sb, query, top_k=6, embedder=emb)) == ids(
        retrieve_top_k(fresh, query, top_k=6, embedder=emb)
    )


def test_single_ranking_modes_for_evaluation() -> None:
    sb = Skillbook()
    sb.add_skill("harness", "alpha refund", ["aa"])
    sb.add_skill("harness", "bravo refund refund voucher", ["bb"])
    sb.add_skill("harness", "charlie nothing", ["cc"])
    emb = FixedEmbedder({"alpha": _angle(50), "bravo": _angle(40), "charlie": _angle(5)})
    index = search_index(sb, emb)
    assert ids(index.search(sb, "refund voucher", top_k=3, mode="dense")) == [
        "harness-00003",
        "harness-00002",
        "harness-00001",
    ]
    emb.calls.clear()
    # BM25 alone: unmatched skills are not ranked at all, and the query is not embedded.
    assert ids(index.search(sb, "refund voucher", top_k=3, mode="bm25")) == ["harness-00002", "harness-00001"]
    assert emb.calls == []


def test_keywords_that_cannot_be_labels_are_ignored() -> None:
    sb, emb = _twins(), TestEmbedder()
    plain = ids(retrieve_top_k(sb, "seat map timeout", top_k=2, embedder=emb))
    assert ids(retrieve_top_k(sb, "seat map timeout", top_k=2, keywords=["???", "x" * 80], embedder=emb)) == plain
    mixed = ids(retrieve_top_k(sb, "seat map timeout", top_k=2, keywords=["???", "AIRLINE"], embedder=emb))
    assert mixed == ["context-00002", "context-00001"]
