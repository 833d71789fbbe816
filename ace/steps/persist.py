"""`PersistStep`: save the skillbook (JSON + embeddings sidecar), all or nothing."""

from __future__ import annotations

import os
from pathlib import Path

from ace.embeddings.base import Embedder
from ace.retrieval.index import search_index
from ace.steps.context import StepContext

__all__ = ["PersistStep"]


class PersistStep:
    """Writes `ctx.skillbook` to `path` with `Skillbook.save_to_file` (temporary files renamed over the targets).

    With an `embedder`, every active skill without a vector is embedded first, so the saved `.embeddings.npz`
    sidecar is complete and the next run's search starts warm.
    """

    name = "persist"
    requires: frozenset[str] = frozenset({"skillbook"})
    provides: frozenset[str] = frozenset()

    def __init__(self, path: str | os.PathLike[str], *, embedder: Embedder | None = None) -> None:
        self.path = Path(path)
        self.embedder = embedder

    async def __call__(self, ctx: StepContext) -> StepContext:
        """Save and return `ctx` unchanged; a failed save leaves the previous files intact and raises."""
        if self.embedder is not None:
            search_index(ctx.skillbook, self.embedder).sync(ctx.skillbook)
        ctx.skillbook.save_to_file(self.path)
        return ctx
