"""Benchmark scores for the page: pass^k before and after with 95 % intervals, per-task deltas, the episodes; and
the comparison of several runs."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ace_eval.benchmarks.phases import SCORES_FILE
from ace_eval.benchmarks.scores import pass_hat_k_interval as pass_hat_k_with_interval
from ace_eval.benchmarks.scores import pass_hat_ks, read_scores, success_of
from ace_eval.collection import Trace
from ace_eval.report.read import ReportRun

__all__ = ["benchmark_scores", "compare_runs", "pass_hat_k_interval"]


def pass_hat_k_interval(episodes: Sequence[Trace], k: int) -> dict[str, float] | None:
    """pass^k over the scored episodes (the mean over tasks of C(c, k) / C(n, k)) with its bootstrap 95 % interval
    over tasks (`ace_eval.benchmarks.scores`); `None` when a task has fewer than `k` scored trials or none is
    scored."""
    successes: dict[str, list[bool]] = defaultdict(list)
    for t in episodes:
        if not t.metadata.get("error"):
            successes[str(t.task_id)].append(success_of(t.reward or 0.0))
    if not successes or min(len(s) for s in successes.values()) < k:
        return None
    row = pass_hat_k_with_interval(successes, k)
    return {"value": row.value, "low": row.low, "high": row.high, "tasks": len(successes)}


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
    scored = _scored_phases(run.path)
    if scored is not None:
        return scored
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


def _scored_phases(folder: Path) -> dict[str, Any] | None:
    """The same table from the phases' `scores.json` (a benchmark run through the protocol), `None` without them:
    pass^k with intervals and each task's success rate, before and after."""
    files = {phase: folder / name / SCORES_FILE for phase, name in (("before", "baseline"), ("after", "evaluation"))}
    if not files["before"].is_file():
        return None
    phases = {p: read_scores(f).successes() for p, f in files.items() if f.is_file()}
    rows = {p: {row.k: row for row in pass_hat_ks(s)} for p, s in phases.items()}
    k_max = max((max(r, default=0) for r in rows.values()), default=0)

    def cell(phase: str, k: int) -> dict[str, float] | None:
        row = rows.get(phase, {}).get(k)
        return None if row is None else {"value": row.value, "low": row.low, "high": row.high}

    def rate(phase: str, task: str) -> float | None:
        trials = phases.get(phase, {}).get(task)
        return sum(trials) / len(trials) if trials else None

    tasks = sorted({task for s in phases.values() for task in s})

    def delta(task: str) -> float | None:
        b, a = rate("before", task), rate("after", task)
        return a - b if a is not None and b is not None else None

    return {
        "pass_hat_k": [{"k": k, "before": cell("before", k), "after": cell("after", k)} for k in range(1, k_max + 1)],
        "tasks": [
            {"task": t, "before": rate("before", t), "after": rate("after", t), "delta": delta(t)} for t in tasks
        ],
        "episodes": [],
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
