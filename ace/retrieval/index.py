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
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Literal

import numpy as np
import numpy.typing as npt

import ace.retrieval._persist as _persist
from ace.core.npz import is_mapped, text_array, text_list
from ace.core.skill import Section, Skill, embedding_input_hash
from ace.core.skillbook import Skillbook
from ace.core.storage import FileState, Writer, gc_paused
from ace.embeddings.base import Embedder, EmbeddingError, EmbeddingMatrix
from ace.embeddings.minilm import default_embedder
from ace.retrieval._dense import DenseStore
from ace.retrieval._embedding import embed_query, embed_texts, own_copy
from ace.retrieval._hybrid import UnitRows, hybrid_rank, keyword_boost, skill_unit_rows
from ace.retrieval._keywords import KeywordTable, search_keywords
from ace.retrieval._persist import INDEX_FORMAT, graph_reader, index_path, index_writer, read_index
from ace.retrieval._slots import Candidates, TextColumn, tie_key
from ace.retrieval.bm25 import BM25Index
from ace.retrieval.fusion import RRF_K
from ace.retrieval.tokenize import tokenize

__all__ = ["RRF_K", "SearchMode", "SkillSearchIndex", "search_index"]

SearchMode = Literal["hybrid", "bm25", "dense"]
_SECTION_CODE: dict[Section, int] = {"context": 0, "harness": 1}
_EMBED_BATCH = 64
_IntArray = npt.NDArray[np.int64]


