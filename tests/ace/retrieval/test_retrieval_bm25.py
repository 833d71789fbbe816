"""The incremental numpy BM25 gives rank-bm25's BM25Okapi scores exactly, through adds and removals."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest
from rank_bm25 import BM25Okapi

from ace.retrieval import BM25Index, tokenize

CORPUS = [
    "Cabin class is a single parameter applied to all legs of update_reservation_flights",
    "Refund requests for cancelled flights need the booking reference and the cancellation reason",
    "Bedrock returns 429 rate limit errors; the runner retries with exponential backoff",
    "Baggage allowance depends on cabin class and membership tier",
    "Always confirm the refund amount with the user before calling the refund API",
    "",
    "Keywords: airline, booking_api, cabin_class",
    "Class upgrades and class downgrades",
    "Business class seats",
]


def test_tokenize_lowercases_splits_snake_case_and_drops_stopwords() -> None:
    assert tokenize("Update_Reservation_Flights: the cabin-class, 429!") == [
        "update",
        "reservation",
        "flights",
        "cabin",
        "class",
        "429",
    ]
    assert tokenize("  ...  ") == []
    assert tokenize("You are to do it") == []  # function words only


@pytest.mark.parametrize(
    "query",
    [
        "refund for a cancelled flight",
        "cabin class cabin class",  # repeated tokens count once per repetition, as in rank-bm25
        "class class flights",  # "class" is in more than half the documents: it gets the epsilon IDF
        "unknown words only",
        "rate limit 429 retries backoff booking api",
    ],
)
def test_scores_match_rank_bm25(query: str) -> None:
    docs = [tokenize(t) for t in CORPUS]
    index = BM25Index()
    for d in docs:
        index.add(d)
    scores, hit = index.scores(tokenize(query))
    expected = BM25Okapi(docs).get_scores(tokenize(query))
    np.testing.assert_allclose(scores, expected, rtol=0, atol=1e-6)
    assert hit.tolist() == [any(t in d for t in tokenize(query)) for d in docs]


def test_scores_stay_exact_through_removals_additions_and_segment_merges() -> None:
    rng = random.Random(7)
    words = [f"w{i}" for i in range(60)]
    docs: list[list[str]] = []
    live: list[int] = []
    index = BM25Index()
    for step in range(900):  # enough additions to fold the delta segment into the main one several times
        if live and rng.random() < 0.2:
            slot = live.pop(rng.randrange(len(live)))
            index.remove(slot)
        else:
            doc = [rng.choice(words[: rng.randint(2, 60)]) for _ in range(rng.randint(1, 25))]
            docs.append(doc)
            live.append(index.add(doc))
        if step % 97 == 0:
            query = [rng.choice([*words, "absent"]) for _ in range(rng.randint(1, 6))]
            scores, hit = index.scores(query)
            expected = BM25Okapi([docs[s] for s in live]).get_scores(query)
            np.testing.assert_allclose(scores[live], expected, rtol=0, atol=1e-6)
            dead = np.setdiff1d(np.arange(index.n_slots), live)
            assert not scores[dead].any()
            assert not hit[dead].any()


def test_removing_a_dead_slot_is_refused() -> None:
    index = BM25Index()
    slot = index.add(["a"])
    index.remove(slot)
    with pytest.raises(KeyError, match="not live"):
        index.remove(slot)


def test_scores_match_a_hand_computed_okapi_example() -> None:
    """Okapi BM25 with k1 = 1.5, b = 0.75 and the floor epsilon = 0.25 x the mean IDF, by hand on three documents.

    N = 3, lengths 2, 1, 2 (avgdl 5/3). idf(voucher) = ln((3 - 1 + 0.5) / (1 + 0.5)); `refund` is in 2 of 3
    documents, so its Okapi IDF ln(1.5 / 2.5) is negative and takes 0.25 x the mean IDF of the four terms.
    """
    index = BM25Index()
    for doc in (["refund", "voucher"], ["refund"], ["flight", "seat"]):
        index.add(doc)
    k1, b, avgdl = 1.5, 0.75, 5 / 3
    rare = math.log(2.5 / 1.5)
    floor = 0.25 * (3 * rare + math.log(1.5 / 2.5)) / 4

    def term(idf: float, tf: int, length: int) -> float:
        return idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * length / avgdl))

    scores, hit = index.scores(["voucher"])
    np.testing.assert_allclose(scores, [term(rare, 1, 2), 0, 0], rtol=1e-12)
    assert hit.tolist() == [True, False, False]
    scores, _ = index.scores(["refund"])
    np.testing.assert_allclose(scores, [term(floor, 1, 2), term(floor, 1, 1), 0], rtol=1e-12)


def test_common_terms_added_as_columns_give_the_scattered_sums_bit_for_bit(monkeypatch: pytest.MonkeyPatch) -> None:
    """Terms covering a tenth of the slots are added as whole columns: every score and hit equals the scattered
    postings' exactly (and rank-bm25's), through removals, additions and segment rebuilds."""
    from ace.retrieval import bm25

    rng = random.Random(11)
    words = [f"w{i}" for i in range(40)]
    docs: list[list[str]] = []
    live: list[int] = []
    with_columns, scattered = BM25Index(), BM25Index()
    monkeypatch.setattr(bm25, "_MIN_COLUMN", 8)
    used = 0
    for step in range(700):
        if live and rng.random() < 0.15:
            slot = live.pop(rng.randrange(len(live)))
            with_columns.remove(slot)
            scattered.remove(slot)
        else:
            # Zipf-like: the first words are in most documents (stopword-heavy), the others rare.
            doc = [words[min(int(rng.paretovariate(1.1)) - 1, 39)] for _ in range(rng.randint(1, 30))]
            docs.append(doc)
            live.append(with_columns.add(doc))
            scattered.add(doc)
        if step % 41 == 0:
            query = [rng.choice([*words[:6], *words, "absent"]) for _ in range(rng.randint(1, 12))]
            got, got_hit = with_columns.scores(query)
            monkeypatch.setattr(bm25, "_MAX_COLUMNS", 0)
            want, want_hit = scattered.scores(query)
            monkeypatch.setattr(bm25, "_MAX_COLUMNS", 16)
            assert got.tobytes() == want.tobytes()
            assert got_hit.tolist() == want_hit.tolist()
            expected = BM25Okapi([docs[s] for s in live]).get_scores(query)
            np.testing.assert_allclose(got[live], expected, rtol=0, atol=1e-6)
            used = max(used, len(with_columns._main.columns))
    assert used > 0  # the column path ran
    assert not scattered._main.columns
