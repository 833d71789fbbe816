"""tau2-bench `Results`: `{info, tasks, simulations: [{id, task_id, trial, messages, reward_info, ...}]}`.

tau2 messages differ from OpenAI's: tool calls carry `name` and an `arguments` object, tool results carry the
call's `id`, several results can be grouped in one `{"role": "tool", "tool_messages": [...]}`, and in
dual-control domains (telecom) the simulated user calls tools on its own device. The agent's conversation
keeps the agent's calls; the user's calls go to `metadata.user_tool_calls`.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, JsonValue

from ace_eval.collection.chat import tool_arguments
from ace_eval.collection.importers._common import (
    ImportedCollection,
    build_trace,
    json_object,
    json_objects,
    load_json,
    validate_source,
)
from ace_eval.collection.model import CollectionError, Trace

__all__ = ["import_tau2", "tau2_feedback", "tau2_question"]

_SOURCE = ConfigDict(strict=True, extra="allow")


class _ToolCall(BaseModel):
    model_config = _SOURCE
    id: str = ""
    name: str
    arguments: dict[str, JsonValue]
    requestor: Literal["assistant", "user"] = "assistant"


class _ToolResult(BaseModel):
    model_config = _SOURCE
    id: str = ""
    content: str | None = None
    requestor: Literal["assistant", "user"] = "assistant"
    error: bool = False


class _Message(_ToolResult):
    role: Literal["system", "user", "assistant", "tool"]
    tool_calls: list[_ToolCall] | None = None
    tool_messages: list[_ToolResult] | None = None


class _Simulation(BaseModel):
    model_config = _SOURCE
    id: str
    task_id: str | int
    trial: int | None = None
    messages: list[_Message] | None = None
    reward_info: dict[str, JsonValue] | None = None
    termination_reason: str | None = None
    duration: float | None = None
    agent_cost: float | None = None
    user_cost: float | None = None
    seed: int | None = None
    policy: str | None = None


class _Results(BaseModel):
    model_config = _SOURCE
    info: dict[str, JsonValue] = Field(default_factory=dict)
    tasks: list[dict[str, JsonValue]] = Field(default_factory=list)
    simulations: list[JsonValue]


def tau2_question(task: Mapping[str, JsonValue] | None) -> str | None:
    """The user's instruction of a tau2 task (`user_scenario.instructions`, plain or structured)."""
    scenario = json_object((task or {}).get("user_scenario"))
    instructions = scenario.get("instructions")
    if isinstance(instructions, str):
        return instructions
    if isinstance(instructions, dict):
        labels = [
            ("reason_for_call", "Reason for call"),
            ("known_info", "Known info"),
            ("unknown_info", "Unknown info"),
            ("task_instructions", "Task instructions"),
        ]
        parts = [f"{label}: {instructions[key]}" for key, label in labels if instructions.get(key)]
        return "\n".join(parts) or None
    return None


def tau2_feedback(reward_info: Mapping[str, JsonValue] | None) -> str | None:
    """The grader's verdict in words: database check, communicated info, assertions, expected actions."""
    if not reward_info:
        return None
    parts: list[str] = []
    db = json_object(reward_info.get("db_check"))
    if "db_match" in db:
        parts.append(
            "the final database matches the expected one"
            if db["db_match"]
            else "the final database differs from the expected one"
        )
    for check in json_objects(reward_info.get("communicate_checks")):
        if not check.get("met"):
            parts.append(f"the agent never told the user {check.get('info')!r}")
    for check in json_objects(reward_info.get("nl_assertions")):
        if not check.get("met"):
            why = f" ({check['justification']})" if check.get("justification") else ""
            parts.append(f"not met: {check.get('nl_assertion')}{why}")
    for check in json_objects(reward_info.get("action_checks")):
        action = json_object(check.get("action"))
        if not check.get("action_match"):
            parts.append(f"expected action not taken: {action.get('name')}({json.dumps(action.get('arguments', {}))})")
    reward = reward_info.get("reward")
    head = f"reward {reward:g}" if isinstance(reward, int | float) else "reward unknown"
    return f"{head}: " + ("; ".join(parts) if parts else "every check passed")


def _load(path: Path) -> tuple[object, str]:
    """The Results JSON, from one file or from a dir-format run (`results.json` + `simulations/*.json`)."""
    if path.is_dir():
        meta_path = path / "results.json"
        raw = load_json(meta_path)
        if isinstance(raw, dict) and not raw.get("simulations"):
            raw["simulations"] = [load_json(p) for p in sorted((path / "simulations").glob("*.json"))]
        return raw, str(meta_path)
    return load_json(path), str(path)


