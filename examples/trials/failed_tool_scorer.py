"""A toy judge for `ace-eval trials --scorer`: does a skillbook name the tool each graded failure went wrong on?

What it measures, exactly: the tasks are trace ids of the demo collection (`examples/demo-collection`) whose
grader verdict is a failure. For each such trace the scorer reads the tools its grader's actions name (a
missing, different or extra call) and gives reward 1.0 when at least one visible skill mentions one of those
tools in its issue, insight or keywords, else 0.0; every episode of a task gets the same reward. A trace id
that is not a graded failure of the collection is a user error (ValueError naming the valid ids).

It is a toy judge, not a benchmark: no agent runs, nothing is simulated, and naming a tool is not the same as
teaching the agent to use it well. It is here to show how a trial compares configurations (e.g. the
zero-cost grounded reflector + `rules` skill manager against an LLM pair) on an offline, repeatable score.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ace import Skillbook

COLLECTION = Path(__file__).resolve().parents[1] / "demo-collection" / "traces.jsonl"


def failed_tools(path: Path = COLLECTION) -> dict[str, frozenset[str]]:
    """trace id -> the tools its grader's actions name, for every graded failure of the collection."""
    tools: dict[str, frozenset[str]] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        trace: Mapping[str, Any] = json.loads(line)
        grader = trace.get("grader") or {}
        named = frozenset(str(a["tool"]) for a in grader.get("actions", []) if a.get("tool"))
        if grader.get("reward", 1.0) < 1.0 and named:
            tools[str(trace["trace_id"])] = named
    return tools


def _mentions(skillbook: Skillbook, tool: str) -> bool:
    for skill in skillbook.skills():
        if not skill.visible:
            continue
        text = " ".join([skill.issue or "", skill.insight or "", *skill.keywords]).lower()
        if tool.lower() in text:
            return True
    return False


def score(skillbook: Skillbook, task_ids: list[str], num_trials: int) -> dict[str, list[float]]:
    """Reward 1.0 per episode for each failed trace whose failed tool some visible skill names, else 0.0."""
    failures = failed_tools()
    unknown = [t for t in task_ids if t not in failures]
    if unknown:
        raise ValueError(f"not a graded failure of the demo collection: {unknown}; use some of {sorted(failures)}")
    return {t: [1.0 if any(_mentions(skillbook, tool) for tool in failures[t]) else 0.0] * num_trials for t in task_ids}
