"""The dense half of search holds each vector once: skills hold the index's rows, sidecars are mapped, and a graph
read from a file is checked before a search may follow its links."""

from __future__ import annotations

import warnings
import zipfile
from pathlib import Path

import numpy as np
import pytest
from _retrieval_books import search_results, small_book

from ace.core.npz import is_mapped
from ace.core.skillbook import Skillbook
from ace.embeddings import TestEmbedder
from ace.retrieval import SkillSearchIndex, search_index
from ace.retrieval._dense import DenseStore, RowBlocks, faiss_module, graph_problem
from ace.retrieval._quantised import simsimd_module

_book, _results = small_book, search_results
needs_faiss = pytest.mark.skipif(faiss_module() is None, reason="faiss-cpu (the ann extra) is not installed")


def _in_blocks(vector: np.ndarray, blocks: RowBlocks) -> bool:
    return any(np.shares_memory(vector, block) for block in blocks.blocks)


def test_the_first_search_of_a_fresh_skillbook_finds_its_skills() -> None:
    sb = _book(6)
    found = search_index(sb, TestEmbedder()).search(sb, sb.require_skill("context-00002").issue, top_k=6)
    assert len(found) == 6 and found[0].id == "context-00002"


def test_indexed_skills_hold_the_rows_of_the_exact_index_not_copies_of_their_own() -> None:
    sb, emb = _book(300), TestEmbedder()
    sb.quarantine_skill("context-00002", "under review")
    index = SkillSearchIndex(emb, ann_min=None)
    results = _results(sb, index)
    dense = index._dense
    unit = kept = 0
    for skill in sb.skills(include_inactive=True):
        vector = skill.embedding
        assert vector is not None and not vector.flags.writeable
        assert vector.tobytes() == np.asarray(emb.embed([skill.embedding_text()]), dtype=np.float32)[0].tobytes()
        if not skill.visible:
            owner = vector if vector.base is None else vector.base
            assert owner.size == vector.size  # a quarantined skill keeps a copy of its own, not its batch
            continue
        unit += _in_blocks(vector, dense._rows)
        kept += _in_blocks(vector, dense._kept)
    assert unit + kept == 299 and unit > 0 and kept > 0
    # The same results as an index whose unit vectors are a plain matrix of copies.
    reference = np.stack([s.embedding / np.linalg.norm(s.embedding) for s in sb.skills()])
    query = index.embed_query("ka1 lo2 mi3")
    slots = np.arange(index._bm25.n_slots, dtype=np.int64)
    _, scores = dense.scores(query, index._bm25.n_slots, slots, depth=1024)
    assert scores.tobytes() == np.einsum("ij,j->i", reference, query).tobytes()
    assert results == _results(sb, SkillSearchIndex(emb, ann_min=None))


def test_row_blocks_keep_every_row_where_it_was() -> None:
    rows = RowBlocks(3)
    held = [rows.append(np.full(3, i, dtype=np.float32)) for i in range(200)]
    assert len(rows.blocks) > 1 and [int(v[0]) for v in held if v is not None] == list(range(200))
    assert np.concatenate(rows.parts(150))[:, 0].tolist() == list(range(150))
    first = held[0]
    assert first is not None
    with pytest.raises(ValueError, match="read-only"):
        first[0] = 9.0


