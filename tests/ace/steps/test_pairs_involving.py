"""`pairs_involving` asks the search index for the few targets' neighbours instead of stacking every vector, and
finds exactly the pairs (and cosines, order, KEEP and removed skills) of the full-matrix reference kept here."""

from __future__ import annotations

import itertools
import random

import numpy as np
import pytest

from ace.core.skillbook import Skillbook
from ace.deduplication.detector import SimilarPair
from ace.embeddings.base import Embedder, l2_normalize
from ace.embeddings.test import TestEmbedder
from ace.retrieval import SkillSearchIndex, _dense, search_index
from ace.retrieval._dense import DenseStore, faiss_module
from ace.steps.deduplicate import _is_active, pairs_involving

WORDS = [f"{a}{b}" for a in ("ka", "lo", "mi", "nu", "pe", "ra") for b in range(50)]
needs_faiss = pytest.mark.skipif(faiss_module() is None, reason="faiss-cpu (the ann extra) is not installed")


def reference(book: Skillbook, skill_ids: list[str], threshold: float, embedder: Embedder) -> list[SimilarPair]:
    """The implementation before: every section's vectors stacked and normalised, k x n products."""
    targets = [i for i in dict.fromkeys(skill_ids) if _is_active(book, i)]
    search_index(book, embedder).sync(book)
    found: dict[frozenset[str], SimilarPair] = {}
    for section in ("context", "harness"):
        pool = [s for s in book.skills(section=section) if s.embedding is not None]
        ids = [s.id for s in pool]
        mine = [ids.index(t) for t in targets if t in ids]
        if not mine:
            continue
        unit = l2_normalize(np.stack([s.embedding for s in pool if s.embedding is not None]))
        sims = unit[mine] @ unit.T
        for row, i in enumerate(mine):
            for j in np.nonzero(sims[row] >= threshold)[0].tolist():
                key = frozenset((ids[i], ids[j]))
                if j == i or key in found or book.is_kept_pair(ids[i], ids[j]):
                    continue
                first, second = sorted(key)
                found[key] = SimilarPair(first, second, float(sims[row, j]), section)
    return sorted(found.values(), key=lambda p: (-p.similarity, p.first_id, p.second_id))


def planted(n: int, seed: int) -> Skillbook:
    """`n` skills in both sections; a third of them share most words with an earlier skill of their section."""
    rng = random.Random(seed)
    book = Skillbook()
    issues: dict[str, list[list[str]]] = {"context": [], "harness": []}
    for i in range(n):
        section = "context" if i % 3 else "harness"
        words = [rng.choice(WORDS) for _ in range(rng.randint(12, 20))]
        if issues[section] and rng.random() < 0.35:
            words = rng.choice(issues[section])[: rng.randint(8, 14)] + words[: rng.randint(1, 5)]
        issues[section].append(words)
        book.add_skill(section, " ".join(words), [f"kw{i % 5}"], f"do step {i}" if section == "context" else None)
    return book


def same(got: list[SimilarPair], want: list[SimilarPair]) -> None:
    """The same pairs, cosines equal to float32 rounding, in the reference's order (pairs whose cosines tie to within
    rounding may come either way)."""
    assert {(p.first_id, p.second_id, p.section) for p in got} == {(p.first_id, p.second_id, p.section) for p in want}
    assert len(got) == len(want)
    by_key = {p.key: p.similarity for p in want}
    assert [p.similarity for p in got] == pytest.approx([by_key[p.key] for p in got], abs=1e-6)
    assert all(by_key[a.key] >= by_key[b.key] - 1e-6 for a, b in itertools.pairwise(got))
    if len({round(p.similarity, 4) for p in want}) == len(want):  # no near-ties: exactly the reference's order
        assert [p.key for p in got] == [p.key for p in want]


def check(book: Skillbook, embedder: Embedder, rng: random.Random, threshold: float) -> int:
    """Compare with the reference for a few random target sets; returns how many pairs were found in all."""
    ids = [s.id for s in book.skills(include_inactive=True)]
    total = 0
    for _ in range(12):
        targets = [*rng.sample(ids, rng.randint(1, 4)), "context-99999"]
        got = pairs_involving(book, targets, threshold=threshold, embedder=embedder)
        same(got, reference(book, targets, threshold, embedder))
        total += len(got)
    return total


