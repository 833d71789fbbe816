"""What the search index keeps by slot besides its rankings: text (skill ids, text fingerprints) in a column read
from the sidecar, kept as its array (mapped from the file, `ace.core.npz`) plus the values of slots added since;
and the tie key that orders slots by their skills' creation.

A loaded index that only searches never turns 100,000 ids and fingerprints into Python strings (~20 MB with the map
from id to slot); it reads the few it returns.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from ace.core.npz import drop_resident, text_array, text_list
from ace.core.skill import embedding_input_hash

__all__ = ["Candidates", "TextColumn", "tie_key"]


class TextColumn:
    """Strings by slot: `base` (a read-only array of the first slots, `U` or ASCII `S`: `ace.core.npz.text_array`),
    then a list for the later ones."""

    def __init__(self, base: npt.NDArray[Any] | None = None) -> None:
        self._base: npt.NDArray[Any] = base if base is not None else np.zeros(0, dtype="S1")
        self._tail: list[str] = []

    def __len__(self) -> int:
        return int(self._base.shape[0]) + len(self._tail)

    def __getitem__(self, slot: int) -> str:
        base = self._base.shape[0]
        return text_list(self._base[slot : slot + 1])[0] if slot < base else self._tail[slot - base]

    def append(self, value: str) -> None:
        self._tail.append(value)

    def where(self, slots: npt.NDArray[np.int64]) -> list[str]:
        """The values of `slots` (ascending), reading the base array once and letting its pages go again."""
        base = self._base.shape[0]
        head = slots[slots < base]
        out = text_list(self._base[head])
        drop_resident(self._base)
        out.extend(self._tail[int(s) - base] for s in slots[slots >= base])
        return out

    def array(self) -> npt.NDArray[Any]:
        """Every value, as one array for the sidecar."""
        if not self._tail and self._base.dtype.kind == "S":
            return self._base
        return text_array([*text_list(self._base), *self._tail])


def tie_key(skill_id: str) -> int:
    """Creation order from an id like `context-00042` (number first, then section); other ids sort after."""
    prefix, _, number = skill_id.rpartition("-")
    code = {"context": 0, "harness": 1}.get(prefix)
    if number.isdigit() and code is not None:
        return int(number) * 2 + code
    return (1 << 62) + int(embedding_input_hash(skill_id)[:15], 16)


class Candidates:
    """A search's candidates: the live slots (of a section) in tie order, and each slot's position among them (-1 for
    none); kept per section for the next search until the index changes (`clear`), since making them takes three
    passes over every slot (~0.2 ms at 100,000). Read-only arrays."""

    def __init__(self) -> None:
        self._kept: dict[int, tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]] = {}

    def clear(self) -> None:
        """Forget them: a slot was added, dropped or reordered."""
        self._kept = {}

    def of(
        self, alive: npt.NDArray[np.bool_], sections: npt.NDArray[np.int8], code: int | None, by_key: npt.NDArray[Any]
    ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
        """(candidates, positions) for the section `code` (`None`: every section); `by_key`: every slot in tie order."""
        key = -1 if code is None else code
        found = self._kept.get(key)
        if found is None:
            mask = alive.copy()
            if code is not None:
                mask &= sections[: alive.size] == code
            cand: npt.NDArray[np.int64] = by_key[mask[by_key]]
            pos = np.full(alive.size, -1, dtype=np.int64)
            pos[cand] = np.arange(cand.size, dtype=np.int64)
            cand.setflags(write=False)
            pos.setflags(write=False)
            found = self._kept[key] = (cand, pos)
        return found
