"""`exact=True` is the reference hybrid answer at any size; the default at scale (probed k-means lists of int8 codes,
the best re-scored in float32) is compared with it, and the codes' error bounds are proved on random vectors."""

from __future__ import annotations

import hashlib
import random
import zipfile
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from _retrieval_books import search_results, small_book
from rank_bm25 import BM25Okapi

from ace.core.npz import RowReader, is_mapped
from ace.core.skillbook import Skillbook
from ace.core.storage import sidecar_path
from ace.embeddings import TestEmbedder
from ace.retrieval import SkillSearchIndex, search_index
from ace.retrieval._dense import DenseStore, faiss_module
from ace.retrieval._lists import ProbeLists
from ace.retrieval._persist import index_path
from ace.retrieval._quantised import Int8Codes, simsimd_module
from ace.retrieval.tokenize import tokenize
from ace.retrieval.top_k import retrieve_top_k

needs_simsimd = pytest.mark.skipif(simsimd_module() is None, reason="simsimd (the ann extra) is not installed")
_book = small_book


def _results(sb: Skillbook, index: SkillSearchIndex, *, exact: bool = False, n: int = 30) -> list[list[str]]:
    return search_results(sb, index, n=n, exact=exact, keywords=["kw3"])


@pytest.mark.skipif(faiss_module() is None, reason="faiss-cpu (the ann extra) is not installed")
def test_exact_search_of_an_hnsw_index_is_the_exact_index_answer(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("ace.retrieval._dense._EXACT_BELOW", 0)  # search the graph even for a small skillbook
    sb, emb = _book(900), TestEmbedder()
    approx = SkillSearchIndex(emb, ann_min=500)
    want = _results(sb, SkillSearchIndex(emb, ann_min=None), exact=True)
    assert _results(sb, approx, exact=True) == want
    assert approx._dense.approximate
    assert _results(sb, approx) != want  # the graph alone does differ here: the comparison above can fail


@needs_simsimd
def test_probed_lists_give_the_exact_answer(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("ace.retrieval.fusion.RRF_WINDOW", 20)
    sb, emb = _book(1200), TestEmbedder()
    want = _results(sb, SkillSearchIndex(emb), exact=True, n=60)
    monkeypatch.setattr("ace.retrieval._dense._QUANT_MIN", 256)
    monkeypatch.setattr("ace.retrieval._lists._MIN_PROBED", 64)  # a few lists of the 35, then the margin's
    scanned = SkillSearchIndex(emb)
    assert _results(sb, scanned, n=60) == want
    assert scanned._dense._codes.count == scanned._bm25.n_slots  # the lists were probed
    assert scanned._dense._lists is not None and scanned._dense._lists.count == 1200
    assert _results(sb, scanned, exact=True, n=60) == want
    sb.add_skill("harness", "ka1 ka2 lo3 brand new words", ["kw1"])  # codes follow new rows
    top = retrieve_top_k(sb, "ka1 ka2 lo3 brand new words", embedder=emb, exact=True)[0]
    assert [s.id for s in scanned.search(sb, "ka1 ka2 lo3 brand new words", top_k=1)] == [top.id]


@needs_simsimd
def test_above_with_the_scan_is_exact(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(3)
    rows = rng.standard_normal((3000, 48)).astype(np.float32)
    rows[1000:1100] = rows[:100] + 0.2 * rng.standard_normal((100, 48)).astype(np.float32)  # near-duplicates
    rows /= np.linalg.norm(rows, axis=1, keepdims=True)
    plain, scanned = DenseStore(48, ann_min=None), DenseStore(48, ann_min=None)
    for slot, row in enumerate(rows):
        plain.set(slot, row)
        scanned.set(slot, row)
    monkeypatch.setattr("ace.retrieval._dense._QUANT_MIN", 100)
    cand = np.arange(0, 3000, 2, dtype=np.int64)
    for q in (0, 10, 1050, 2999):
        for floor in (0.5, 0.9):
            got = np.sort(scanned.above(rows[q], 3000, cand, floor))
            monkeypatch.setattr("ace.retrieval._dense._QUANT_MIN", 10**9)
            assert got.tolist() == np.sort(plain.above(rows[q], 3000, cand, floor)).tolist()
            monkeypatch.setattr("ace.retrieval._dense._QUANT_MIN", 100)
    assert scanned._codes.count == 3000


@needs_simsimd
def test_int8_error_bounds_hold() -> None:
    simsimd = simsimd_module()
    rng = np.random.default_rng(0)
    rows = rng.standard_normal((5000, 384)).astype(np.float32)
    rows[:50] *= rng.random((50, 384)).astype(np.float32) ** 8  # a few spiky rows (one large coordinate)
    rows /= np.linalg.norm(rows, axis=1, keepdims=True)
    codes = Int8Codes(384)
    codes.extend([rows[:1234], rows[1234:]], 3000)
    codes.extend([rows[:1234], rows[1234:]], 5000)  # in two steps, as an index grows
    for _ in range(20):
        query = rng.standard_normal(384).astype(np.float32)
        query /= np.linalg.norm(query)
        approx, bound = codes.scores(simsimd, query)
        exact = rows @ query
        assert (np.abs(approx - exact) <= bound).all()
        assert float(bound.max()) < 0.05  # and tight enough to be useful


def _saved_with_codes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> tuple[Skillbook, TestEmbedder, list[list[str]], Path]:
    """600 skills saved with an index that probes lists of int8 codes (from 256 skills); the exact results."""
    monkeypatch.setattr("ace.retrieval._dense._QUANT_MIN", 256)
    monkeypatch.setattr("ace.retrieval.fusion.RRF_WINDOW", 20)
    monkeypatch.setattr("ace.retrieval._lists._MIN_PROBED", 64)
    sb, emb = _book(600), TestEmbedder()
    want = _results(sb, search_index(sb, emb), exact=True)
    path = tmp_path / "skillbook.json"
    sb.save_to_file(path)
    return sb, emb, want, path


@needs_simsimd
def test_int8_codes_are_saved_read_back_and_rebuilt_when_missing_or_impossible(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _, emb, want, path = _saved_with_codes(tmp_path, monkeypatch)
    with zipfile.ZipFile(index_path(path)) as zf:
        names = set(zf.namelist())  # the vectors themselves are in `.embeddings.npz` only: named, not repeated
        assert {"codes.npy", "code_scales.npy", "code_errors.npy", "vector_rows.npy", "vector_norms.npy"} <= names
        assert {"list_of.npy", "list_centroids.npy", "list_radii.npy"} <= names  # the k-means lists
        assert "vectors.npy" not in names
    loaded = Skillbook.load_from_file(path)
    index = SkillSearchIndex(emb)
    with monkeypatch.context() as patched:
        patched.setattr(ProbeLists, "build", None)  # read back: clustering again would fail here
        assert _results(loaded, index) == want
    assert index.loaded_from is not None and index._dense._codes.count == 600  # read, not encoded again
    assert index._dense._lists is not None and index._dense._lists.count == 600
    # A list that does not exist would send rows nowhere: the sidecar is refused with a warning and rebuilt.
    arrays = dict(np.load(index_path(path)))
    np.savez(index_path(path), **{**arrays, "list_of": np.full(600, 10**6, dtype=np.int32)})
    index = SkillSearchIndex(emb)
    with pytest.warns(RuntimeWarning, match="probe lists"):
        assert _results(Skillbook.load_from_file(path), index) == want
    assert index.loaded_from is None
    # A sidecar without lists (an older version's), or without codes and lists (written below the threshold), loads;
    # what is missing is made again at the first search.
    for missing in (("list_of", "list_centroids", "list_radii"), ("codes", "code_scales", "code_errors")):
        arrays = {k: v for k, v in arrays.items() if k not in missing}
        np.savez(index_path(path), **arrays)
        index = SkillSearchIndex(emb)
        assert _results(Skillbook.load_from_file(path), index) == want and index.loaded_from is not None
        assert index._dense._lists is not None and index._dense._lists.count == 600
    # Impossible bounds (negative) would let `above` miss rows: the sidecar is refused with a warning and rebuilt.
    arrays["code_errors"], arrays["codes"] = -np.ones(600, dtype=np.float32), np.zeros((600, 64), dtype=np.int8)
    arrays["code_scales"] = np.ones(600, dtype=np.float32)
    np.savez(index_path(path), **arrays)
    index = SkillSearchIndex(emb)
    with pytest.warns(RuntimeWarning, match="int8 codes"):
        assert _results(Skillbook.load_from_file(path), index) == want
    assert index.loaded_from is None


@needs_simsimd
def test_rows_of_a_mapped_sidecar_are_read_from_its_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("ace.core.npz.MAP_MIN_BYTES", 0)
    sb, emb, want, path = _saved_with_codes(tmp_path, monkeypatch)
    seen = sidecar_path(path).stat()  # the rows are those of the vector cache, which the index names
    index = SkillSearchIndex(emb)
    loaded = Skillbook.load_from_file(path)
    assert _results(loaded, index) == want
    reader, base = index._dense._base_rows, index._dense._base
    assert reader is not None and is_mapped(base)
    rows = np.asarray([599, 0, 17, 17, 300], dtype=np.int64)
    assert reader.take(rows).tobytes() == base[rows].tobytes()
    unit = index._dense.rows_of(rows, 600)  # the cache's vectors divided by their norms: the index's unit rows
    assert unit.tobytes() == search_index(sb, emb)._dense.rows_of(rows, 600).tobytes()
    # A file replaced since it was mapped is not read: the rows come through the mapping.
    sb.add_skill("harness", "ka1 lo2 a change", ["kw1"])
    sb.save_to_file(path)
    assert RowReader.reader(base, sidecar_path(path), seen) is None
    assert RowReader.reader(np.zeros((3, 4), dtype=np.float32), sidecar_path(path), seen) is None  # not mapped


class _ClusteredEmbedder:
    """Topics from a text's first word, subtopics from its second, the rest its own direction (as
    `benchmarks/_synthetic.py`'s `ClusteredEmbedder`): lists of such vectors hold whole clusters, hard to prune."""

    dimension = 48
    model_name = "test-clustered-48"

    def embed(self, texts: list[str]) -> np.ndarray:
        out = np.empty((len(texts), self.dimension), dtype=np.float32)
        for row, text in enumerate(texts):
            words = text.split()
            parts = [f"t{words[0]}", f"s{words[0]}/{words[1] if len(words) > 1 else ''}", text]
            seeds = [int.from_bytes(hashlib.blake2b(p.encode(), digest_size=8).digest(), "little") for p in parts]
            out[row] = sum(
                w * np.random.default_rng(seed).standard_normal(self.dimension)
                for w, seed in zip((0.5, 0.5, 0.7), seeds, strict=True)
            )
        unit: np.ndarray = out / np.linalg.norm(out, axis=1, keepdims=True)
        return unit


@needs_simsimd
def test_probed_lists_on_a_clustered_book_give_the_exact_answer(monkeypatch: pytest.MonkeyPatch) -> None:
    """3,000 skills in clusters, the lists probed from 1,024 skills: the default's top 5 is `exact=True`'s on every
    query (the margin's job), and `exact=True` is the windowed RRF computed from scratch."""
    monkeypatch.setattr("ace.retrieval._dense._QUANT_MIN", 1024)
    monkeypatch.setattr("ace.retrieval._lists._MIN_PROBED", 128)
    monkeypatch.setattr("ace.retrieval.fusion.RRF_WINDOW", 30)
    rng = random.Random(5)
    words = [f"w{i}" for i in range(300)]
    sb = Skillbook()
    for i in range(3000):  # Zipf-like first words: a few large clusters, many small ones
        text = " ".join(words[min(int(rng.paretovariate(1.2)) - 1, 299)] for _ in range(rng.randint(6, 14)))
        sb.add_skill("context" if i % 4 else "harness", text, [f"kw{i % 9}"], f"step {i}" if i % 4 else None)
    emb = _ClusteredEmbedder()
    index = SkillSearchIndex(emb)
    queries = [" ".join(words[min(int(rng.paretovariate(1.2)) - 1, 299)] for _ in range(8)) for _ in range(60)]
    lexical = BM25Okapi([tokenize(s.embedding_text()) for s in sb.skills()])
    for k, q in enumerate(queries):
        filters: dict[str, Any] = {"section": "context", "keywords": ["kw2"]} if k % 2 else {}
        got = [s.id for s in index.search(sb, q, top_k=5, **filters)]
        want = [s.id for s in index.search(sb, q, top_k=5, exact=True, **filters)]
        assert got == want
        assert want == _windowed_rrf_from_scratch(sb, emb, lexical, q, 30, **filters)
    assert index._dense._lists is not None and index._dense._lists.count == 3000


def _windowed_rrf_from_scratch(
    sb: Skillbook, emb: _ClusteredEmbedder, bm25: BM25Okapi, query: str, window: int, **filters: Any
) -> list[str]:
    """The definition, from the skills: cosines and rank-bm25's scores, each ranking cut at `window`, RRF k=60 plus
    the keyword ranking (tied ranks by shared keywords), ties by creation order."""
    from ace.retrieval._slots import tie_key  # creation order: number, then section

    skills = sorted(
        (s for s in sb.skills() if filters.get("section") in (None, s.section)), key=lambda s: tie_key(s.id)
    )
    vectors = np.stack([s.embedding / np.linalg.norm(s.embedding) for s in skills if s.embedding is not None])
    cosines = np.einsum("ij,j->i", vectors, emb.embed([query])[0])
    tokens = tokenize(query)
    lexical = bm25.get_scores(tokens)
    every = {s.id: i for i, s in enumerate(sb.skills())}
    words = set(tokens)
    matched = [i for i, s in enumerate(skills) if words & set(tokenize(s.embedding_text()))]
    fused = [0.0] * len(skills)
    for ranked in (
        sorted(range(len(skills)), key=lambda i: (-cosines[i], i)),
        sorted(matched, key=lambda i: (-lexical[every[skills[i].id]], i)),
    ):
        for rank, i in enumerate(ranked[:window], start=1):
            fused[i] += 1.0 / (60 + rank)
    wanted = set(filters.get("keywords") or ())
    counts = [len(wanted & set(s.keywords)) for s in skills]
    for i, c in enumerate(counts):
        if c:
            fused[i] += 1.0 / (60 + 1 + sum(1 for other in counts if other > c))
    return [skills[i].id for i in sorted(range(len(skills)), key=lambda i: (-fused[i], i)) if fused[i] > 0][:5]