def mutate(book: Skillbook, rng: random.Random) -> None:
    """Remove and quarantine a few skills and record KEEP for some near-duplicate pairs."""
    visible = [s.id for s in book.skills()]
    for sid in rng.sample(visible, 6):
        book.remove_skill(sid, "merged elsewhere")
    book.quarantine_skill(rng.choice([s.id for s in book.skills()]), "under review")
    pairs = pairs_involving(book, [s.id for s in book.skills()][:60], threshold=0.7)
    for pair in pairs[::3]:
        book.record_keep_pair(pair.first_id, pair.second_id)
    assert book.keep_pairs


@pytest.mark.parametrize("seed", [0, 1])
def test_pairs_are_those_of_the_full_matrix_in_exact_mode(seed: int) -> None:
    book, rng, emb = planted(240, seed), random.Random(seed), TestEmbedder()
    book.caches["ace.search_index"] = SkillSearchIndex(emb, ann_min=None)
    assert check(book, emb, rng, 0.7) > 5
    mutate(book, rng)
    kept = {frozenset(p) for p in book.keep_pairs}
    assert check(book, emb, rng, 0.7) > 5
    assert check(book, emb, rng, 0.8) > 0
    everything = pairs_involving(book, [s.id for s in book.skills(include_inactive=True)], threshold=0.7)
    assert everything and not {p.key for p in everything} & kept
    assert all(_is_active(book, p.first_id) and _is_active(book, p.second_id) for p in everything)
    assert {p.section for p in everything} == {"context", "harness"}


@needs_faiss
@pytest.mark.parametrize("seed", [0, 1])
def test_pairs_are_those_of_the_full_matrix_through_the_hnsw_graph(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_dense, "_EXACT_BELOW", 64)  # sections of a few hundred skills go through the graph too
    book, rng, emb = planted(700, seed), random.Random(seed), TestEmbedder()
    index = SkillSearchIndex(emb, ann_min=300)
    book.caches["ace.search_index"] = index
    index.sync(book)
    assert index._dense.approximate
    assert check(book, emb, rng, 0.7) > 5
    mutate(book, rng)
    assert check(book, emb, rng, 0.7) > 5
    book.add_skill("harness", book.require_skill("harness-00003").issue + " again", ["new"])  # a pending vector
    same(pairs_involving(book, ["harness-00003"], threshold=0.7), reference(book, ["harness-00003"], 0.7, emb))


@needs_faiss
def test_the_graph_search_grows_and_falls_back_to_every_candidate_when_all_pass(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(_dense, "_EXACT_BELOW", 16)  # so that 150 candidates are "many"
    rng = np.random.default_rng(0)
    centre = rng.standard_normal(24).astype(np.float32)
    vectors = np.stack([centre + (0.2 if i < 150 else 3.0) * rng.standard_normal(24) for i in range(300)])
    unit = l2_normalize(vectors.astype(np.float32))
    store = DenseStore(24, ann_min=1)
    for slot, row in enumerate(unit):
        store.set(slot, row)
    assert store.maybe_switch(300, 300) is not None and store.approximate
    monkeypatch.setattr(_dense, "_DEPTH_MIN", 64)
    query, cand = unit[0], np.arange(0, 300, 2, dtype=np.int64)  # a section: every other slot
    truth = {int(s) for s in cand if float(unit[s] @ query) >= 0.8}
    assert len(truth) > 64  # more than the first best-64 list holds: the list grows
    assert set(store.above(query, 300, cand, 0.8, own=0).tolist()) == truth
    decoded = store._hnsw.reconstruct_batch(cand) @ query
    top = {int(s) for s, sim in zip(cand, decoded, strict=True) if sim >= 0.99}
    assert 0 < len(top) < 64 and set(store.above(query, 300, cand, 0.99).tolist()) == top
    monkeypatch.setattr(_dense, "_DEPTH_MAX", 32)  # the best-32 list is full: every candidate is scored instead
    assert set(store.above(query, 300, cand, 0.8).tolist()) == truth


@needs_faiss
def test_a_graph_search_that_misses_the_query_s_own_skill_is_done_again_exactly(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(_dense, "_EXACT_BELOW", 16)
    unit = l2_normalize(np.random.default_rng(1).standard_normal((100, 16)).astype(np.float32))
    unit[1] = l2_normalize((unit[0] + 0.05 * unit[1])[None, :])[0]
    store = DenseStore(16, ann_min=1)
    for slot, row in enumerate(unit):
        store.set(slot, row)
    store.maybe_switch(100, 100)
    cand = np.arange(100, dtype=np.int64)
    lost = (np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32))
    monkeypatch.setattr(store, "scores", lambda *a, **k: lost)  # a graph search that led nowhere near slot 0
    assert store.above(unit[0], 100, cand, 0.9).tolist() == []
    assert sorted(store.above(unit[0], 100, cand, 0.9, own=0).tolist()) == [0, 1]
