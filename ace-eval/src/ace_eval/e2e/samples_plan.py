"""The samples of a training run: every (trace, epoch) in commit order, and on resume which recorded ones stand,
which were interrupted mid-session, and which failed ones run again."""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from ace.core.skillbook import Skillbook
from ace.core.trace import TraceIdentity, TraceInput
from ace_eval.e2e.fail_fast import retries_on_resume
from ace_eval.e2e.training_results import SampleResult
from ace_eval.run.checkpoint import CheckpointError

__all__ = ["PlannedSample", "interrupted_samples", "match_records", "plan_samples", "retried_samples"]


@dataclass(frozen=True)
class PlannedSample:
    """One (trace, epoch) of a run, at its place in the commit order."""

    index: int
    epoch: int
    trace: TraceInput
    """The trace as it was given (a mapping or a `TraceLike`, e.g. an `ace_eval` `Trace`), passed to the steps."""
    identity: TraceIdentity
    """Read once per trace by `plan_samples`, shared by its samples of every epoch."""
    attempt: int = 1
    """1, or the failed attempt's number + 1 when a resume runs a failed sample again."""

    @property
    def trace_uid(self) -> str:
        """The trace's `trace_uid`."""
        return self.identity.trace_uid

    @property
    def trace_id(self) -> str:
        """The trace's `trace_id`."""
        return self.identity.trace_id


def plan_samples(traces: Sequence[TraceInput], *, epochs: int, seed: int | None) -> list[PlannedSample]:
    """Every (trace, epoch) in commit order; with a seed each epoch is shuffled by `Random(f"{seed}:{epoch}")`.
    Each trace's identity is read here, once."""
    seen: dict[str, int] = {}
    identities: list[TraceIdentity] = []
    for position, trace in enumerate(traces):
        identity = TraceIdentity.of(trace)
        uid = identity.trace_uid
        if uid in seen:
            raise ValueError(
                f"trace_uid {uid!r} appears twice (positions {seen[uid]} and {position}): ids must be unique"
            )
        seen[uid] = position
        identities.append(identity)
    plan: list[PlannedSample] = []
    for epoch in range(epochs):
        order = list(range(len(traces)))
        if seed is not None:
            random.Random(f"{seed}:{epoch}").shuffle(order)
        for k in order:
            plan.append(PlannedSample(len(plan), epoch, traces[k], identities[k]))
    return plan


def interrupted_samples(
    plan: Sequence[PlannedSample], done: Mapping[int, SampleResult], book: Skillbook, start: int
) -> list[SampleResult]:
    """Samples whose edits reached the checkpoint (riding along another sample's line) though they never
    committed: the first unfinished sample of each such trace, recorded as interrupted so it is not re-run."""
    extra: dict[str, int] = {}
    since = book.operations_since(start)
    for op in since:
        if op.trace_uid is not None:
            extra[op.trace_uid] = extra.get(op.trace_uid, 0) + 1
    for sample in done.values():
        extra[sample.trace_uid] = extra.get(sample.trace_uid, 0) - len(sample.operations)
    out: list[SampleResult] = []
    for item in plan:
        kept = extra.pop(item.trace_uid, 0) if item.index not in done else 0
        if kept <= 0:
            continue
        ops = [op for op in since if op.trace_uid == item.trace_uid][-kept:]
        out.append(
            SampleResult(
                trace_uid=item.trace_uid,
                trace_id=item.trace_id,
                epoch=item.epoch,
                index=item.index,
                error=(
                    f"InterruptedSession: the run stopped during this sample's skill-manager session; its {kept} "
                    "applied operation(s) were kept and the sample is not re-run (that would apply them twice)"
                ),
                reflection=None,
                operations=tuple(op.to_dict() for op in ops),
                changed_skill_ids=tuple(dict.fromkeys(op.skill_id for op in ops if op.skill_id is not None)),
                error_kind="interrupted",
            )
        )
    return out


def retried_samples(plan: Sequence[PlannedSample], done: Mapping[int, SampleResult]) -> dict[int, PlannedSample]:
    """The recorded samples a resume runs again: failed without applying an operation, as their next attempt."""
    out: dict[int, PlannedSample] = {}
    for item in plan:
        sample = done.get(item.index)
        if sample is not None and retries_on_resume(sample):
            out[item.index] = dataclasses.replace(item, attempt=sample.attempt + 1)
    return out


def match_records(records: list[dict[str, object]], plan: list[PlannedSample], folder: Path) -> dict[int, SampleResult]:
    """The recorded samples by index; each must be the same (trace, epoch) at the same index as in `plan`."""
    by_index = {p.index: p for p in plan}
    done: dict[int, SampleResult] = {}
    for number, record in enumerate(records, 1):
        try:
            sample = SampleResult.from_dict(record)
        except ValueError as e:
            raise CheckpointError(f"{folder}/samples.jsonl:{number}: {e}") from None
        planned = by_index.get(sample.index)
        if planned is None or (planned.trace_uid, planned.epoch) != (sample.trace_uid, sample.epoch):
            raise CheckpointError(
                f"{folder}/samples.jsonl:{number}: sample {sample.index} was {sample.trace_uid} (epoch {sample.epoch}) "
                "but this run plans another trace there: resume with the same traces, epochs and seed, or use a "
                "fresh checkpoint_dir"
            )
        done[sample.index] = sample
    return done
