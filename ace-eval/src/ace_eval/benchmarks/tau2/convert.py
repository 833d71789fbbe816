"""tau2 results -> ace-eval's trace collection, through the one tau2 importer (no second converter)."""

from __future__ import annotations

import os

from ace_eval.e2e.importers import ImportedCollection, import_tau2

__all__ = ["to_collection"]


def to_collection(results: str | os.PathLike[str], *, source_system: str | None = None) -> ImportedCollection:
    """The traces of a tau2 `results.json` (one per simulation), as `ace-eval import --format tau2` reads them."""
    return import_tau2(results, source_system=source_system)
