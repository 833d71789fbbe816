"""The search index sidecar (`skillbook.index.npz`) and the HNSW path above the size threshold."""

from __future__ import annotations

import random
import warnings
from pathlib import Path

import numpy as np
import pytest

from ace.core.skillbook import Skillbook
from ace.embeddings import TestEmbedder
from ace.retrieval import SkillSearchIndex, search_index
from ace.retrieval._dense import faiss_module
from ace.retrieval._persist import index_path

WORDS = [f"{a}{b}" for a in ("ka", "lo", "mi", "nu", "pe") for b in range(40)]


def _book(n: int, seed: int = 0) -> Skillbook:
    rng = random.Random(seed)
    sb = Skillbook()
    for i in range(n):
        issue = " ".join(rng.choice(WORDS) for _ in range(rng.randint(5, 15)))
        if i % 3:
            sb.add_skill("context", issue, [f"kw{i % 7}", f"kw{i % 11}"], f"do step {i}")
        else:
            sb.add_skill("harness", issue, [f"kw{i % 5}"])
    return sb


def _queries(k: int) -> list[str]:
    rng = random.Random(9)
    return [" ".join(rng.choice(WORDS) for _ in range(6)) for _ in range(k)]


def _results(sb: Skillbook, index: SkillSearchIndex) -> list[list[str]]:
    out = []
    for q in _queries(15):
        out.append([s.id for s in index.search(sb, q, top_k=5)])
        out.append([s.id for s in index.search(sb, q, top_k=5, section="harness", keywords=["kw2"])])
    return out


def test_a_saved_index_is_loaded_instead_of_rebuilt_with_the_same_results(tmp_path: Path) -> None:
    sb, emb = _book(300), TestEmbedder()
    path = tmp_path / "skillbook.json"
    sb.remove_skill("context-00002", "stale")
    before = _results(sb, search_index(sb, emb))
    sb.save_to_file(path)
    assert index_path(path).is_file()
    loaded = Skillbook.load_from_file(path)
    index = search_index(loaded, emb)
    assert _results(loaded, index) == before
    assert index.loaded_from == str(index_path(path))
    # The loaded index then follows mutations like a built one.
    loaded.update_skill("context-00001", "an entirely new issue about ka1 ka2 ka3")
    loaded.remove_skill("harness-00003", "obsolete")
    fresh = SkillSearchIndex(emb)
    assert _results(loaded, index) == _results(loaded, fresh)


def test_a_stale_or_damaged_sidecar_is_ignored_and_the_index_rebuilt(tmp_path: Path) -> None:
    sb, emb = _book(50), TestEmbedder()
    path = tmp_path / "skillbook.json"
    search_index(sb, emb).sync(sb)
    sb.save_to_file(path)
    sidecar = index_path(path).read_bytes()
    sb.add_skill("harness", "a skill added after the index was saved", ["late"])
    sb.caches.clear()
    sb.save_to_file(path)  # no index in caches: the old sidecar stays, naming the previous file's digest
    assert index_path(path).read_bytes() == sidecar
    stale = Skillbook.load_from_file(path)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # stale is expected: no warning
        assert stale.file_state is not None
        index = search_index(stale, emb)
        index.sync(stale)
    assert index.loaded_from is None
    index_path(path).write_bytes(sidecar[:-200])
    damaged = Skillbook.load_from_file(path)
    damaged_index = search_index(damaged, emb)
    with pytest.warns(RuntimeWarning, match="not a readable index"):
        damaged_index.sync(damaged)
    assert damaged_index.loaded_from is None and damaged_index.size == 51


def test_a_journal_makes_the_file_state_unknown(tmp_path: Path) -> None:
    sb = _book(5)
    path = tmp_path / "skillbook.json"
    sb.save_to_file(path)
    assert Skillbook.load_from_file(path).file_state is not None
    delta = {"ops_before": 0, "ops": [], "skills": [], "purged": [], "keep_pairs": [], "embedding_model": None}
    assert Skillbook.load_from_file(path, journal=[delta]).file_state is None


