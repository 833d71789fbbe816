"""`checkpoint`: the run's checkpoint as a pipeline step of the `commit` phase, registered under `ace.steps` in
ace-eval's `pyproject.toml` like any plugin.

The trainer runs the `commit` phase once per sample, in commit order, with the sample's journal line (its
`SampleResult` plus the skillbook's delta since the previous line) as the plugin data `checkpoint.line`; this
step appends it to `samples.jsonl` and snapshots the skillbook when due (`ace_eval.run.checkpoint`). Before the
first sample the trainer resumes from the step's folder, and after the last it closes it (final snapshot).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

from ace.core.skillbook import Skillbook
from ace.pipeline.context import StepContext
from ace.pipeline.registry import StepEnvironment, StepFactory, need
from ace_eval.run.checkpoint import Checkpoint, load_checkpoint

__all__ = ["LINE_KEY", "CatchesUp", "CheckpointOptions", "CheckpointStep", "checkpoint"]

LINE_KEY = "line"
"""The plugin data key (`checkpoint.line`) of the journal line the trainer hands the step."""


@runtime_checkable
class CatchesUp(Protocol):
    """A `commit` step whose state is derived from the journal (e.g. `review`): before the first sample the trainer
    calls `resume` with the skillbook it starts from and every recorded sample line (none on a fresh start), so
    the step catches up with the lines committed before an interruption; the step must be idempotent."""

    def resume(self, skillbook: Skillbook, records: Sequence[Mapping[str, Any]]) -> None:
        """Catch up with `records` (journal order), on `skillbook` as the run resumes it."""
        ...


class CheckpointOptions(BaseModel):
    """`checkpoint`: how often to snapshot the skillbook (the journal makes every sample resumable anyway)."""

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)
    snapshot_every: int | None = Field(default=None, ge=1)
    """Snapshot every this many samples (default: when the last snapshot is older than 20x its cost)."""


class CheckpointStep:
    """Appends each committed sample's line to the journal of `folder` and snapshots the skillbook when due."""

    name = "checkpoint"
    requires: frozenset[str] = frozenset({"skillbook"})
    provides: frozenset[str] = frozenset()

    def __init__(self, folder: Path, *, snapshot_every: int | None = None) -> None:
        self.folder = folder
        self.journal = Checkpoint(folder, snapshot_every=snapshot_every)

    def load(self) -> tuple[Skillbook, list[dict[str, Any]]] | None:
        """The skillbook and sample records to resume from, or `None` for a fresh folder."""
        return load_checkpoint(self.folder)

    async def __call__(self, ctx: StepContext) -> StepContext:
        """Append `ctx.extras["checkpoint"]["line"]` (the commit point), then snapshot `ctx.skillbook` if due."""
        line = ctx.extra(self.name, LINE_KEY)
        if not isinstance(line, dict):
            raise TypeError(f"checkpoint.line must be the sample's journal line (a dict), got {type(line).__name__}")
        await self.journal.commit(line, ctx.skillbook)
        return ctx


def _build(options: CheckpointOptions, env: StepEnvironment) -> CheckpointStep:
    return CheckpointStep(need(env.output_dir, "checkpoint", "output_dir"), snapshot_every=options.snapshot_every)


checkpoint = StepFactory(
    step=CheckpointStep,
    phase="commit",
    description="Journals each sample (samples.jsonl) and snapshots the skillbook, so --resume redoes nothing.",
    options=CheckpointOptions,
    build=_build,
)
