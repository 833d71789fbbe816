"""Okapi BM25 with rank-bm25's exact formula, kept up to date incrementally; a query scores only its terms' postings.

rank-bm25 (`BM25Okapi`) scores every document in Python on every query (1.2 s at 100,000 documents). This index
stores term -> postings in CSR form with each posting's weight `tf (k1 + 1) / (tf + k1 (1 - b + b dl / avgdl))`
precomputed, so a query multiplies each of its terms' weights by the term's IDF and adds them into the scores
(no per-query normalisation); the scores equal `BM25Okapi(corpus).get_scores(query)` for the live documents.
The weights depend on `avgdl`, so they are refreshed (one vectorised pass, ~8 ms at 100,000) at the first query
after a change.

Documents live in *slots*: their terms sit in flat, growing arrays (no object per document). Adding appends a
slot; removing marks it dead and takes its terms out of the statistics. Postings sit in two segments: a large
`main` one and a small `delta` one for slots added since `main` was built; `delta` is rebuilt when it changes and
folded into `main` once it grows past 4 sqrt(N) documents, so a change costs O(sqrt(N)) amortised.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

import numpy as np
import numpy.typing as npt

from ace.core.npz import drop_resident, text_array, text_list

__all__ = ["BM25Index"]

_IntArray = npt.NDArray[np.int64]
_FloatArray = npt.NDArray[np.float64]
_MIN_DELTA = 256
_MIN_COLUMN = 4096
_MAX_COLUMNS = 16
_T = TypeVar("_T", bound=np.generic)
_STATE_ARRAYS = ("terms", "tfs", "doc_off", "doc_n", "doc_len", "alive", "df", "main_ptr", "main_slots", "main_tfs")


@dataclass
class _Segment:
    """CSR postings for the slots in `[start, stop)`: term t's postings are `slots[ptr[t]:ptr[t + 1]]`."""

    start: int = 0
    stop: int = 0
    ptr: _IntArray = field(default_factory=lambda: np.zeros(1, dtype=np.int64))
    slots: npt.NDArray[np.int32] = field(default_factory=lambda: np.zeros(0, dtype=np.int32))
    tfs: npt.NDArray[np.float32] = field(default_factory=lambda: np.zeros(0, dtype=np.float32))
    weights: _FloatArray | None = None
    """Per-posting BM25 weight (without IDF) for `avgdl`; `None` until computed."""
    avgdl: float = -1.0
    live: int = 0
    """Live documents when the segment was built."""
    columns: dict[int, tuple[_FloatArray, npt.NDArray[np.bool_]]] = field(default_factory=dict)
    """Common terms' weights spread over the segment's slots (0 where absent) and where they are present: adding
    a whole column beats scattering its postings ~10x once they cover a tenth of the slots (`column`)."""
    current: set[int] = field(default_factory=set)
    """The columns whose weights are for the current `avgdl` (the others are refilled in place when next used)."""

    def weigh(self, doc_len: _FloatArray, avgdl: float, k1: float, b: float) -> _FloatArray:
        """The per-posting weights for `avgdl`, recomputed only when it changed."""
        if self.weights is None or self.avgdl != avgdl:
            tf = self.tfs.astype(np.float64)
            denom = tf + k1 * (1.0 - b + b * doc_len[self.slots] / avgdl)
            self.weights = tf * (k1 + 1.0) / denom
            self.avgdl = avgdl
            self.current = set()
        return self.weights

    def column(self, term: int, weights: _FloatArray) -> tuple[_FloatArray, npt.NDArray[np.bool_]] | None:
        """`term`'s column (kept for the segment's life), when its postings cover a tenth of the slots and fewer
        than `_MAX_COLUMNS` are kept (memory: 9 bytes per slot each); `None`: scatter its postings. A column made
        for another `avgdl` gets its weights again in place (its slots are the segment's, fixed)."""
        found = self.columns.get(term)
        lo, hi = int(self.ptr[term]), int(self.ptr[term + 1])
        if found is None and hi - lo >= max(_MIN_COLUMN, self.stop // 10) and len(self.columns) < _MAX_COLUMNS:
            present = np.zeros(self.stop, dtype=np.bool_)
            present[self.slots[lo:hi]] = True
            found = self.columns[term] = (np.zeros(self.stop, dtype=np.float64), present)
        if found is not None and term not in self.current:
            found[0][self.slots[lo:hi]] = weights[lo:hi]
            self.current.add(term)
        return found


class BM25Index:
    """An incrementally maintained BM25 index over token lists (not thread-safe: the caller locks)."""

    def __init__(self, *, k1: float = 1.5, b: float = 0.75, epsilon: float = 0.25) -> None:
        self.k1, self.b, self.epsilon = k1, b, epsilon
        self._vocab: dict[str, int] = {}
        self._df = np.zeros(0, dtype=np.int64)
        self._terms = np.zeros(0, dtype=np.int32)
        self._tfs = np.zeros(0, dtype=np.float32)
        self._n_postings = 0
        self._doc_off = np.zeros(0, dtype=np.int64)
        self._doc_n = np.zeros(0, dtype=np.int32)
        self._doc_len = np.zeros(0, dtype=np.float64)
        self._alive = np.zeros(0, dtype=np.bool_)
        self._n_slots = 0
        self._n_alive = 0
        self._total_len = 0.0
        self._main = _Segment()
        self._delta = _Segment()
        self._dirty = False
        self._mean_idf: float | None = None
        """Mean IDF over the vocabulary (rank-bm25's floor for very common terms); `None` until a query needs it."""

    @property
    def n_slots(self) -> int:
        """Slots used so far, dead ones included."""
        return self._n_slots

    @property
    def alive(self) -> npt.NDArray[np.bool_]:
        """Which slots hold a live document (a view; do not modify)."""
        return self._alive[: self._n_slots]

    def add(self, tokens: Sequence[str]) -> int:
        """Index one document and return its slot."""
        counts = Counter(tokens)
        vocab = self._vocab
        ids = np.array([vocab.setdefault(t, len(vocab)) for t in counts], dtype=np.int32)
        if self._df.shape[0] < len(vocab):
            self._df = _grow(self._df, len(vocab))
        self._df[ids] += 1  # ids are distinct within a document
        at, k = self._n_postings, ids.shape[0]
        if at + k > self._terms.shape[0]:
            self._terms = _grow(self._terms, at + k)
            self._tfs = _grow(self._tfs, at + k)
        self._terms[at : at + k] = ids
        self._tfs[at : at + k] = list(counts.values())
        self._n_postings += k
        slot = self._n_slots
        if slot >= self._alive.shape[0]:
            self._alive = _grow(self._alive, slot + 1)
            self._doc_len = _grow(self._doc_len, slot + 1)
            self._doc_off = _grow(self._doc_off, slot + 1)
            self._doc_n = _grow(self._doc_n, slot + 1)
        self._doc_off[slot], self._doc_n[slot] = at, k
        self._doc_len[slot] = float(len(tokens))
        self._alive[slot] = True
        self._n_slots += 1
        self._n_alive += 1
        self._total_len += float(len(tokens))
        self._dirty = True
        self._mean_idf = None
        return slot

    def remove(self, slot: int) -> None:
        """Take a document out of the index (its slot stays dead)."""
        if not self._alive[slot]:
            raise KeyError(f"BM25 slot {slot} is not live")
        off = int(self._doc_off[slot])
        self._df[self._terms[off : off + int(self._doc_n[slot])]] -= 1
        self._alive[slot] = False
        self._n_alive -= 1
        self._total_len -= float(self._doc_len[slot])
        self._dirty = True
        self._mean_idf = None

    def scores(self, tokens: Sequence[str]) -> tuple[_FloatArray, npt.NDArray[np.bool_]]:
        """BM25 score of every slot for a query, and which slots contain at least one query term.

        Repeated query tokens count once per repetition, as in rank-bm25; dead slots score 0.
        """
        self._refresh()
        counts = Counter(t for t in tokens if t in self._vocab)
        n = self._n_slots
        scores = np.zeros(n, dtype=np.float64)
        hit = np.zeros(n, dtype=np.bool_)
        if not counts or self._n_alive == 0:
            return scores, hit
        terms = np.fromiter((self._vocab[t] for t in counts), dtype=np.int64, count=len(counts))
        factors = np.fromiter(counts.values(), dtype=np.float64, count=len(counts)) * self._idf(terms)
        avgdl = (self._total_len / self._n_alive) or 1.0
        doc_len = self._doc_len[:n]
        for seg in (self._main, self._delta):
            if seg.slots.size == 0:
                continue
            weights = seg.weigh(doc_len, avgdl, self.k1, self.b)
            for term, factor in zip(terms.tolist(), factors.tolist(), strict=True):
                if term + 1 >= seg.ptr.shape[0]:
                    continue
                lo, hi = int(seg.ptr[term]), int(seg.ptr[term + 1])
                if lo == hi:
                    continue
                column = seg.column(term, weights)
                if column is not None:  # the same sums: `x + factor * 0.0` is `x`
                    scores[: seg.stop] += factor * column[0]
                    hit[: seg.stop] |= column[1]
                    continue
                slots = seg.slots[lo:hi]  # distinct within a term and segment: a fancy += adds each once
                scores[slots] += factor * weights[lo:hi]
                hit[slots] = True
        alive = self._alive[:n]
        scores[~alive] = 0.0
        return scores, hit & alive

    # ----------------------------------------------------------- persistence
    def state(self) -> dict[str, npt.NDArray[np.generic]]:
        """Everything needed to rebuild this index without tokenising again (arrays, for an `.npz`)."""
        self._refresh(fold=True)
        n, p = self._n_slots, self._n_postings
        vocab = text_array(self._vocab)
        return {
            "vocab": vocab,
            "params": np.asarray([self.k1, self.b, self.epsilon, self._total_len], dtype=np.float64),
            "terms": self._terms[:p],
            "tfs": self._tfs[:p],
            "doc_off": self._doc_off[:n],
            "doc_n": self._doc_n[:n],
            "doc_len": self._doc_len[:n],
            "alive": self._alive[:n],
            "df": self._df[: len(self._vocab)],
            "main_ptr": self._main.ptr,
            "main_slots": self._main.slots,
            "main_tfs": self._main.tfs,
        }

    @classmethod
    def from_state(cls, state: Mapping[str, npt.NDArray[np.generic]]) -> BM25Index:
        """An index from `state()` output; raises `ValueError` when the arrays do not fit together."""
        missing = [k for k in ("vocab", "params", *_STATE_ARRAYS) if k not in state]
        if missing:
            raise ValueError(f"BM25 state lacks {missing}")
        k1, b, epsilon, total_len = (float(x) for x in np.asarray(state["params"], dtype=np.float64))
        index = cls(k1=k1, b=b, epsilon=epsilon)
        vocab = text_list(state["vocab"])
        index._vocab = {w: i for i, w in enumerate(vocab)}
        n, p, v = state["alive"].shape[0], state["terms"].shape[0], len(vocab)
        shapes_ok = (
            len(index._vocab) == v
            and state["df"].shape == (v,)
            and state["tfs"].shape == (p,)
            and all(state[k].shape == (n,) for k in ("doc_off", "doc_n", "doc_len"))
            and state["main_ptr"].shape == (v + 1,)
            and state["main_slots"].shape == state["main_tfs"].shape
        )
        if not shapes_ok:
            raise ValueError("BM25 state arrays have inconsistent sizes")
        index._terms = np.asarray(state["terms"], dtype=np.int32)
        index._tfs = np.asarray(state["tfs"], dtype=np.float32)
        index._doc_off = np.asarray(state["doc_off"], dtype=np.int64)
        index._doc_n = np.asarray(state["doc_n"], dtype=np.int32)
        index._doc_len = np.asarray(state["doc_len"], dtype=np.float64)
        index._alive = np.asarray(state["alive"], dtype=np.bool_)
        index._df = np.asarray(state["df"], dtype=np.int64)
        index._n_postings, index._n_slots = p, n
        index._n_alive, index._total_len = int(index._alive.sum()), total_len
        ptr = np.asarray(state["main_ptr"], dtype=np.int64)
        slots = np.asarray(state["main_slots"], dtype=np.int32)
        bounded = (p == 0 or (int(index._terms.max()) < v and int(index._terms.min()) >= 0)) and (
            slots.size == 0 or (int(slots.max()) < n and int(slots.min()) >= 0)
        )
        if not bounded or int(ptr[-1]) != slots.size or (np.diff(ptr) < 0).any():
            raise ValueError("BM25 state holds out-of-range term or slot numbers")
        if int((index._doc_off[:n] + index._doc_n[:n]).max(initial=0)) > p:
            raise ValueError("BM25 state's documents point past its postings")
        drop_resident(index._terms)  # checked; read again only when the index changes (`ace.core.npz`)
        index._main = _Segment(start=0, stop=n, ptr=ptr, slots=slots, tfs=np.asarray(state["main_tfs"], np.float32))
        index._main.live = index._n_alive
        index._delta = _Segment(start=n, stop=n)
        return index

    # ---------------------------------------------------------------- internal
    def _idf(self, terms: _IntArray) -> _FloatArray:
        """Okapi IDF of `terms` (vocabulary ids); a negative one takes rank-bm25's floor, `epsilon` x the mean IDF.

        Computed per query for its few terms, so a change costs no pass over the vocabulary; the mean (over every
        present term) is computed only when a query has such a term, and kept until the next change.
        """
        df = self._df[terms]
        idf: _FloatArray = np.log(self._n_alive - df + 0.5) - np.log(df + 0.5)
        if (idf < 0).any():
            if self._mean_idf is None:
                every = self._df[: len(self._vocab)]
                present = every > 0
                all_idf = np.log(self._n_alive - every + 0.5) - np.log(every + 0.5)
                self._mean_idf = float(all_idf[present].mean()) if present.any() else 0.0
            idf = np.where(idf < 0, self.epsilon * self._mean_idf, idf)
        return idf

    def _refresh(self, *, fold: bool = False) -> None:
        """Rebuild the segment(s) that changed (`fold`: everything into `main`, as `state()` saves only `main`)."""
        if not self._dirty and not (fold and self._main.stop != self._n_slots):
            return
        n_terms = len(self._vocab)
        if self._df.shape[0] < n_terms:
            self._df = _grow(self._df, n_terms)
        alive = self._alive[: self._n_slots]
        main_live = int(alive[: self._main.stop].sum())
        # Delta of ~4 sqrt(N) documents: rebuilding it per change and the main segment every so many changes
        # cost about the same, O(sqrt(N)) postings per change (~900 documents at 50,000).
        delta_max = max(_MIN_DELTA, 4 * int(np.sqrt(main_live)))
        if fold or self._n_slots - self._main.stop > delta_max or main_live < self._main.live // 2:
            self._main = self._build_segment(0, self._n_slots, n_terms)
            self._main.live = int(alive.sum())
            self._delta = _Segment(start=self._n_slots, stop=self._n_slots)
        else:
            self._delta = self._build_segment(self._main.stop, self._n_slots, n_terms)
        self._dirty = False

    def _build_segment(self, start: int, stop: int, n_terms: int) -> _Segment:
        live = start + np.flatnonzero(self._alive[start:stop])
        if live.size == 0:
            return _Segment(start=start, stop=stop, ptr=np.zeros(n_terms + 1, dtype=np.int64))
        lengths = self._doc_n[live].astype(np.int64)
        total = int(lengths.sum())
        # Concatenated ranges [off_i, off_i + n_i) of the live documents, without a Python loop.
        idx = np.repeat(self._doc_off[live] - np.cumsum(lengths) + lengths, lengths) + np.arange(total)
        terms = self._terms[idx]
        order = np.argsort(terms, kind="stable")
        ptr = np.zeros(n_terms + 1, dtype=np.int64)
        np.cumsum(np.bincount(terms, minlength=n_terms), out=ptr[1:])
        slots = np.repeat(live.astype(np.int32), lengths)[order]
        return _Segment(start=start, stop=stop, ptr=ptr, slots=slots, tfs=self._tfs[idx][order])


def _grow(arr: npt.NDArray[_T], needed: int) -> npt.NDArray[_T]:
    out = np.zeros(max(needed, 2 * arr.shape[0], 64), dtype=arr.dtype)
    out[: arr.shape[0]] = arr
    return out
