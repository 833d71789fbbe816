"""tau-bench result files: a JSON list of `{task_id, reward, info: {task, ..., reward_info}, traj, trial}`."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, FiniteFloat, JsonValue

from ace_eval.collection.grading import RESPOND_ACTION, DatabaseVerdict, GraderReport, diff_against_gold, find_outputs
from ace_eval.collection.importers._common import (
    ImportedCollection,
    build_trace,
    json_object,
    load_json,
    validate_source,
)
from ace_eval.collection.model import CollectionError

__all__ = ["import_tau_bench", "tau_bench_feedback", "tau_bench_grader"]

_SOURCE = ConfigDict(strict=True, extra="allow")
# Where a trace field comes from in a tau-bench run.
_RENAMES = {"messages": "traj", "question": "info.task.instruction", "trace_id": "task_id"}


class _Task(BaseModel):
    model_config = _SOURCE
    instruction: str
    user_id: str | None = None
    actions: list[dict[str, JsonValue]] = Field(default_factory=list)
    outputs: list[str] = Field(default_factory=list)


class _Info(BaseModel):
    model_config = _SOURCE
    task: _Task
    source: str | None = None
    user_cost: float | None = None
    reward_info: dict[str, JsonValue] | None = None


class _Result(BaseModel):
    model_config = _SOURCE
    task_id: int | str
    reward: FiniteFloat
    info: _Info
    traj: list[JsonValue]
    trial: int | None = None


def _domain(entries: Sequence[object]) -> str | None:
    """`airline` or `retail` from the policy heading of the first run's system prompt."""
    for entry in entries[:1]:
        traj = entry.get("traj") if isinstance(entry, dict) else None
        first = traj[0] if isinstance(traj, list) and traj else None
        content = first.get("content") if isinstance(first, dict) and first.get("role") == "system" else None
        heading = content.strip().splitlines()[0].lower() if isinstance(content, str) and content.strip() else ""
        for domain in ("airline", "retail"):
            if domain in heading:
                return domain
    return None


def _breakdown(reward_info: Mapping[str, JsonValue] | None) -> Mapping[str, JsonValue]:
    """`reward_info["info"]`, tau-bench's reward breakdown (`r_actions`, `r_outputs`, `outputs`); `{}` if none."""
    return json_object(reward_info.get("info")) if reward_info is not None else {}


def _database_verdict(reward: float, reward_info: Mapping[str, JsonValue] | None) -> DatabaseVerdict:
    """The database check as far as `reward_info` tells it.

    For a task with required outputs, tau-bench records only the outputs check (the database verdict is
    overwritten), so it is known only when the reward or a complete outputs check implies it.
    """
    if reward >= 1:
        return "matches"
    info = _breakdown(reward_info)
    if "r_actions" in info:
        r_actions = info["r_actions"]
        if not isinstance(r_actions, int | float) or isinstance(r_actions, bool):
            return "unknown"  # a breakdown this version of tau-bench did not write
        return "matches" if r_actions >= 1 else "differs"
    outputs = info.get("outputs") or {}
    if "r_outputs" in info and isinstance(outputs, dict) and all(outputs.values()):
        return "differs"
    return "unknown"


def _recorded_outputs(reward_info: Mapping[str, JsonValue] | None) -> dict[str, bool] | None:
    info = _breakdown(reward_info)
    outputs = info.get("outputs") if "r_outputs" in info else None
    return {str(k): bool(v) for k, v in outputs.items()} if isinstance(outputs, dict) else None


