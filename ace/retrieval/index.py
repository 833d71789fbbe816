"""`SkillSearchIndex`: the BM25 index and the embedding matrix of a skillbook's visible skills, kept in step.

The index follows the skillbook by its `version` and `changes_since`: before each search it re-reads
only the skills that changed (a tag changes counters, not text, so it costs nothing), embeds only the
skills whose vector is missing, and never rebuilds per query. It stores skill ids, never `Skill`
objects (the skillbook replaces those on every mutation).
"""

from __future__ import annotations

import threading
import warnings
import weakref
from collections.abc import Sequence
from pathlib import Path
from typing import Literal

import numpy as np
import numpy.typing as npt

from ace.core.skill import Section, Skill, embedding_input_hash, normalize_keywords
from ace.core.skillbook import Skillbook
from ace.core.storage import FileState, Writer
from ace.embeddings.base import Embedder, EmbeddingError, EmbeddingMatrix, check_embeddings, l2_normalize
from ace.embeddings.minilm import default_embedder
from ace.exceptions import SkillbookError
from ace.retrieval._dense import ANN_MIN, DenseStore
from ace.retrieval._keywords import KeywordTable
from ace.retrieval._persist import INDEX_FORMAT, graph_reader, index_path, index_writer, read_index
from ace.retrieval.bm25 import BM25Index
from ace.retrieval.fusion import RRF_K, Ranking, fuse_top_k
from ace.retrieval.tokenize import tokenize

__all__ = ["RRF_K", "SearchMode", "SkillSearchIndex", "search_index"]

SearchMode = Literal["hybrid", "bm25", "dense"]
_SECTION_CODE: dict[Section, int] = {"context": 0, "harness": 1}
_EMBED_BATCH = 64
_IntArray = npt.NDArray[np.int64]


def _tie_key(skill_id: str) -> int:
    """Creation order from an id like `context-00042` (number first, then section); other ids sort after."""
    prefix, _, number = skill_id.rpartition("-")
    code = {"context": 0, "harness": 1}.get(prefix)
    if number.isdigit() and code is not None:
        return int(number) * 2 + code
    return (1 << 62) + int(embedding_input_hash(skill_id)[:15], 16)


def _search_keywords(keywords: Sequence[str]) -> list[str]:
    """Requested keywords normalised like stored ones; a label that cannot be one is ignored, not an error."""
    out: list[str] = []
    for raw in keywords:
        try:
            out.extend(normalize_keywords([raw]))
        except SkillbookError:
            continue
    return list(dict.fromkeys(out))


