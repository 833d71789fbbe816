"""The search index sidecar (`skillbook.index.npz`) and the HNSW path above the size threshold."""

from __future__ import annotations

import random
import warnings
from pathlib import Path

import numpy as np
import pytest

from ace.core.skillbook import Skillbook
from ace.core.storage import sidecar_path
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
    arrays["vector_rows"] = arrays["vector_rows"][:-1]
    np.savez(index_path(path), **arrays)
    loaded = Skillbook.load_from_file(path)
    with pytest.warns(RuntimeWarning, match="vector_rows"):
        search_index(loaded, emb).sync(loaded)


def _reloaded(path: Path, emb: TestEmbedder, want: list[list[str]]) -> tuple[Skillbook, SkillSearchIndex]:
    """The skillbook loaded from `path` and its index, after checking it answers `want` without any warning."""
    loaded = Skillbook.load_from_file(path)
    index = search_index(loaded, emb)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert _results(loaded, index) == want
    return loaded, index


def _sidecar_arrays(path: Path) -> dict[str, np.ndarray]:
    with np.load(index_path(path)) as npz:
        return {k: npz[k] for k in npz.files}


def test_the_vectors_are_stored_once_and_the_index_names_the_caches_rows(tmp_path: Path) -> None:
    sb, emb = _book(120), TestEmbedder()
    sb.remove_skill("context-00002", "gone")
    path = tmp_path / "skillbook.json"
    search_index(sb, emb).sync(sb)
    sb.update_skill("harness-00003", "changed after the index saw it, before the save")
    before = _results(sb, search_index(sb, emb))
    sb.save_to_file(path)
    arrays = _sidecar_arrays(path)
    rows = arrays["vector_rows"]  # a dead slot (-1), and the updated skill's new slot at the end: not in order
    assert "vectors" not in arrays and (rows == -1).sum() == 1 and (rows[rows >= 0] != np.arange(rows.size - 1)).any()
    with np.load(sidecar_path(path)) as cache:
        ids = cache["ids"].tolist()
    live = arrays["vector_rows"] >= 0
    assert [ids[k] for k in arrays["vector_rows"][live]] == arrays["slot_ids"][live].tolist()
    assert _reloaded(path, emb, before)[1].loaded_from == str(index_path(path))


def test_without_the_vector_cache_the_index_is_rebuilt_and_nothing_is_lost(tmp_path: Path) -> None:
    sb, emb = _book(60), TestEmbedder()
    path = tmp_path / "skillbook.json"
    before = _results(sb, search_index(sb, emb))
    sb.save_to_file(path)
    sidecar_path(path).unlink()  # the vectors: a cache, recomputed
    loaded, index = _reloaded(path, emb, before)
    assert index.loaded_from is None  # stale, not damaged: no warning
    loaded.save_to_file(path)  # both caches written again, and they agree
    again = Skillbook.load_from_file(path)
    assert _results(again, search_index(again, emb)) == before and search_index(again, emb).loaded_from is not None
    # A cache rewritten in another order than the index names (another tool, an older save): stale, rebuilt.
    with np.load(sidecar_path(path)) as npz:
        cache = {k: npz[k] for k in npz.files}
    order = np.arange(cache["ids"].shape[0])[::-1]
    np.savez(sidecar_path(path), **{k: (v[order] if v.ndim else v) for k, v in cache.items()})
    shuffled = Skillbook.load_from_file(path)
    index = search_index(shuffled, emb)
    assert _results(shuffled, index) == before and index.loaded_from is None


def test_a_sidecar_of_the_previous_format_with_its_own_vectors_still_loads(tmp_path: Path) -> None:
    sb, emb = _book(80), TestEmbedder()
    path = tmp_path / "skillbook.json"
    built = search_index(sb, emb)
    before = _results(sb, built)
    sb.save_to_file(path)
    arrays = _sidecar_arrays(path)  # as the previous version wrote it: the unit rows themselves, in `vectors`
    n = arrays["slot_ids"].shape[0]
    arrays["vectors"] = built._dense.rows_of(np.arange(n, dtype=np.int64), n)
    del arrays["vector_rows"], arrays["vector_norms"]
    assert {arrays[k].dtype.kind for k in ("slot_ids", "slot_hashes", "bm25_vocab", "kw_vocab")} == {"S"}
    for name in ("slot_ids", "slot_hashes", "bm25_vocab", "kw_vocab", "pending"):  # its text was `U`
        arrays[name] = arrays[name].astype(np.str_)
    np.savez(index_path(path), **arrays)
    sidecar_path(path).unlink()  # not needed by such a sidecar
    assert _reloaded(path, emb, before)[1].loaded_from == str(index_path(path))


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
