"""The search index's keywords: each slot's labels, the live slots of each label (for the keyword boost), and a
query's keywords normalised like stored ones.

A loaded index keeps its slots' labels as the flat arrays of its sidecar and builds the label -> slots map only
when a query first asks for keywords, with numpy: turning 100,000 skills' labels into Python tuples and sets
cost the first search after a load ~0.5 s.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import numpy.typing as npt

from ace.core.skill import normalize_keywords
from ace.exceptions import SkillbookError

__all__ = ["KeywordTable", "search_keywords"]


class KeywordTable:
    """Labels by slot (slots arrive in order) and live slots by label; not thread-safe (the index locks)."""

    def __init__(
        self,
        vocab: list[str] | None = None,
        ptr: npt.NDArray[np.int64] | None = None,
        ids: npt.NDArray[np.int32] | None = None,
    ) -> None:
        self._vocab = vocab or []
        self._ptr = ptr if ptr is not None else np.zeros(1, dtype=np.int64)
        self._ids = ids if ids is not None else np.zeros(0, dtype=np.int32)
        self._base: int = self._ptr.shape[0] - 1
        """Slots `0 .. base-1` have their labels in the flat arrays; later ones in `_extra`."""
        self._extra: list[tuple[str, ...]] = []
        self._slots: dict[str, set[int]] | None = {} if self._base == 0 else None

    def of(self, slot: int) -> tuple[str, ...]:
        """The labels of `slot`."""
        if slot >= self._base:
            return self._extra[slot - self._base]
        a, b = int(self._ptr[slot]), int(self._ptr[slot + 1])
        numbers: list[int] = self._ids[a:b].tolist()
        return tuple(self._vocab[i] for i in numbers)

    def append(self, slot: int, labels: tuple[str, ...]) -> None:
        """Labels of the new, live `slot` (the next one)."""
        assert slot == self._base + len(self._extra), "slots arrive in order"
        self._extra.append(labels)
        if self._slots is not None:
            for kw in labels:
                self._slots.setdefault(kw, set()).add(slot)

    def drop(self, slot: int) -> None:
        """`slot` is dead: out of the label -> slots map."""
        if self._slots is None:
            return  # built later from the live slots only
        for kw in self.of(slot):
            slots = self._slots[kw]
            slots.discard(slot)
            if not slots:
                del self._slots[kw]

    def slots(self, label: str, alive: Callable[[], npt.NDArray[np.bool_]]) -> set[int]:
        """The live slots labelled `label` (`alive()`: which slots live, asked only to build the map once)."""
        if self._slots is None:
            self._slots = self._build(alive())
        return self._slots.get(label, set())

    def _build(self, alive: npt.NDArray[np.bool_]) -> dict[str, set[int]]:
        counts = np.diff(self._ptr)
        owner = np.repeat(np.arange(self._base, dtype=np.int64), counts)
        keep = alive[owner]
        ids, owner = self._ids[keep], owner[keep]
        order = np.argsort(ids, kind="stable")
        ids, owner = ids[order], owner[order]
        bounds = np.flatnonzero(np.diff(ids)) + 1
        out: dict[str, set[int]] = {}
        for label_ids, slots in zip(np.split(ids, bounds), np.split(owner, bounds), strict=True):
            if label_ids.size:
                out[self._vocab[int(label_ids[0])]] = set(slots.tolist())
        for k, labels in enumerate(self._extra):
            if alive[self._base + k]:
                for kw in labels:
                    out.setdefault(kw, set()).add(self._base + k)
        return out

    def arrays(self) -> tuple[list[str], npt.NDArray[np.int64], npt.NDArray[np.int32]]:
        """Every slot's labels as (vocabulary, per-slot pointers, label numbers), for the sidecar."""
        vocab = list(self._vocab)
        where = {kw: i for i, kw in enumerate(vocab)}
        extra_ids: list[int] = []
        for labels in self._extra:
            for kw in labels:
                if kw not in where:
                    where[kw] = len(vocab)
                    vocab.append(kw)
                extra_ids.append(where[kw])
        lengths = np.asarray([len(labels) for labels in self._extra], dtype=np.int64)
        ptr = np.concatenate([self._ptr, self._ptr[-1] + np.cumsum(lengths)])
        ids = np.concatenate([self._ids, np.asarray(extra_ids, dtype=np.int32)])
        return vocab, ptr, ids


def search_keywords(keywords: Sequence[str]) -> list[str]:
    """Requested keywords normalised like stored ones; a label that cannot be one is ignored, not an error."""
    out: list[str] = []
    for raw in keywords:
        try:
            out.extend(normalize_keywords([raw]))
        except SkillbookError:
            continue
    return list(dict.fromkeys(out))
