"""`PersistStep`: save the skillbook (JSON + embeddings sidecar), all or nothing."""

from __future__ import annotations

import os
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from ace.embeddings.base import Embedder
from ace.pipeline.context import StepContext
from ace.pipeline.registry import StepEnvironment, StepFactory
from ace.retrieval.index import search_index

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


class PersistOptions(BaseModel):
    """`persist`: the skillbook file (relative paths in the run folder); its `.embeddings.npz` goes beside it."""

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)
    path: str = Field(default="skillbook.json", min_length=1)
    """The skillbook file; a relative path is in the run folder."""


def _build(o: PersistOptions, env: StepEnvironment) -> PersistStep:
    return PersistStep(env.path("persist", "path", o.path), embedder=env.embedder)


factory = StepFactory(
    step=PersistStep,
    phase="end_of_run",
    description="Embeds skills without a vector, then saves skillbook.json and its .embeddings.npz atomically.",
    options=PersistOptions,
    build=_build,
)
