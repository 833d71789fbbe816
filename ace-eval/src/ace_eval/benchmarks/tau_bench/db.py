"""`AirlineDB`: one episode's copy of the database, copy-on-write over the shared pristine tables."""

from __future__ import annotations

import copy
from typing import Any

from ace_eval.benchmarks.tau_bench.data import TABLES, AirlineData, Table, table_named

__all__ = ["AirlineDB"]


class AirlineDB:
    """The database an episode's tools read and write.

    Creating one costs three shallow dict copies, not a deep copy of 5 MB of JSON: reads see the shared
    originals, and `writable` copies an entity the first time it is about to change, so the originals
    stay pristine for every other episode and unchanged entities keep their cached hash bytes.
    """

    def __init__(self, base: AirlineData) -> None:
        self.base = base
        self.flights: Table = dict(base.flights)
        self.reservations: Table = dict(base.reservations)
        self.users: Table = dict(base.users)

    def table(self, name: str) -> Table:
        """One of `TABLES` by name."""
        return table_named(self, name)

    def writable(self, table: str, key: str) -> dict[str, Any]:
        """The entity `table[key]`, made private to this database first if it still is the shared original."""
        rows = self.table(table)
        entity = rows[key]
        if entity is self.base.table(table).get(key):
            entity = copy.deepcopy(entity)
            rows[key] = entity
        return entity

    def as_data(self) -> dict[str, Table]:
        """The whole database as upstream holds it: `{"flights": ..., "reservations": ..., "users": ...}`."""
        return {name: self.table(name) for name in TABLES}

    def changed_keys(self) -> dict[str, list[str]]:
        """Per table, the keys whose entity is no longer the shared original (written or added)."""
        out: dict[str, list[str]] = {}
        for name in TABLES:
            original = self.base.table(name)
            out[name] = [k for k, v in self.table(name).items() if original.get(k) is not v]
        return out