@pytest.mark.skipif(faiss_module() is None, reason="faiss-cpu (the ann extra) is not installed")
def test_hnsw_path_recall_filters_and_persistence(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("ace.retrieval._dense._EXACT_BELOW", 0)  # search the graph even for a small skillbook
    sb, emb = _book(1500), TestEmbedder()
    exact = SkillSearchIndex(emb, ann_min=None)
    approx = SkillSearchIndex(emb, ann_min=1000)
    want, got = _results(sb, exact), _results(sb, approx)
    assert approx._dense.approximate and not exact._dense.approximate
    hits = sum(len(set(a) & set(b)) for a, b in zip(want, got, strict=True))
    assert hits / sum(len(a) for a in want) >= 0.9
    for ids in got[1::2]:
        assert all(i.startswith("harness-") for i in ids)
    sb.remove_skill("harness-00004", "gone")
    assert all("harness-00004" not in ids for ids in _results(sb, approx))
    sb.caches["ace.search_index"] = approx
    path = tmp_path / "skillbook.json"
    sb.save_to_file(path)
    loaded = Skillbook.load_from_file(path)
    reloaded = SkillSearchIndex(emb, ann_min=1000)
    assert _results(loaded, reloaded) == _results(sb, approx)
    assert reloaded.loaded_from is not None and reloaded._dense.approximate
    added = loaded.add_skill("harness", "ka1 ka2 ka3 lo4 lo5 unique words here", ["kw2"])
    assert added.id in [s.id for s in reloaded.search(loaded, "ka1 ka2 ka3 lo4 lo5 unique", top_k=5)]


def test_sidecar_vectors_are_checked_against_the_header(tmp_path: Path) -> None:
    sb, emb = _book(20), TestEmbedder()
    path = tmp_path / "skillbook.json"
    search_index(sb, emb).sync(sb)
    sb.save_to_file(path)
    with np.load(index_path(path)) as npz:
        arrays = {k: npz[k] for k in npz.files}
    arrays["vectors"] = arrays["vectors"][:-1]
    np.savez(index_path(path), **arrays)
    loaded = Skillbook.load_from_file(path)
    with pytest.warns(RuntimeWarning, match="vectors"):
        search_index(loaded, emb).sync(loaded)


def test_a_loaded_index_builds_its_keyword_map_only_when_asked_and_from_live_skills(tmp_path: Path) -> None:
    sb, emb = _book(120), TestEmbedder()
    path = tmp_path / "skillbook.json"
    search_index(sb, emb).sync(sb)
    sb.save_to_file(path)
    loaded = Skillbook.load_from_file(path)
    index = search_index(loaded, emb)
    index.search(loaded, "ka1 lo2", top_k=3)  # no keywords: the map is not built
    assert index._keywords._slots is None
    loaded.remove_skill("harness-00002", "gone")  # dropped before the map exists
    added = loaded.add_skill("harness", "ka1 lo2 mi3", ["kw2", "fresh"])
    got = [s.id for s in index.search(loaded, "ka1 lo2 mi3", top_k=50, section="harness", keywords=["kw2", "fresh"])]
    want = [
        s.id
        for s in SkillSearchIndex(emb).search(
            loaded, "ka1 lo2 mi3", top_k=50, section="harness", keywords=["kw2", "fresh"]
        )
    ]
    assert got == want and got[0] == added.id and "harness-00002" not in got


def test_a_small_index_whose_postings_sit_in_the_delta_segment_is_saved_whole(tmp_path: Path) -> None:
    sb, emb = _book(12), TestEmbedder()
    path = tmp_path / "skillbook.json"
    before = _results(sb, search_index(sb, emb))  # a query folds nothing: 12 documents stay in the delta segment
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        sb.save_to_file(path)
        loaded = Skillbook.load_from_file(path)
        index = search_index(loaded, emb)
        assert _results(loaded, index) == before
    assert index.loaded_from is not None