def import_tau2(path: str | os.PathLike[str], *, source_system: str | None = None) -> ImportedCollection:
    """Convert a tau2-bench Results file (or dir-format run); `source_system` defaults to `tau2-<domain>`."""
    raw, file = _load(Path(path))
    if not isinstance(raw, dict):
        hint = (
            " (a JSON list looks like a tau-bench result file: use --format tau-bench)" if isinstance(raw, list) else ""
        )
        raise CollectionError(f"a tau2-bench Results file is a JSON object with `simulations`{hint}", file=file)
    results = validate_source(_Results, raw, file=file)
    env = json_object(results.info.get("environment_info"))
    domain = name if isinstance(name := env.get("domain_name"), str) else None
    system = source_system or (f"tau2-{domain}" if domain else "tau2")
    policy = text if isinstance(text := env.get("policy"), str) else None
    tasks = {str(t.get("id")): t for t in results.tasks}
    traces = [
        _trace(validate_source(_Simulation, sim, file=file, where=f"simulations[{i}]"), i, system, policy, tasks, file)
        for i, sim in enumerate(results.simulations)
    ]
    models = {
        role: llm
        for role, key in (("agent", "agent_info"), ("user", "user_info"))
        if isinstance(llm := json_object(results.info.get(key)).get("llm"), str)
    }
    return ImportedCollection(
        traces=traces,
        source_system=system,
        benchmark=f"tau2-bench-{domain}" if domain else "tau2-bench",
        models=models,
        metadata={"importer": "tau2", "source_file": Path(path).name},
    )


def _trace(
    sim: _Simulation, index: int, system: str, policy: str | None, tasks: dict[str, dict[str, JsonValue]], file: str
) -> Trace:
    where = f"simulations[{index}]"
    messages: list[dict[str, JsonValue]] = []
    origins: list[str] = []  # the source path of each converted message, to locate errors
    user_calls: list[dict[str, JsonValue]] = []
    tool_errors: list[str] = []
    names: dict[str, str] = {}
    pending: list[str] = []  # ids of the agent's calls still waiting for a result, in order
    source = sim.messages or []
    if (sim.policy or policy) and not (source and source[0].role == "system"):
        messages.append({"role": "system", "content": sim.policy or policy})
        origins.append("info.environment_info.policy")
    for j, message in enumerate(source):
        at = f"{where}.messages[{j}]"
        if message.role == "tool":
            results: list[_ToolResult] = list(message.tool_messages or [message])
            for k, result in enumerate(results):
                if result.requestor == "user":
                    entry = next((c for c in user_calls if c["id"] == result.id and "result" not in c), None)
                    if entry is None:
                        entry = {"id": result.id}
                        user_calls.append(entry)
                    entry.update(result=result.content, error=result.error)
                    continue
                call_id = result.id if result.id in names else (pending[0] if pending else result.id)
                if call_id in pending:
                    pending.remove(call_id)
                if result.error:
                    tool_errors.append(call_id)
                reply: dict[str, JsonValue] = {"role": "tool", "tool_call_id": call_id, "content": result.content or ""}
                if call_id in names:
                    reply["name"] = names[call_id]
                messages.append(reply)
                origins.append(f"{at}.tool_messages[{k}]" if message.tool_messages else at)
            continue
        calls: list[JsonValue] = []
        for k, call in enumerate(message.tool_calls or []):
            if call.requestor == "user" or message.role == "user":
                user_calls.append({"id": call.id, "name": call.name, "arguments": call.arguments})  # result added below
                continue
            call_id = call.id or f"call-{j}-{k}"
            names[call_id] = call.name
            pending.append(call_id)
            calls.append(
                {
                    "id": call_id,
                    "type": "function",
                    "function": {"name": call.name, "arguments": tool_arguments(call.arguments)},
                }
            )
        if message.role == "assistant" and (calls or message.content is not None):
            converted: dict[str, JsonValue] = {"role": "assistant", "content": message.content}
            if calls:
                converted["tool_calls"] = calls
            messages.append(converted)
            origins.append(at)
        elif message.role in ("user", "system") and message.content is not None:
            messages.append({"role": message.role, "content": message.content})
            origins.append(at)
    task = tasks.get(str(sim.task_id))
    question = tau2_question(task) or next((m["content"] for m in messages if m["role"] == "user"), None)
    reward = (sim.reward_info or {}).get("reward")
    trace_id = f"task-{sim.task_id}-trial-{sim.trial}" if sim.trial is not None else f"sim-{sim.id}"

    def locate(trace_field: str) -> str:
        if trace_field.startswith("messages["):
            number, _, rest = trace_field[len("messages[") :].partition("]")
            return (
                origins[int(number)] + rest if number.isdigit() and int(number) < len(origins) else f"{where}.messages"
            )
        if trace_field == "question":
            return f"tasks[id={sim.task_id}].user_scenario.instructions"
        return f"{where}.{ {'reward': 'reward_info.reward', 'trace_id': 'id'}.get(trace_field, trace_field) }"

    return build_trace(
        {
            "source_system": system,
            "trace_id": trace_id,
            "task_id": str(sim.task_id),
            "question": question,
            "messages": messages,
            "reward": reward,
            "feedback": tau2_feedback(sim.reward_info),
            "ground_truth": (task or {}).get("evaluation_criteria"),
            "metadata": {
                "simulation_id": sim.id,
                "trial": sim.trial,
                "seed": sim.seed,
                "termination_reason": sim.termination_reason,
                "duration": sim.duration,
                "agent_cost": sim.agent_cost,
                "user_cost": sim.user_cost,
                "reward_info": sim.reward_info,
                "user_tool_calls": user_calls,
                "tool_errors": tool_errors,
            },
        },
        file=file,
        locate=locate,
    )
