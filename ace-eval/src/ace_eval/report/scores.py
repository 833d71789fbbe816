"""Benchmark scores for the page: pass^k before and after with 95 % intervals, per-task deltas, the episodes; and
the comparison of several runs."""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from ace_eval.benchmarks.tau_bench.scoring import is_success
from ace_eval.collection import Trace
from ace_eval.report.read import ReportRun

__all__ = ["benchmark_scores", "compare_runs", "pass_hat_k_interval"]

_Z95 = 1.959964


def pass_hat_k_interval(episodes: Sequence[Trace], k: int) -> dict[str, float] | None:
    """pass^k over the scored episodes (the mean over tasks of C(c, k) / C(n, k)) with a normal 95 % interval
    over tasks, clipped to [0, 1]; `None` when a task has fewer than `k` scored trials or none is scored."""
    counts: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for t in episodes:
        if t.metadata.get("error"):
            continue
        counts[str(t.task_id)][0] += is_success(t.reward or 0.0)
        counts[str(t.task_id)][1] += 1
    if not counts or min(n for _, n in counts.values()) < k:
        return None
    values = [math.comb(c, k) / math.comb(n, k) for c, n in counts.values()]
    mean = sum(values) / len(values)
    sd = math.sqrt(sum((v - mean) ** 2 for v in values) / (len(values) - 1)) if len(values) > 1 else 0.0
    half = _Z95 * sd / math.sqrt(len(values))
    return {"value": mean, "low": max(0.0, mean - half), "high": min(1.0, mean + half), "tasks": len(values)}


def _task_means(episodes: Sequence[Trace]) -> dict[str, float]:
    rewards: dict[str, list[float]] = defaultdict(list)
    for t in episodes:
        if not t.metadata.get("error"):
            rewards[str(t.task_id)].append(t.reward or 0.0)
    return {task: sum(r) / len(r) for task, r in rewards.items()}


def _trials(episodes: Sequence[Trace]) -> int:
    per_task: dict[str, int] = defaultdict(int)
    for t in episodes:
        if not t.metadata.get("error"):
            per_task[str(t.task_id)] += 1
    return min(per_task.values(), default=0)


def benchmark_scores(run: ReportRun) -> dict[str, Any] | None:
    """pass^1..k before and after (intervals from the episodes), per-task mean reward and its delta, every episode;
    the recorded pass^k alone when the folder kept no episodes; `None` for a run without a benchmark."""
    before, after = run.baseline, run.evaluation
    recorded = run.record.benchmark
    if not before and not after:
        if recorded is None:
            return None
        phases = {"before": recorded.before, "after": recorded.after}
        return {
            "pass_hat_k": [
                {"k": k, "before": {"value": v} if v is not None else None, "after": None}
                for k, v in enumerate(recorded.before.pass_hat_k if recorded.before else [], 1)
            ],
            "recorded": {p: r.model_dump(mode="json") if r is not None else None for p, r in phases.items()},
            "tasks": [],
            "episodes": [],
        }
    k_max = max(_trials(before), _trials(after))
    means_before, means_after = _task_means(before), _task_means(after)
    tasks = sorted(set(means_before) | set(means_after))
    return {
        "pass_hat_k": [
            {"k": k, "before": pass_hat_k_interval(before, k), "after": pass_hat_k_interval(after, k)}
            for k in range(1, k_max + 1)
        ],
        "tasks": [
            {
                "task": task,
                "before": means_before.get(task),
                "after": means_after.get(task),
                "delta": means_after[task] - means_before[task]
                if task in means_before and task in means_after
                else None,
            }
            for task in tasks
        ],
        "episodes": [
            {
                "phase": phase,
                "task": t.task_id,
                "trace_uid": t.trace_uid,
                "reward": t.reward,
                "error": t.metadata.get("error"),
                "skills": len(t.skills_in_context),
            }
            for phase, episodes in (("before", before), ("after", after))
            for t in episodes
        ],
    }


def _score(payload: dict[str, Any]) -> float | None:
    bench = payload.get("benchmark") or {}
    first = next(iter(bench.get("pass_hat_k") or []), None)
    after = (first or {}).get("after") or {}
    value = after.get("value")
    return float(value) if isinstance(value, (int, float)) else None


def compare_runs(payloads: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Scores side by side, the skills only some runs hold (by id), and the skills whose text or status differ."""
    by_run = [{s["id"]: s for s in p["skills"]} for p in payloads]
    every = sorted({sid for skills in by_run for sid in skills})
    only: list[dict[str, Any]] = []
    changed: list[dict[str, Any]] = []
    for sid in every:
        holders = [i for i, skills in enumerate(by_run) if sid in skills]
        if len(holders) < len(by_run):
            only.append({"id": sid, "runs": holders, "issue": by_run[holders[0]][sid]["issue"]})
            continue
        versions = [skills[sid] for skills in by_run]
        keys = ("issue", "insight", "keywords", "status")
        if any(v[key] != versions[0][key] for v in versions[1:] for key in keys):
            changed.append({"id": sid, "versions": [{key: v[key] for key in keys} for v in versions]})
    return {
        "runs": [
            {
                "id": p["id"],
                "status": p["status"],
                "samples": len(p["samples"]),
                "errors": sum(1 for row in p["samples"] if row[3] in ("error", "interrupted")),
                "skills": sum(1 for s in p["skills"] if s["status"] == "active"),
                "quarantined": sum(1 for s in p["skills"] if s["status"] == "quarantined"),
                "removed": sum(1 for s in p["skills"] if s["status"] == "removed"),
                "pass1_after": _score(p),
                "cost_usd": p.get("cost_usd"),
            }
            for p in payloads
        ],
        "only": only,
        "changed": changed,
    }
