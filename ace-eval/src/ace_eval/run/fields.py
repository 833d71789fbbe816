"""The fields of `run.json` computed from the run folder's files (so they are right after any resume), and the
versions a segment ran with."""

from __future__ import annotations

import platform
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import ace
import ace_eval
from ace.core.insight_source import utc_now
from ace.core.skillbook import Skillbook
from ace_eval.benchmarks.tau_bench.episodes import benchmark_summary
from ace_eval.collection import MANIFEST_FILE, read_collection
from ace_eval.run.folder import RunFolder
from ace_eval.run.samples import load_samples, merge_samples
from ace_eval.run.segments import step_timings, timings
from ace_eval.run.usage import role_usage, total_cost

__all__ = ["summarize_run", "versions"]


def versions() -> dict[str, str]:
    """The versions of ace, ace-eval and Python this segment ran with."""
    return {"ace": ace.__version__, "ace_eval": ace_eval.__version__, "python": platform.python_version()}


def summarize_run(
    folder: RunFolder,
    *,
    replayed: bool,
    segments: Sequence[Mapping[str, Any]],
    resumed_samples: int | None,
    skillbook: Path,
) -> dict[str, Any]:
    """The `run.json` fields computed from the run folder's files, so they are right after any resume: timings,
    usage and cost per role, training counts (`skillbook`: the file counted, `RunFolder.learned_skillbook`),
    pass^k before / after, every sample and every error."""
    samples = merge_samples(load_samples(folder.samples))
    phases = {
        "baseline": folder.baseline,
        "evaluate": folder.evaluation,
        "evaluate_with_quarantined": folder.evaluation_with_quarantined,
    }
    if not replayed:
        phases = {"collect": folder.collection, **phases}
    summaries: dict[str, dict[str, Any]] = {}
    episode_usage: dict[str, list[Mapping[str, Any]]] = {}
    for phase, directory in phases.items():
        if not (directory / MANIFEST_FILE).is_file():
            continue
        _, episodes = read_collection(directory)
        summaries[phase] = benchmark_summary(episodes)
        for episode in episodes:
            for role, usage in (episode.metadata.get("usage") or {}).items():
                episode_usage.setdefault(role, []).append(usage)
    for segment in segments:
        for role, usage in (segment.get("step_usage") or {}).items():
            episode_usage.setdefault(role, []).append(usage)
    usage = role_usage(samples, episode_usage)
    before = summaries.get("baseline") or summaries.get("collect")
    after = summaries.get("evaluate")
    benchmark: dict[str, Any] | None = None if before is None and after is None else {"before": before, "after": after}
    if benchmark is not None and "evaluate_with_quarantined" in summaries:
        benchmark["after_with_quarantined"] = summaries["evaluate_with_quarantined"]
    return {
        "updated_at": utc_now(),
        "versions": versions(),
        "timings": timings(segments),
        "step_timings": step_timings(segments),
        "usage": usage,
        "cost_usd": total_cost(usage),
        "training": {
            "samples": len(samples),
            "errors": sum(1 for x in samples if x.error is not None),
            "resumed_samples": resumed_samples,
            "skillbook": _skillbook_stats(skillbook),
        },
        "benchmark": benchmark,
        "errors": [{"trace_uid": x.trace_uid, "epoch": x.epoch, "error": x.error} for x in samples if x.error],
        "samples": [x.to_dict() for x in samples],
    }


def _skillbook_stats(path: Path) -> dict[str, Any] | None:
    """The saved skillbook's counts (the checkpoint's latest snapshot for an interrupted run)."""
    if not path.is_file():
        return None
    try:
        return Skillbook.load_from_file(path).stats()
    except ValueError as e:
        return {"error": str(e)}