class SkillSearchIndex:
    """Hybrid (BM25 + dense, fused by RRF) search over one skillbook's visible skills, for one embedder.

    An index follows one skillbook (`search_index` keeps it on `skillbook.caches`); handed another
    skillbook, it starts over. Thread-safe.
    """

    def __init__(self, embedder: Embedder, *, batch_size: int = _EMBED_BATCH, ann_min: int | None = None) -> None:
        self.embedder = embedder
        self.batch_size = batch_size
        """Texts per embedding request when skills need vectors."""
        self.ann_min = ann_min
        """Live skills from which dense search goes through an HNSW graph (with the `ann` extra; e.g. `ANN_MIN`);
        `None` (the default): the float32 rows, scanned first as int8 codes at scale (`ace.retrieval._quantised`)."""
        self.loaded_from: str | None = None
        """The index sidecar this index was read from, if any (`ace.retrieval._persist`)."""
        self._lock = threading.Lock()
        self._book: weakref.ref[Skillbook] | None = None
        self._reset()

    def _reset(self) -> None:
        self._version = -1
        self._model: str | None = None
        self._bm25 = BM25Index()
        self._slot_ids = TextColumn()
        self._slot_hashes = TextColumn()
        self._keywords = KeywordTable()
        self._slot_of: dict[str, int] | None = {}
        """The live slot of each indexed skill id; `None` until a change needs it after a load (`_slots_by_id`)."""
        self._live = 0
        self._sections = np.zeros(64, dtype=np.int8)
        self._tie_keys = np.zeros(64, dtype=np.int64)
        self._by_key = np.zeros(0, dtype=np.int64)
        self._candidates = Candidates()
        """All slots (dead ones too) in creation order of their skills: `_sorted_keys` are their tie keys."""
        self._sorted_keys = np.zeros(0, dtype=np.int64)
        self._new_slots: list[int] = []
        self._dense = DenseStore(self.embedder.dimension, ann_min=self.ann_min)
        self._pending: set[str] = set()
        self._shared: list[tuple[str, EmbeddingMatrix]] = []
        """Rows of the index for the skills just indexed to hold instead of a copy of their own (`_index`)."""
        self._sharing = True
        """False while a rebuild goes to HNSW: the graph holds float16 codes, so there is nothing to share."""

    @property
    def size(self) -> int:
        """Number of skills currently indexed."""
        return self._live

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
        exact: bool = False,
    ) -> list[Skill]:
        """The `top_k` best visible skills for `query`, fused from BM25, dense and keyword ranks.

        `mode` keeps only the lexical (`bm25`) or only the dense ranking, for evaluations. `exact` computes every
        cosine in float32 and sorts every ranking in full, whatever the size: the reference the default (at scale an
        approximate dense ranking, `ace.retrieval._hybrid`) is measured against.
        Raises `EmbeddingError` when the query (or a skill that needs a vector) cannot be embedded.
        """
        query_vec = self.embed_query(query) if mode != "bm25" else None
        tokens = tokenize(query) if mode != "dense" else []
        wanted = search_keywords(keywords or ())
        with self._lock:
            self._sync(skillbook)
            with skillbook.locked():
                self._apply(skillbook)  # pick up anything that changed while we were embedding
                slots = self._rank(skillbook, query_vec, tokens, top_k, section, wanted, k, exact)
                found = [skillbook.get_skill(self._slot_ids[s]) for s in slots]
        return [s for s in found if s is not None and s.visible]

    def embed_query(self, query: str) -> EmbeddingMatrix:
        """The query's unit vector; `EmbeddingError` when the embedder fails or returns garbage."""
        return embed_query(self.embedder, query)

    def sync(self, skillbook: Skillbook) -> None:
        """Bring the index up to date with `skillbook`, embedding the skills that have no vector yet."""
        with self._lock:
            self._sync(skillbook)

    def near(self, skillbook: Skillbook, units: Mapping[str, EmbeddingMatrix], floor: float) -> dict[str, list[str]]:
        """For each indexed skill id of `units` (its unit vector), the other visible skills of its section whose
        cosine with it is `floor` or more (`DenseStore.above`: HNSW cosines are float16's, ~1e-3 off)."""
        with self._lock:
            self._sync(skillbook)
            with skillbook.locked():
                self._apply(skillbook)
                n, slots, found = self._bm25.n_slots, self._slots_by_id(), dict[str, list[str]]()
                for sid in (s for s in units if s in slots):
                    cand = np.flatnonzero(self._bm25.alive & (self._sections[:n] == self._sections[slots[sid]]))
                    hits = self._dense.above(units[sid], n, cand, floor, own=slots[sid]).tolist()
                    found[sid] = [self._slot_ids[s] for s in hits if s != slots[sid]]
        return found

    # ------------------------------------------------------------- internals
    def _rank(
        self,
        skillbook: Skillbook,
        query_vec: EmbeddingMatrix | None,
        tokens: list[str],
        top_k: int,
        section: Section | None,
        keywords: list[str],
        k: int,
        exact: bool,
    ) -> list[int]:
        # Candidates in creation order, so every tie below breaks the same way however the index grew.
        code = _SECTION_CODE[section] if section is not None else None
        cand, pos = self._candidates.of(self._bm25.alive, self._sections, code, self._by_key)
        if cand.size == 0:
            return []
        extra = keyword_boost(self._keywords, self._bm25.alive, keywords, pos, k) if keywords else None
        rows = self._unit_rows(skillbook)
        best = hybrid_rank(
            self._dense, self._bm25, query_vec, tokens, cand, pos, top_k, k=k, extra=extra, exact=exact, unit_rows=rows
        )
        return [int(s) for s in cand[best]]

    def _unit_rows(self, skillbook: Skillbook) -> UnitRows:
        """The float32 unit vectors of the slots, from the skills' own vectors (exact search in HNSW mode)."""
        return skill_unit_rows(skillbook, self._slot_ids, self._bm25.alive, self.embedder.dimension)

    def _sync(self, skillbook: Skillbook) -> None:
        """Apply skillbook changes; embed missing vectors outside the skillbook lock, a batch at a time, indexing
        each batch at once (its array is then free for the next: no batch outlives its turn); repeat until done."""
        for _ in range(100):
            with skillbook.locked():
                todo = self._apply(skillbook)
            if not todo:
                return
            for start in range(0, len(todo), self.batch_size):
                batch = todo[start : start + self.batch_size]
                vectors = embed_texts(self.embedder, [text for _, text in batch], self.batch_size)
                with skillbook.locked():
                    if skillbook.embedding_model != self.embedder.model_name:
                        break  # someone switched models meanwhile; start over
                    for (sid, text), vec in zip(batch, vectors, strict=True):
                        skill = skillbook.get_skill(sid)
                        if skill is not None and skill.embedding is None and skill.embedding_text() == text:
                            # An indexed skill is handed a row of the index's (`_add`); a quarantined one keeps a
                            # copy, so that no batch stays alive for one row of it.
                            skillbook.set_embedding(sid, vec if skill.visible else own_copy(vec))
                    self._index(skillbook, [sid for sid, _ in batch])
        raise EmbeddingError("the skillbook kept changing while its skills were being embedded; retry the search")

    def _index(self, skillbook: Skillbook, ids: list[str]) -> None:
        """Index these pending skills now that they have vectors, and hand them their rows (the next `_apply` orders
        the new slots: one merge, not one per batch)."""
        for sid in ids:
            if self._update_one(sid, skillbook.get_skill(sid)) is None:
                self._pending.discard(sid)
        for sid, row in self._shared:
            skillbook.set_embedding(sid, row)
        self._shared = []

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
            with gc_paused():  # a few large arrays and lists: no need to walk every live object meanwhile
                self._load_sidecar(skillbook)
        version = skillbook.version
        if self._version == version and self._model == model and not self._pending:
            self._settle(skillbook)  # the skills `_sync` indexed batch by batch
            return []
        changed = skillbook.changes_since(self._version) if 0 <= self._version <= version else None
        dead = self._bm25.n_slots - self._live
        if dead > max(1024, self._live):
            changed = None  # mostly dead slots: compact by rebuilding from the skills' cached vectors
        if changed is None:
            self._reset()
            ids: set[str] | list[str] = [s.id for s in skillbook.skills(include_inactive=True)]
            self._reserve(len(ids))
            self._sharing = not self._dense.would_switch(len(skillbook.skills()))
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
        self._settle(skillbook)
        return todo

    def _settle(self, skillbook: Skillbook) -> None:
        """After skills were indexed: order their slots, hand them their rows, move to HNSW at the threshold."""
        self._order_new_slots()
        self._index(skillbook, [])
        let_go = self._dense.maybe_switch(self._bm25.n_slots, self._live)
        if let_go is None or not self._sharing:
            return
        for sid in self._slots_by_id():  # a skill holding a unit row that the graph replaced keeps its vector
            vec = skillbook.require_skill(sid).embedding
            if vec is not None and let_go.holds(vec):
                skillbook.set_embedding(sid, self._dense.keep(vec))

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
        self._candidates.clear()

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
        slot = self._slots_by_id().get(sid)
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
        self._candidates.clear()
        slot = self._bm25.add(tokenize(text))
        self._reserve(slot + 1)
        norm = float(np.linalg.norm(vec))
        row = self._dense.set(slot, vec / norm if norm > 0 else vec, row=self._sharing)
        if row is not None:  # exact: the skill holds a row of ours (ace.retrieval._embedding)
            if norm not in (0.0, 1.0):  # not the unit row bit for bit: the vector itself, compactly
                row = None if is_mapped(vec) else self._dense.keep(vec)
            if row is not None:
                self._shared.append((sid, row))  # handed over by `_index`
        self._sections[slot] = _SECTION_CODE[skill.section]
        self._tie_keys[slot] = tie_key(sid)
        self._new_slots.append(slot)
        self._slot_ids.append(sid)
        self._slot_hashes.append(digest)
        self._keywords.append(slot, tuple(skill.keywords))
        self._slots_by_id()[sid] = slot
        self._live += 1

    def _drop(self, slot: int) -> None:
        self._candidates.clear()
        self._bm25.remove(slot)
        del self._slots_by_id()[self._slot_ids[slot]]
        self._keywords.drop(slot)
        self._live -= 1

    def _slots_by_id(self) -> dict[str, int]:
        if self._slot_of is None:
            live = np.flatnonzero(self._bm25.alive)
            self._slot_of = dict(zip(self._slot_ids.where(live), live.tolist(), strict=True))
        return self._slot_of

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
            live = np.flatnonzero(self._bm25.alive[:n])
            rows = _persist.cache_rows(skillbook, live, self._slot_ids.where(live), n, self._dense.rows_of)
            arrays = {
                "slot_ids": self._slot_ids.array(),
                "slot_hashes": self._slot_hashes.array(),
                "sections": self._sections[:n].copy(),
                "tie_keys": self._tie_keys[:n].copy(),
                "kw_vocab": text_array(kw_vocab),
                "kw_ptr": kw_ptr,
                "kw_ids": kw_ids,
                "pending": text_array(sorted(self._pending)),
                **bm25,
                **self._dense.state(n, vectors=rows is None),
                **(rows or {}),
            }
        header = {"format": INDEX_FORMAT, "skillbook_sha256": saved.digest, "model": model, "dim": dim}
        return [(index_path(saved.path), index_writer(header, arrays))]

    def _load_sidecar(self, skillbook: Skillbook) -> None:
        """Take the state saved beside the skillbook file it was loaded from, when it matches that file."""
        state = skillbook.file_state
        if state is None or skillbook.embedding_model != self.embedder.model_name:
            return
        path = index_path(state.path)
        try:
            seen = path.stat()  # the file read next, for the dense rows read from it later (`RowReader`)
        except OSError:
            return
        found = read_index(path, digest=state.digest, model=self.embedder.model_name, dim=self.embedder.dimension)
        if found is None:
            return
        header, a = found
        if header["graph"] and self.ann_min is None:
            return  # an exact-only index: rebuilt with a float32 matrix
        n = a["slot_ids"].shape[0]
        rows_from: _persist.RowsFrom = (path, seen)
        if "vector_rows" in a:
            found_rows = _persist.cached_rows(state.path, a, n, self.embedder.model_name, self.embedder.dimension)
            if found_rows is None:
                return  # the vector cache no longer holds the rows it names: stale, rebuilt
            a, rows_from = found_rows
        try:
            bm25 = BM25Index.from_state({k[5:]: v for k, v in a.items() if k.startswith("bm25_")})
            graph = graph_reader(path) if header["graph"] and "hnsw" not in a else None
            dense = DenseStore.from_state(
                a, self.embedder.dimension, n, ann_min=self.ann_min, graph=graph, rows_from=rows_from
            )
            ptr, ids = a["kw_ptr"], a["kw_ids"]
            if bm25.n_slots != n or (np.diff(ptr) < 0).any() or int(ptr[-1]) != ids.size or ptr[0] != 0:
                raise ValueError("its keyword lists do not fit its slots")
            if ids.size and (int(ids.min()) < 0 or int(ids.max()) >= a["kw_vocab"].shape[0]):
                raise ValueError("its keyword lists name unknown keywords")
        except ValueError as e:
            warnings.warn(f"{path}: {e}; ignored (the search index is rebuilt)", RuntimeWarning, stacklevel=2)
            return
        slot_ids = TextColumn(a["slot_ids"])
        live = np.flatnonzero(bm25.alive)
        if len(set(slot_ids.where(live))) != live.size:
            warnings.warn(f"{path}: a skill holds two live slots; ignored", RuntimeWarning, stacklevel=2)
            return
        self._keywords = KeywordTable(text_list(a["kw_vocab"]), ptr, ids)
        self._bm25, self._dense, self._slot_ids, self._slot_of, self._live = bm25, dense, slot_ids, None, live.size
        self._slot_hashes = TextColumn(a["slot_hashes"])
        self._sections, self._tie_keys = a["sections"], a["tie_keys"]  # writable: copy-on-write when mapped
        self._by_key = np.argsort(self._tie_keys, kind="stable").astype(np.int64)
        self._sorted_keys = self._tie_keys[self._by_key]
        self._candidates.clear()
        self._pending = set(text_list(a["pending"]))
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
