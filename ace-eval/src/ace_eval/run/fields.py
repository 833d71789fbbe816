"""The fields of `run.json` computed from the run folder's files (so they are right after any resume), and the
versions a segment ran with."""

from __future__ import annotations

import platform
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import ace
import ace_eval
from ace.core.insight_source import utc_now
from ace.core.skillbook import Skillbook
from ace_eval.run.folder import RunFolder
from ace_eval.run.record import RunSummary, SampleErrorRecord, TrainingRecord
from ace_eval.run.samples import load_samples, merge_samples
from ace_eval.run.segments import Segment, step_timings, timings
from ace_eval.run.usage import role_usage, total_cost

__all__ = ["summarize_run", "versions"]


def versions() -> dict[str, str]:
    """The versions of ace, ace-eval and Python this segment ran with."""
    return {"ace": ace.__version__, "ace_eval": ace_eval.__version__, "python": platform.python_version()}


def summarize_run(
    folder: RunFolder, *, segments: Sequence[Segment], resumed_samples: int | None, skillbook: Path
) -> RunSummary:
    """The `run.json` fields computed from the run folder's files, so they are right after any resume: timings,
    usage and cost per role of the samples and the steps, training counts (`skillbook`: the file counted,
    `RunFolder.learned_skillbook`), every sample and every error. The benchmark's phases (and their agent's usage)
    are the runner's to add (`RunRecord.set_benchmark`)."""
    samples = merge_samples(load_samples(folder.samples))
    steps: dict[str, list[Any]] = {}
    for segment in segments:
        for role, used in segment.step_usage.items():
            steps.setdefault(role, []).append(used)
    usage = role_usage((sample.usage for sample in samples), steps)
    return RunSummary(
        updated_at=utc_now(),
        versions=versions(),
        timings=timings(segments),
        step_timings=step_timings(segments),
        usage=usage,
        cost_usd=total_cost(usage),
        training=TrainingRecord(
            samples=len(samples),
            errors=sum(1 for x in samples if x.error is not None),
            resumed_samples=resumed_samples,
            skillbook=_skillbook_stats(skillbook),
        ),
        errors=[SampleErrorRecord(trace_uid=x.trace_uid, epoch=x.epoch, error=x.error) for x in samples if x.error],
        samples=samples,
    )


def _skillbook_stats(path: Path) -> dict[str, Any] | None:
    """The saved skillbook's counts (the checkpoint's latest snapshot for an interrupted run)."""
    if not path.is_file():
        return None
    try:
        stats: dict[str, Any] = Skillbook.load_from_file(path).stats()
        return stats
    except ValueError as e:
        return {"error": str(e)}
