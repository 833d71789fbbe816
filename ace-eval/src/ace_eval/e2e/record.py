"""The pieces of `run.json`: versions, samples (merged from the checkpoint), usage and cost per role, timings."""

from __future__ import annotations

import json
import platform
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import ace
import ace_eval
from ace.core.insight_source import utc_now
from ace.core.skillbook import Skillbook
from ace_eval.e2e.collection import MANIFEST_FILE, read_collection
from ace_eval.e2e.episodes import benchmark_summary, sum_usage
from ace_eval.e2e.run_folder import RunFolder
from ace_eval.e2e.training import SampleResult

__all__ = [
    "Segment",
    "load_sample_lines",
    "load_samples",
    "merge_samples",
    "operations_text",
    "role_usage",
    "sample_line",
    "summarize_run",
    "timings",
    "total_cost",
    "versions",
]


def versions() -> dict[str, str]:
    """The versions of ace, ace-eval and Python this segment ran with."""
    return {"ace": ace.__version__, "ace_eval": ace_eval.__version__, "python": platform.python_version()}


def load_samples(path: Path) -> list[SampleResult]:
    """The samples a training checkpoint recorded (`samples.jsonl`), one per (trace_uid, epoch): a sample run again
    on resume (`attempt` 2, 3, ...) replaces its failed line. Order: first recorded; a torn last line is skipped."""
    return list({(s.trace_uid, s.epoch): s for s in load_sample_lines(path)}.values())


def load_sample_lines(path: Path) -> list[SampleResult]:
    """Every line of `samples.jsonl`, failed attempts that a retry superseded included; a torn last line is skipped."""
    if not path.is_file():
        return []
    out: list[SampleResult] = []
    with path.open(encoding="utf-8") as f:
        for line in f:
            if not line.strip():
                continue
            try:
                data = json.loads(line)
                data.pop("checkpoint", None)  # the trainer's journal keeps the skillbook delta beside the result
                out.append(SampleResult.from_dict(data))
            except (json.JSONDecodeError, AttributeError, ValueError):
                continue  # a torn last line (the run was killed mid-write)
    return out


def merge_samples(*groups: Iterable[SampleResult]) -> list[SampleResult]:
    """One result per (trace_uid, epoch), the last one seen winning, in epoch then index order."""
    merged: dict[tuple[str, int], SampleResult] = {}
    for group in groups:
        for sample in group:
            merged[(sample.trace_uid, sample.epoch)] = sample
    return sorted(merged.values(), key=lambda s: (s.epoch, s.index, s.trace_uid))


def role_usage(
    samples: Sequence[SampleResult], episode_usage: Mapping[str, Sequence[Mapping[str, Any]]]
) -> dict[str, Any]:
    """Requests, tokens and cost per role: the reflector and skill manager from the samples, the agent and the
    simulated user from the episodes."""
    per_role: dict[str, list[Mapping[str, Any]]] = {}
    for sample in samples:
        for role, usage in sample.usage.items():
            per_role.setdefault(role, []).append(
                {
                    "requests": usage.requests,
                    "input_tokens": usage.input_tokens,
                    "output_tokens": usage.output_tokens,
                    "cost_usd": usage.cost_usd,
                }
            )
    for role, items in episode_usage.items():
        per_role.setdefault(role, []).extend(items)
    return {role: sum_usage(items) for role, items in sorted(per_role.items())}


def total_cost(usage: Mapping[str, Mapping[str, Any]]) -> float | None:
    """The summed cost of every role, or `None` when no role was priced."""
    costs = [float(u["cost_usd"]) for u in usage.values() if u.get("cost_usd") is not None]
    return sum(costs) if costs else None


def operations_text(operations: Sequence[Mapping[str, Any]]) -> str:
    """`ADD context-00001, TAG harness-00002` from `UpdateOperation.to_dict()`s."""
    return ", ".join(f"{op.get('type', '?')} {op.get('skill_id') or ''}".strip() for op in operations)


def sample_line(sample: SampleResult) -> str:
    """One `--verbose` line: the trace, the epoch, the outcome, the skills changed and the time."""
    head = f"{sample.trace_uid}  epoch {sample.epoch}"
    if sample.error is not None:
        return f"{head}  ERROR  {sample.error}  ({sample.duration_s:.1f}s)"
    if sample.skipped is not None:
        return f"{head}  skipped  {sample.skipped}"
    return f"{head}  ok  {operations_text(sample.operations) or 'no change'}  ({sample.duration_s:.1f}s)"


@dataclass(kw_only=True)
class Segment:
    """One invocation of a run (the first, or a resume): when, how long each phase took, how it ended."""

    started_at: str = field(default_factory=utc_now)
    finished_at: str | None = None
    status: str = "running"
    resumed: bool = False
    phases: dict[str, float] = field(default_factory=dict[str, float])
    error: str | None = None
    overrides: dict[str, Any] = field(default_factory=dict[str, Any])
    """Settings a resume changed (those that do not change what is learned: workers, verbosity, --logfire)."""
    resumed_samples: int | None = None
    steps: dict[str, dict[str, float]] = field(default_factory=dict[str, dict[str, float]])
    """Calls and seconds of each pipeline step in this segment."""
    step_usage: dict[str, dict[str, Any]] = field(default_factory=dict[str, dict[str, Any]])
    """Model usage of the end-of-epoch / end-of-run steps (e.g. the `dedup` judge), by role."""

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready, for `run.json`."""
        return {
            "started_at": self.started_at,
            "finished_at": self.finished_at,
            "status": self.status,
            "resumed": self.resumed,
            "phases_s": {k: round(v, 3) for k, v in self.phases.items()},
            "error": self.error,
            "overrides": dict(self.overrides),
            "resumed_samples": self.resumed_samples,
            "steps": self.steps,
            "step_usage": self.step_usage,
        }


def timings(segments: Sequence[Mapping[str, Any]]) -> dict[str, float]:
    """Seconds per phase summed over every segment, and their total."""
    out: dict[str, float] = {}
    for segment in segments:
        for phase, seconds in (segment.get("phases_s") or {}).items():
            out[phase] = round(out.get(phase, 0.0) + float(seconds), 3)
    out["total"] = round(sum(v for k, v in out.items() if k != "total"), 3)
    return out


def step_timings(segments: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, float]]:
    """Calls and seconds per pipeline step, summed over every segment."""
    out: dict[str, dict[str, float]] = {}
    for segment in segments:
        for name, t in (segment.get("steps") or {}).items():
            mine = out.setdefault(name, {"calls": 0, "seconds": 0.0})
            mine["calls"] += t.get("calls", 0)
            mine["seconds"] = round(mine["seconds"] + float(t.get("seconds", 0.0)), 6)
    return out


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