class SkillSearchIndex:
    """Hybrid (BM25 + dense, fused by RRF) search over one skillbook's visible skills, for one embedder.

    An index follows one skillbook (`search_index` keeps it on `skillbook.caches`); handed another
    skillbook, it starts over. Thread-safe.
    """

    def __init__(self, embedder: Embedder, *, batch_size: int = _EMBED_BATCH, ann_min: int | None = ANN_MIN) -> None:
        self.embedder = embedder
        self.batch_size = batch_size
        """Texts per embedding request when skills need vectors."""
        self.ann_min = ann_min
        """Live skills from which dense search goes through an HNSW graph (with the `ann` extra); `None`: exact."""
        self.loaded_from: str | None = None
        """The index sidecar this index was read from, if any (`ace.retrieval._persist`)."""
        self._lock = threading.Lock()
        self._book: weakref.ref[Skillbook] | None = None
        self._reset()

    def _reset(self) -> None:
        self._version = -1
        self._model: str | None = None
        self._bm25 = BM25Index()
        self._slot_ids: list[str] = []
        self._slot_hashes: list[str] = []
        self._keywords = KeywordTable()
        self._slot_of: dict[str, int] = {}
        self._sections = np.zeros(64, dtype=np.int8)
        self._tie_keys = np.zeros(64, dtype=np.int64)
        self._by_key = np.zeros(0, dtype=np.int64)
        """All slots (dead ones too) in creation order of their skills: `_sorted_keys` are their tie keys."""
        self._sorted_keys = np.zeros(0, dtype=np.int64)
        self._new_slots: list[int] = []
        self._dense = DenseStore(self.embedder.dimension, ann_min=self.ann_min)
        self._pending: set[str] = set()

    @property
    def size(self) -> int:
        """Number of skills currently indexed."""
        return len(self._slot_of)

    # ------------------------------------------------------------------ search
    def search(
        self,
        skillbook: Skillbook,
        query: str,
        *,
        top_k: int = 5,
        section: Section | None = None,
        keywords: Sequence[str] | None = None,
        k: int = RRF_K,
        mode: SearchMode = "hybrid",
    ) -> list[Skill]:
        """The `top_k` best visible skills for `query`, fused from BM25, dense and keyword ranks.

        `mode` keeps only the lexical (`bm25`) or only the dense ranking, for evaluations.
        Raises `EmbeddingError` when the query (or a skill that needs a vector) cannot be embedded.
        """
        query_vec = self.embed_query(query) if mode != "bm25" else None
        tokens = tokenize(query) if mode != "dense" else []
        wanted = _search_keywords(keywords or ())
        with self._lock:
            self._sync(skillbook)
            with skillbook.locked():
                self._apply(skillbook)  # pick up anything that changed while we were embedding
                slots = self._rank(query_vec, tokens, top_k, section, wanted, k)
                found = [skillbook.get_skill(self._slot_ids[s]) for s in slots]
        return [s for s in found if s is not None and s.visible]

    def embed_query(self, query: str) -> EmbeddingMatrix:
        """The query's unit vector; `EmbeddingError` when the embedder fails or returns garbage."""
        name = self.embedder.model_name
        try:
            raw = self.embedder.embed([query])
        except EmbeddingError:
            raise
        except Exception as e:
            raise EmbeddingError(f"could not embed the search query with {name!r}: {e}") from e
        vec = check_embeddings(raw, n_texts=1, dimension=self.embedder.dimension, model_name=name)
        unit: EmbeddingMatrix = l2_normalize(vec)[0]
        return unit

    def sync(self, skillbook: Skillbook) -> None:
        """Bring the index up to date with `skillbook`, embedding the skills that have no vector yet."""
        with self._lock:
            self._sync(skillbook)

    # ------------------------------------------------------------- internals
    def _rank(
        self,
        query_vec: EmbeddingMatrix | None,
        tokens: list[str],
        top_k: int,
        section: Section | None,
        keywords: list[str],
        k: int,
    ) -> list[int]:
        n = self._bm25.n_slots
        mask = self._bm25.alive.copy()
        if section is not None:
            mask &= self._sections[:n] == _SECTION_CODE[section]
        # Candidates in creation order, so every tie below breaks the same way however the index grew.
        cand = self._by_key[mask[self._by_key]]
        if cand.size == 0:
            return []
        m = cand.size
        lists: list[Ranking] = []
        if query_vec is not None:
            lists.append(Ranking(*self._dense.scores(query_vec, n, cand, depth=max(1024, 4 * top_k))))
        if tokens:
            bm25, hit = self._bm25.scores(tokens)
            matched = np.flatnonzero(hit[cand])
            lists.append(Ranking(matched, bm25[cand[matched]]))
        extra = None
        if keywords:
            shared = np.zeros(n, dtype=np.int64)
            for kw in keywords:
                hits = self._keywords.slots(kw, lambda: self._bm25.alive)
                shared[np.fromiter(hits, dtype=np.int64, count=len(hits))] += 1
            counts = shared[cand]
            labelled = np.flatnonzero(counts)
            if labelled.size:
                # Tied ranks: every skill sharing the same number of keywords gets the same rank.
                negative = -counts[labelled]
                ranks = 1 + np.searchsorted(np.sort(negative), negative, side="left")
                extra = np.zeros(m, dtype=np.float64)
                extra[labelled] = 1.0 / (k + ranks.astype(np.float64))
        best = fuse_top_k(lists, m, top_k, k=k, extra=extra)
        return [int(s) for s in cand[best]]

    def _sync(self, skillbook: Skillbook) -> None:
        """Apply skillbook changes; embed missing vectors outside the skillbook lock; repeat until done."""
        for _ in range(100):
            with skillbook.locked():
                todo = self._apply(skillbook)
            if not todo:
                return
            vectors = self._embed_texts([text for _, text in todo])
            with skillbook.locked():
                if skillbook.embedding_model != self.embedder.model_name:
                    continue  # someone switched models meanwhile; start over
                for (sid, text), vec in zip(todo, vectors, strict=True):
                    skill = skillbook.get_skill(sid)
                    if skill is not None and skill.embedding is None and skill.embedding_text() == text:
                        skillbook.set_embedding(sid, vec)
        raise EmbeddingError("the skillbook kept changing while its skills were being embedded; retry the search")

    def _embed_texts(self, texts: list[str]) -> list[EmbeddingMatrix]:
        name, dim = self.embedder.model_name, self.embedder.dimension
        out: list[EmbeddingMatrix] = []
        for start in range(0, len(texts), self.batch_size):
            batch = texts[start : start + self.batch_size]
            try:
                raw = self.embedder.embed(batch)
            except EmbeddingError:
                raise
            except Exception as e:
                raise EmbeddingError(f"could not embed {len(batch)} skill(s) with {name!r}: {e}") from e
            out.extend(check_embeddings(raw, n_texts=len(batch), dimension=dim, model_name=name))
        return out

    def _apply(self, skillbook: Skillbook) -> list[tuple[str, str]]:
        """Index every changed skill that has a vector; return `(id, text)` of those still needing one.

        Caller holds both locks.
        """
        if self._book is None or self._book() is not skillbook:
            self._book = weakref.ref(skillbook)
            self._reset()
        model = self.embedder.model_name
        if skillbook.embedding_model != model:
            # Vectors of another model are useless here (and would mix spaces in the sidecar): drop them.
            for skill in skillbook.skills(include_inactive=True):
                if skill.embedding is not None:
                    skillbook.set_embedding(skill.id, None)
            skillbook.embedding_model = model
            self._reset()
        if self._version == -1:
            self._load_sidecar(skillbook)
        version = skillbook.version
        if self._version == version and self._model == model and not self._pending:
            return []
        changed = skillbook.changes_since(self._version) if 0 <= self._version <= version else None
        dead = self._bm25.n_slots - len(self._slot_of)
        if dead > max(1024, len(self._slot_of)):
            changed = None  # mostly dead slots: compact by rebuilding from the skills' cached vectors
        if changed is None:
            self._reset()
            ids: set[str] | list[str] = [s.id for s in skillbook.skills(include_inactive=True)]
            self._reserve(len(ids))
        else:
            ids = changed | self._pending
        self._version, self._model = version, model
        self._pending = set()
        todo: list[tuple[str, str]] = []
        for sid in ids:
            need = self._update_one(sid, skillbook.get_skill(sid))
            if need is not None:
                self._pending.add(sid)
                todo.append((sid, need))
        self._order_new_slots()
        self._dense.maybe_switch(self._bm25.n_slots, len(self._slot_of))
        return todo

    def _order_new_slots(self) -> None:
        """Merge the slots added since last time into `_by_key` (one sort of the new ones, one insert)."""
        if not self._new_slots:
            return
        new = np.asarray(self._new_slots, dtype=np.int64)
        self._new_slots = []
        keys = self._tie_keys[new]
        order = np.argsort(keys, kind="stable")
        new, keys = new[order], keys[order]
        at = np.searchsorted(self._sorted_keys, keys, side="right")
        self._by_key = np.insert(self._by_key, at, new)
        self._sorted_keys = np.insert(self._sorted_keys, at, keys)

    def _reserve(self, n: int) -> None:
        """Room for `n` slots in the per-slot arrays (grown by doubling, or to `n` at once)."""
        self._dense.reserve(n)
        if n <= self._sections.shape[0]:
            return
        cap = max(n, 2 * self._sections.shape[0])
        self._sections = np.resize(self._sections, cap)
        self._tie_keys = np.resize(self._tie_keys, cap)

    def _update_one(self, sid: str, skill: Skill | None) -> str | None:
        """Re-index one skill; returns its text when it needs a vector first."""
        slot = self._slot_of.get(sid)
        if skill is None or not skill.visible:  # removed or quarantined: out of every search
            if slot is not None:
                self._drop(slot)
            if skill is not None and skill.active and skill.embedding is None:
                return skill.embedding_text()  # quarantined: still embedded, so the sidecar stays complete
            return None
        text = skill.embedding_text()
        digest = embedding_input_hash(text)
        if slot is not None and self._slot_hashes[slot] == digest:
            return None
        vec = skill.embedding
        if vec is None or vec.shape != (self.embedder.dimension,):
            return text
        if slot is not None:
            self._drop(slot)
        self._add(sid, digest, skill, vec, text)
        return None

    def _add(self, sid: str, digest: str, skill: Skill, vec: EmbeddingMatrix, text: str) -> None:
        slot = self._bm25.add(tokenize(text))
        self._reserve(slot + 1)
        norm = float(np.linalg.norm(vec))
        self._dense.set(slot, vec / norm if norm > 0 else vec)
        self._sections[slot] = _SECTION_CODE[skill.section]
        self._tie_keys[slot] = _tie_key(sid)
        self._new_slots.append(slot)
        self._slot_ids.append(sid)
        self._slot_hashes.append(digest)
        self._keywords.append(slot, tuple(skill.keywords))
        self._slot_of[sid] = slot

    def _drop(self, slot: int) -> None:
        self._bm25.remove(slot)
        del self._slot_of[self._slot_ids[slot]]
        self._keywords.drop(slot)

    # ------------------------------------------------------------ persistence
    def sidecar_files(self, skillbook: object, saved: FileState) -> list[tuple[Path, Writer]]:
        """The index sidecar to write with `skillbook` saved as `saved` (`Skillbook.save_to_file` asks)."""
        if not isinstance(skillbook, Skillbook):
            return []
        with self._lock, skillbook.locked():
            model = self.embedder.model_name
            if skillbook.version != saved.version or skillbook.embedding_model != model:
                return []
            self._apply(skillbook)
            n, dim = self._bm25.n_slots, self.embedder.dimension
            kw_vocab, kw_ptr, kw_ids = self._keywords.arrays()
            bm25 = {f"bm25_{k}": v.copy() for k, v in self._bm25.state().items()}
            arrays = {
                "slot_ids": np.asarray(self._slot_ids, dtype=np.str_),
                "slot_hashes": np.asarray(self._slot_hashes, dtype=np.str_),
                "sections": self._sections[:n].copy(),
                "tie_keys": self._tie_keys[:n].copy(),
                "kw_vocab": np.asarray(kw_vocab, dtype=np.str_),
                "kw_ptr": kw_ptr,
                "kw_ids": kw_ids,
                "pending": np.asarray(sorted(self._pending), dtype=np.str_),
                **bm25,
                **self._dense.state(n),
            }
        sizes = {
            "n": n,
            "p": arrays["bm25_terms"].shape[0],
            "v": arrays["bm25_vocab"].shape[0],
            "m": arrays["bm25_main_slots"].shape[0],
            "k": len(kw_vocab),
            "w": kw_ids.shape[0],
            "r": len(self._pending),
            "d": dim,
            "h": arrays["hnsw"].shape[0] if "hnsw" in arrays else 0,
        }
        header = {"format": INDEX_FORMAT, "skillbook_sha256": saved.digest, "model": model, "dim": dim, "sizes": sizes}
        return [(index_path(saved.path), index_writer(header, arrays))]

    def _load_sidecar(self, skillbook: Skillbook) -> None:
        """Take the state saved beside the skillbook file it was loaded from, when it matches that file."""
        state = skillbook.file_state
        if state is None or skillbook.embedding_model != self.embedder.model_name:
            return
        path = index_path(state.path)
        found = read_index(path, digest=state.digest, model=self.embedder.model_name, dim=self.embedder.dimension)
        if found is None:
            return
        header, a = found
        if header["graph"] and self.ann_min is None:
            return  # an exact-only index: rebuilt with a float32 matrix
        n = a["slot_ids"].shape[0]
        try:
            bm25 = BM25Index.from_state({k[5:]: v for k, v in a.items() if k.startswith("bm25_")})
            graph = graph_reader(path) if header["graph"] else None
            dense = DenseStore.from_state(a, self.embedder.dimension, n, ann_min=self.ann_min, graph=graph)
            ptr, ids = a["kw_ptr"], a["kw_ids"]
            if bm25.n_slots != n or (np.diff(ptr) < 0).any() or int(ptr[-1]) != ids.size or ptr[0] != 0:
                raise ValueError("its keyword lists do not fit its slots")
            if ids.size and (int(ids.min()) < 0 or int(ids.max()) >= a["kw_vocab"].shape[0]):
                raise ValueError("its keyword lists name unknown keywords")
        except ValueError as e:
            warnings.warn(f"{path}: {e}; ignored (the search index is rebuilt)", RuntimeWarning, stacklevel=2)
            return
        slot_ids: list[str] = a["slot_ids"].tolist()
        alive = bm25.alive
        slot_of = {slot_ids[i]: i for i in np.flatnonzero(alive).tolist()}
        if len(slot_of) != int(alive.sum()):
            warnings.warn(f"{path}: a skill holds two live slots; ignored", RuntimeWarning, stacklevel=2)
            return
        self._keywords = KeywordTable(a["kw_vocab"].tolist(), ptr, ids)
        self._bm25, self._dense, self._slot_ids, self._slot_of = bm25, dense, slot_ids, slot_of
        self._slot_hashes = a["slot_hashes"].tolist()
        self._sections, self._tie_keys = a["sections"].copy(), a["tie_keys"].copy()
        self._by_key = np.argsort(self._tie_keys, kind="stable").astype(np.int64)
        self._sorted_keys = self._tie_keys[self._by_key]
        self._pending = {str(p) for p in a["pending"].tolist()}
        self._version, self._model = state.version, self.embedder.model_name
        self.loaded_from = str(path)


_CACHE_KEY = "ace.search_index"


def search_index(skillbook: Skillbook, embedder: Embedder | None = None) -> SkillSearchIndex:
    """The search index cached on `skillbook`, created on first use.

    `embedder=None` keeps the embedder the cached index already uses, or takes the offline default
    (all-MiniLM-L6-v2 int8). An embedder of another `model_name` replaces the index, and the skills are
    re-embedded with it on the next search.
    """
    with skillbook.locked():
        cached = skillbook.caches.get(_CACHE_KEY)
        index = cached if isinstance(cached, SkillSearchIndex) else None
        if index is not None and (embedder is None or embedder is index.embedder):
            return index
        chosen = embedder if embedder is not None else default_embedder()
        if index is not None and index.embedder.model_name == chosen.model_name:
            index.embedder = chosen  # same vector space: keep the index, use the caller's embedder object
            return index
        index = SkillSearchIndex(chosen)
        skillbook.caches[_CACHE_KEY] = index
        return index
