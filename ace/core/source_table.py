"""The provenance table of a skillbook file: each trace's record written once, the occurrences pointing at it.

Every mutation appends an `InsightSource` to its skill's `occurrences`, and the mutations of one trace repeat the
same trace ids, question, epoch and finding, often across hundreds of skills. A file stores those once, in the
top-level `"sources"` list (one record a line), and an occurrence as

    {"source": 3, "operation_type": "UPDATE", "timestamp": "2026-12-04T16:35:46.714754+00:00"}

plus its `learning_text` when it differs from the record's, and its `reviewer` / `reviewed_at` when set. Lossless:
reading gives back the same `InsightSource`s. Records are ordered by the time of their first use (then by where they
first appear), so a save after new mutations appends records rather than renumbering the old ones; a purge renumbers
the records after the ones it took away. An occurrence written out whole (a file of an earlier version, a journal's
skill states) still reads.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from ace.core.insight_source import InsightSource
from ace.core.shared_values import SharedValues

__all__ = ["SourceRecords", "SourceTable"]

_Key = tuple[str, str, str, str | None, int | None, str | None]
_RECORD_KEYS = frozenset(
    {"trace_uid", "source_system", "trace_id", "sample_question", "epoch", "error_identification", "learning_text"}
)
_USE_KEYS = frozenset({"source", "operation_type", "timestamp", "learning_text", "reviewer", "reviewed_at"})


def _key(o: InsightSource) -> _Key:
    return (o.trace_uid, o.source_system, o.trace_id, o.sample_question, o.epoch, o.error_identification)


class SourceTable:
    """The write side: the records of the occurrences of some skills, and each occurrence as a reference."""

    __slots__ = ("_index", "_learning", "_rows")

    def __init__(self, chains: Iterable[Sequence[InsightSource]]) -> None:
        first: dict[_Key, tuple[str, int, str | None]] = {}
        for chain in chains:
            for o in chain:
                key = _key(o)
                seen = first.get(key)
                if seen is None:
                    first[key] = (o.timestamp, len(first), o.learning_text)
                elif o.timestamp < seen[0]:
                    first[key] = (o.timestamp, seen[1], o.learning_text)
        order = sorted(first, key=lambda k: first[k][:2])
        self._index = {key: i for i, key in enumerate(order)}
        self._learning = [first[key][2] for key in order]
        self._rows = [
            {
                "trace_uid": key[0],
                "source_system": key[1],
                "trace_id": key[2],
                "sample_question": key[3],
                "epoch": key[4],
                "error_identification": key[5],
                "learning_text": first[key][2],
            }
            for key in order
        ]

    def rows(self) -> list[dict[str, Any]]:
        """The `"sources"` list of the file."""
        return self._rows

    def use(self, o: InsightSource) -> dict[str, Any]:
        """`o` as its skill's `occurrences` stores it: a reference to its record and what is its own."""
        i = self._index[_key(o)]
        out: dict[str, Any] = {"source": i, "operation_type": o.operation_type, "timestamp": o.timestamp}
        if o.learning_text != self._learning[i]:
            out["learning_text"] = o.learning_text
        if o.reviewer is not None or o.reviewed_at is not None:
            out["reviewer"], out["reviewed_at"] = o.reviewer, o.reviewed_at
        return out


class SourceRecords:
    """The read side: a file's `"sources"` records, checked, for its occurrences to be read back."""

    __slots__ = ("_rows", "_shared")

    def __init__(self, shared: SharedValues | None = None) -> None:
        self._rows: list[dict[str, Any]] = []
        self._shared = shared

    def add(self, raw: Any) -> None:
        """Check and keep the next record; raises `ValueError` naming what is wrong."""
        where = f"sources[{len(self._rows)}]"
        if not isinstance(raw, dict) or not raw.keys() <= _RECORD_KEYS:
            found = sorted(raw) if isinstance(raw, dict) else type(raw).__name__
            raise ValueError(f"{where} must be an object of {sorted(_RECORD_KEYS)}, got {found}")
        try:
            InsightSource.from_dict({**raw, "timestamp": ""})  # the same checks as an occurrence written whole
        except ValueError as e:
            raise ValueError(f"{where}: {e}") from None
        self._rows.append(raw)

    def read(self, raw: Any) -> InsightSource:
        """An occurrence as stored: written whole, or a reference to a record (`SourceTable.use`)."""
        if not isinstance(raw, dict) or "source" not in raw:
            return InsightSource.from_dict(raw, shared=self._shared)
        i = raw["source"]
        if not raw.keys() <= _USE_KEYS:
            raise ValueError(f"an occurrence with a 'source' has only {sorted(_USE_KEYS)}, got {sorted(raw)}")
        if type(i) is not int or not 0 <= i < len(self._rows):
            raise ValueError(f"occurrence names source {i!r}; the file's 'sources' list has {len(self._rows)}")
        data = {**self._rows[i], **raw}
        del data["source"]
        return InsightSource.from_dict(data, shared=self._shared)
