"""`review`: a `commit`-phase step that turns each committed sample's staged edits into review candidates.

In a review run (`ace-eval e2e --review --skillbook PATH`) the trainer trains a fork of the published skillbook
(the run folder's checkpoint), so every session sees the edits staged before it; the published file is never
written. After the `checkpoint` step journaled a sample, this step groups the sample's operations
(`ace_eval.review._grouping`) into the queue beside the published skillbook. The queue is derived from the
journal: on `--resume` the trainer hands the step every recorded line first (`resume`), and since grouping is
idempotent the lines committed before a kill are queued exactly once, whether or not their candidates were
written before the process died. The texts come from the fork and the journal line, both redacted already.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from ace.core.insight_source import InsightSource
from ace.core.skillbook import Skillbook
from ace.core.update_operation import UpdateOperation
from ace.exceptions import UserError
from ace.pipeline.context import StepContext
from ace.pipeline.registry import StepEnvironment, StepFactory, need
from ace_eval.review._grouping import Proposal, ReviewCounts, Stager
from ace_eval.review._model import SourceRef
from ace_eval.review._provenance import CollectionHashes
from ace_eval.review._queue import ReviewQueue
from ace_eval.run.checkpoint_step import LINE_KEY
from ace_eval.run.record import ReviewRecord

__all__ = ["BASE_FILE", "ReviewOptions", "ReviewStep", "review"]

BASE_FILE = "review.base.json"
"""In the run folder: the published skillbook as the run forked it (what update / tag / remove candidates are
based on, and acceptance compares the published skill with)."""


class ReviewOptions(BaseModel):
    """`review`: the published skillbook the candidates are for, and the collection the traces are read from."""

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)
    skillbook: str = Field(min_length=1)
    """The published skillbook; its queue is `<stem>.review.json` beside it. Never written by the run."""
    collection: str = Field(default="collection", min_length=1)
    """The trace collection trained on (relative: in the run folder), whose content hashes candidates cite."""


class ReviewStep:
    """Queues the staged edits of every committed sample as candidates of the published skillbook's queue."""

    name = "review"
    requires: frozenset[str] = frozenset({"skillbook", f"checkpoint.{LINE_KEY}"})
    provides: frozenset[str] = frozenset()

    def __init__(self, skillbook: Path, *, run_dir: Path, collection: Path) -> None:
        self.queue = ReviewQueue(skillbook)
        self.run_dir = run_dir
        self.collection = collection
        self._hashes = CollectionHashes()
        self._stager: Stager | None = None

    @property
    def counts(self) -> ReviewCounts:
        """What the run did with its staged edits so far (resumed lines included)."""
        if self._stager is None:
            return ReviewCounts()
        return dataclasses.replace(self._stager.counts, unattributed=self._stager.unattributed)

    def review_record(self) -> ReviewRecord:
        """What `run.json` records of this step (`ReportsReview`): the queue and the counts so far."""
        queue = self.queue
        return ReviewRecord(skillbook=str(queue.skillbook), queue=str(queue.path), **self.counts.to_dict())

    def resume(self, skillbook: Skillbook, records: Sequence[Mapping[str, Any]]) -> None:
        """Before the first sample: remember the fork's starting point (a fresh run), then catch up with every
        recorded sample (a resumed one), idempotently."""
        base_file = self.run_dir / BASE_FILE
        if not base_file.is_file():
            if any(r.get("operations") for r in records):
                raise UserError(
                    f"{base_file} is gone, so the staged edits of this review run cannot be compared with what they "
                    "were based on: start a new review run"
                )
            skillbook.save_to_file(base_file)  # nothing staged yet: the fork is the published skillbook
        self._stager = Stager(run_id=self.run_dir.name, base=Skillbook.load_from_file(base_file))
        self._queue_samples(skillbook, records)

    async def __call__(self, ctx: StepContext) -> StepContext:
        """Queue the staged edits of the sample just journaled (`checkpoint.line`)."""
        line = ctx.extra("checkpoint", LINE_KEY)
        if not isinstance(line, Mapping):
            raise TypeError(f"checkpoint.line must be the sample's journal line, got {type(line).__name__}")
        if self._stager is None:
            self.resume(ctx.skillbook, [])
        self._queue_samples(ctx.skillbook, [line])
        return ctx

    def _queue_samples(self, book: Skillbook, samples: Sequence[Mapping[str, Any]]) -> None:
        stager = self._stager
        assert stager is not None, "resume() sets the stager"
        batches = [self._proposals(book, s) for s in samples]
        if not any(batches):
            return
        with self.queue.editing() as queue:
            changed = False
            for proposals in batches:
                changed |= stager.propose(queue, proposals)
            if changed:
                self.queue.save(queue)

    def _proposals(self, book: Skillbook, sample: Mapping[str, Any]) -> list[Proposal]:
        """A sample's operations, each with the occurrence the fork appended for it and the trace it cites."""
        epoch = int(sample.get("epoch", 0))
        reflection = sample.get("reflection") or {}
        hashes = self._hashes.of(str(self.collection))
        seen: dict[tuple[str, str], int] = {}
        out: list[Proposal] = []
        for raw in sample.get("operations") or ():
            op = UpdateOperation.from_dict(raw)
            if op.skill_id is None or op.type == "PURGE" or op.type == "QUARANTINE" or op.type == "RELEASE":
                continue  # a purge is an operator's, quarantine decisions the gate's (on the fork the sessions see)
            trace_uid = op.trace_uid or str(sample.get("trace_uid"))
            n = seen.get((op.skill_id, op.type), 0)
            seen[(op.skill_id, op.type)] = n + 1
            source = _occurrence(book, op, trace_uid, epoch, n) or InsightSource(
                trace_uid=trace_uid,
                source_system="unknown",
                trace_id=str(sample.get("trace_id")),
                epoch=epoch,
                operation_type=op.type,
            )
            ref = SourceRef(
                trace_uid=trace_uid,
                source_system=source.source_system,
                trace_id=source.trace_id,
                epoch=epoch,
                error_identification=reflection.get("error_identification") or source.error_identification,
                key_insight=reflection.get("key_insight") or None,
                collection=str(self.collection.resolve()),
                trace_sha256=hashes.get(trace_uid) if isinstance(hashes, dict) else None,
                run_id=self.run_dir.name,
            )
            out.append(Proposal(operation=op, source=source, ref=ref))
        return out


def _occurrence(book: Skillbook, op: UpdateOperation, trace_uid: str, epoch: int, n: int) -> InsightSource | None:
    """The `n`-th occurrence the fork appended to the skill for this operation type from this trace and epoch."""
    skill = book.get_skill(op.skill_id or "")
    if skill is None:
        return None
    mine = [o for o in skill.occurrences if (o.trace_uid, o.epoch, o.operation_type) == (trace_uid, epoch, op.type)]
    return mine[n] if n < len(mine) else None


def _build(options: ReviewOptions, env: StepEnvironment) -> ReviewStep:
    run_dir = need(env.output_dir, "review", "output_dir")
    return ReviewStep(
        env.path("review", "skillbook", options.skillbook),
        run_dir=run_dir,
        collection=env.path("review", "collection", options.collection),
    )


review = StepFactory(
    step=ReviewStep,
    phase="commit",
    description="Review runs: turns each sample's staged edits into candidates a person accepts (ace-eval review).",
    options=ReviewOptions,
    build=_build,
)
