"""The benchmark's database hash: sha256 of `str()` of the data as nested tuples (dict items sorted by key).

`to_hashable` and `consistent_hash` have upstream's exact semantics. `data_hash` computes the same value for
an `AirlineDB` in time linear in the database, reusing the cached text of every entity that is still the
shared original, so hashing thousands of episodes costs a string join and one sha256 each.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any, TypeAlias

from ace_eval.benchmarks.tau_bench.data import TABLES, AirlineData, Table
from ace_eval.benchmarks.tau_bench.db import AirlineDB

__all__ = ["Hashable", "consistent_hash", "data_hash", "hash_data", "to_hashable"]

Hashable: TypeAlias = Any
"""A str, number, bool, None, or tuple of these (dicts become tuples of `(key, value)` pairs)."""


def to_hashable(item: Any) -> Hashable:
    """Dicts become tuples of `(key, value)` sorted by key, lists tuples, sets sorted tuples, recursively."""
    if isinstance(item, dict):
        return tuple((key, to_hashable(value)) for key, value in sorted(item.items()))
    if isinstance(item, list):
        return tuple(to_hashable(element) for element in item)
    if isinstance(item, set):
        return tuple(sorted(to_hashable(element) for element in item))
    return item


def consistent_hash(value: Hashable) -> str:
    """sha256 (hex) of the UTF-8 text `str(value)`."""
    return hashlib.sha256(str(value).encode("utf-8")).hexdigest()


def hash_data(data: Mapping[str, Any]) -> str:
    """The straightforward definition: `consistent_hash(to_hashable(data))`."""
    return consistent_hash(to_hashable(dict(data)))


def _entry_bytes(key: str, entity: Any) -> bytes:
    return repr((key, to_hashable(entity))).encode("utf-8")


def _table_parts(name: str, rows: Table, base: AirlineData) -> list[bytes]:
    """The text of `repr(to_hashable(rows))`, as pieces: one per entity plus the separators."""
    original = base.table(name)
    cache = base.entity_bytes
    entries: list[bytes] = []
    for key in sorted(rows):
        entity = rows[key]
        if original.get(key) is entity:
            cached = cache.get((name, key))
            if cached is None:
                cached = cache[(name, key)] = _entry_bytes(key, entity)
            entries.append(cached)
        else:
            entries.append(_entry_bytes(key, entity))
    if len(entries) == 1:  # a 1-tuple prints with a trailing comma
        return [b"(", entries[0], b",)"]
    return [b"(", b", ".join(entries), b")"]


def data_hash(db: AirlineDB) -> str:
    """`hash_data(db.as_data())`, in linear time with cached entity text (see the module docstring)."""
    digest = hashlib.sha256(b"(")
    for i, name in enumerate(sorted(TABLES)):
        digest.update(b", (" if i else b"(")
        digest.update(repr(name).encode("utf-8") + b", ")
        for part in _table_parts(name, db.table(name), db.base):
            digest.update(part)
        digest.update(b")")
    digest.update(b")")
    return digest.hexdigest()