def tau_bench_feedback(reward: float, reward_info: Mapping[str, JsonValue] | None) -> str:
    """The grader's verdict in words, from tau-bench's `reward_info` (database check, then required outputs)."""
    if reward_info is None:
        return f"reward {reward:g}: no grading details recorded (reward_info is null)"
    info = _breakdown(reward_info)
    if "r_actions" not in info and "r_outputs" not in info:
        return f"reward {reward:g}: no breakdown recorded"
    parts: list[str] = []
    database = _database_verdict(reward, reward_info)
    if database != "unknown":
        verb = "matches" if database == "matches" else "differs from"
        parts.append(f"the final database {verb} the one the gold actions produce")
    outputs = _recorded_outputs(reward_info) or {}
    missing = [k for k, said in outputs.items() if not said]
    if missing:
        parts.append(f"the agent never told the user: {', '.join(repr(m) for m in missing)}")
    elif outputs:
        parts.append("the agent told the user every required output")
    return f"reward {reward:g}: " + ("; ".join(parts) or "the breakdown holds no verdict this importer reads")


def tau_bench_grader(
    messages: Sequence[JsonValue],
    task_actions: Sequence[Mapping[str, JsonValue]],
    task_outputs: Sequence[str],
    reward: float,
    reward_info: Mapping[str, JsonValue] | None,
) -> GraderReport:
    """The run compared with the gold: actions, required outputs (as recorded, else checked on the replies)
    and the database verdict `reward_info` gives."""
    chat = [m for m in messages if isinstance(m, dict)]
    outputs = _recorded_outputs(reward_info)
    if outputs is None and task_outputs:
        replies = [
            str(m.get("content")) for m in chat if m.get("role") == "assistant" and isinstance(m.get("content"), str)
        ]
        outputs = find_outputs(task_outputs, replies)
    gold = [a for a in task_actions if a.get("name") != RESPOND_ACTION]
    return diff_against_gold(
        chat, gold, outputs=outputs, reward=reward, database=_database_verdict(reward, reward_info)
    )


def import_tau_bench(path: str | os.PathLike[str], *, source_system: str | None = None) -> ImportedCollection:
    """Convert a tau-bench result file; `source_system` defaults to `tau-bench-<domain>` (airline or retail)."""
    file = str(path)
    raw = load_json(path)
    if not isinstance(raw, list):
        hint = " (this looks like a tau2-bench Results file: use --format tau2)" if isinstance(raw, dict) else ""
        raise CollectionError(
            f"a tau-bench result file is a JSON list of runs, got {type(raw).__name__}{hint}", file=file
        )
    domain = _domain(raw)
    system = source_system or (f"tau-bench-{domain}" if domain else "tau-bench")
    traces = []
    for i, entry in enumerate(raw):
        result = validate_source(_Result, entry, file=file, where=f"[{i}]")
        task = result.info.task
        trace_id = (
            f"task-{result.task_id}-trial-{result.trial}"
            if result.trial is not None
            else f"task-{result.task_id}-run-{i}"
        )
        reward_info = result.info.reward_info
        metadata: dict[str, JsonValue] = {
            "trial": result.trial,
            "user_id": task.user_id,
            "user_source": result.info.source,
            "user_cost": result.info.user_cost,
            # The gold actions are in ground_truth; reward_info repeats them.
            "reward_info": None if reward_info is None else {k: v for k, v in reward_info.items() if k != "actions"},
        }

        def locate(trace_field: str, i: int = i) -> str:
            head, sep, rest = (
                trace_field.partition("[") if trace_field.startswith("messages") else (trace_field, "", "")
            )
            return f"[{i}].{_RENAMES.get(head, head)}{sep}{rest}"

        traces.append(
            build_trace(
                {
                    "source_system": system,
                    "trace_id": trace_id,
                    "task_id": str(result.task_id),
                    "question": task.instruction,
                    "messages": result.traj,
                    "reward": result.reward,
                    "feedback": tau_bench_feedback(result.reward, reward_info),
                    "ground_truth": {"actions": task.actions, "outputs": task.outputs},
                    "grader": tau_bench_grader(
                        result.traj, task.actions, task.outputs, result.reward, reward_info
                    ).model_dump(),
                    "metadata": metadata,
                },
                file=file,
                locate=locate,
            )
        )
    return ImportedCollection(
        traces=traces,
        source_system=system,
        benchmark=system,
        metadata={"importer": "tau-bench", "source_file": Path(path).name},
    )