def test_exact_scores_are_the_same_in_parts_as_in_one_matrix() -> None:
    rng = np.random.default_rng(1)
    vectors = rng.standard_normal((500, 24)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    one = DenseStore(24, ann_min=None)
    one.reserve(500)
    parts = DenseStore(24, ann_min=None)
    for slot, v in enumerate(vectors):
        one.set(slot, v)
        parts.set(slot, v)
    assert len(one._rows.blocks) == 1 and len(parts._rows.blocks) > 3
    query = vectors[7]
    cand = np.arange(0, 500, 3, dtype=np.int64)
    assert one.scores(query, 500, cand, 10)[1].tobytes() == parts.scores(query, 500, cand, 10)[1].tobytes()


def test_an_exact_sidecar_is_mapped_and_its_index_grows_past_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("ace.core.npz.MAP_MIN_BYTES", 0)
    if simsimd_module() is not None:  # searches scan int8 codes and read rows of the mapped cache as needed
        monkeypatch.setattr("ace.retrieval._dense._QUANT_MIN", 100)
    sb, emb = _book(200), TestEmbedder()
    index = search_index(sb, emb)
    before = _results(sb, index)
    path = tmp_path / "skillbook.json"
    sb.save_to_file(path)
    with zipfile.ZipFile(tmp_path / "skillbook.index.npz") as zf:  # the vectors are stored once: in the cache
        assert "vectors.npy" not in zf.namelist() and "vector_rows.npy" in zf.namelist()
    loaded = Skillbook.load_from_file(path)
    reloaded = search_index(loaded, emb)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert _results(loaded, reloaded) == before
    mapped = reloaded._dense._base
    assert reloaded.loaded_from is not None and (is_mapped(mapped) or simsimd_module() is None)
    if simsimd_module() is not None:  # the cache's own rows, not a copy: unit rows come from its norms
        assert reloaded._dense._base_norms is not None
    loaded.add_skill("harness", "ka1 ka2 ka3 brand new words", ["kw1"])
    loaded.update_skill("context-00001", "lo1 lo2 lo3 changed words")
    assert _results(loaded, reloaded) == _results(loaded, SkillSearchIndex(emb))
    loaded.save_to_file(path)  # the mapped rows and the new ones, written in parts over the mapped file
    again = Skillbook.load_from_file(path)
    assert _results(again, search_index(again, emb)) == _results(loaded, reloaded)


@needs_faiss
def test_a_mapped_graph_is_read_in_place_and_copied_only_to_grow(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("ace.core.npz.MAP_MIN_BYTES", 0)
    monkeypatch.setattr("ace.retrieval._dense._EXACT_BELOW", 0)
    sb, emb = _book(600), TestEmbedder()
    index = SkillSearchIndex(emb, ann_min=500)
    sb.caches["ace.search_index"] = index
    before = _results(sb, index)
    path = tmp_path / "skillbook.json"
    sb.save_to_file(path)
    loaded = Skillbook.load_from_file(path)
    reloaded = SkillSearchIndex(emb, ann_min=500)
    assert _results(loaded, reloaded) == before
    assert reloaded._dense.approximate and reloaded._dense._graph is not None
    added = loaded.add_skill("harness", "ka1 ka2 ka3 lo4 lo5 unique words here", ["kw2"])
    assert added.id in [s.id for s in reloaded.search(loaded, "ka1 ka2 ka3 lo4 lo5 unique", top_k=5)]
    assert reloaded._dense._graph is None  # copied into memory of its own before the vector was added
    loaded.caches["ace.search_index"] = reloaded
    loaded.save_to_file(path)
    again = Skillbook.load_from_file(path)
    assert _results(again, SkillSearchIndex(emb, ann_min=500)) == _results(loaded, reloaded)


@needs_faiss
def test_a_graph_whose_links_leave_its_vectors_is_refused() -> None:
    faiss = faiss_module()
    assert faiss is not None
    rng = np.random.default_rng(0)
    vectors = rng.standard_normal((300, 8)).astype(np.float32)
    store = DenseStore(8, ann_min=1)
    for slot, v in enumerate(vectors):
        store.set(slot, v / np.linalg.norm(v))
    store.maybe_switch(300, 300)
    good = store.state(300)["hnsw"]
    assert isinstance(good, np.ndarray)
    assert graph_problem(faiss, store._hnsw, 8, 300) is None
    assert DenseStore.from_state({"hnsw": good}, 8, 300, ann_min=1).approximate
    links = faiss.rev_swig_ptr(store._hnsw.hnsw.neighbors.data(), store._hnsw.hnsw.neighbors.size())
    links[int(np.flatnonzero(links >= 0)[0])] = 300  # a link to a vector that does not exist
    assert graph_problem(faiss, store._hnsw, 8, 300) == "its HNSW graph's links do not fit its vectors"
    bad = faiss.serialize_index(store._hnsw)
    with pytest.raises(ValueError, match=r"links do not fit|out of range"):  # a recent faiss checks links itself
        DenseStore.from_state({"hnsw": bad}, 8, 300, ann_min=1)
    with pytest.raises(ValueError, match="HNSW graph of 300 vectors"):
        DenseStore.from_state({"hnsw": good}, 8, 299, ann_min=1)
