"""`PersistStep`: save the skillbook (JSON + embeddings sidecar), all or nothing."""

from __future__ import annotations

import os
from pathlib import Path

from ace.steps.context import StepContext

__all__ = ["PersistStep"]


class PersistStep:
    """Writes `ctx.skillbook` to `path` with `Skillbook.save_to_file` (temporary files renamed over the targets)."""

    name = "persist"
    requires: frozenset[str] = frozenset({"skillbook"})
    provides: frozenset[str] = frozenset()

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)

    async def __call__(self, ctx: StepContext) -> StepContext:
        """Save and return `ctx` unchanged; a failed save leaves the previous files intact and raises."""
        ctx.skillbook.save_to_file(self.path)
        return ctx
