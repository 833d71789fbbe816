"""Scripted models for the steps / training tests: a reflector and a skill manager that read only their prompt.

Both are stateless functions of the message history (so concurrent sessions cannot disturb each other) and
deterministic, so a sequential run, a parallel run and an interrupted-then-resumed run can be compared exactly.

- Reflector: the trace's question starts with `[topic]`; the reflection names the topic, and tags every skill in
  context `helpful` when the reward is 1.0, `harmful` otherwise.
- Skill manager: search the topic; widen the skill carrying the topic keyword if there is one, else add one;
  then apply every proposed tag; then say done.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any

from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel

from ace.embeddings.test import TestEmbedder
from ace.reflector.simple import SimpleReflector
from ace.skill_manager.manager import SkillManager, SMSettings
from ace_eval.collection import Trace

_TASK = re.compile(r"<task>\n(.*?)\n</task>", re.S)
_REWARD = re.compile(r"reward: ([0-9.]+)")
_IN_CONTEXT = re.compile(r"<skills_in_context>(.*?)</skills_in_context>", re.S)
_SKILL_ID = re.compile(r'<skill id="([^"]+)"')
_TOPIC = re.compile(r"^\[(\w+)\]")
_SM_TRACE = re.compile(r"trace_id: (\S+)")
_SM_EPOCH = re.compile(r"epoch: (\d+)")
_SM_TASK = re.compile(r"task: \[(\w+)\]")
_SM_TAG = re.compile(r'tag_skill\(skill_id="([^"]+)", delta=(-?\d)\)')

Hook = Callable[[str, int, int], None]
"""Called as `hook(trace_id, epoch, request_number)` at every skill-manager request (to inject failures)."""


def make_trace(
    n: int, topic: str, *, reward: float = 0.0, skills_in_context: Sequence[str] = (), source: str = "demo-test"
) -> dict[str, Any]:
    """A small valid collection trace (`Trace.model_dump()`), its question tagged with `[topic]`."""
    return Trace(
        source_system=source,
        trace_id=f"t{n:02d}",
        question=f"[{topic}] customer request number {n} about {topic}",
        messages=[
            {"role": "user", "content": f"Please help with my {topic} request {n}."},
            {"role": "assistant", "content": "Done."},
        ],
        reward=reward,
        skills_in_context=list(skills_in_context),
    ).model_dump()


def first_prompt(messages: list[ModelMessage]) -> str:
    """The text of the first user prompt of a conversation."""
    first = messages[0]
    assert isinstance(first, ModelRequest)
    return "\n".join(p.content for p in first.parts if isinstance(p, UserPromptPart) and isinstance(p.content, str))


def reflector_function(calls: list[str] | None = None) -> Callable[[list[ModelMessage], AgentInfo], ModelResponse]:
    """The scripted reflector model; appends each reflected question to `calls`."""

    def reflect(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        prompt = first_prompt(messages)
        task_match = _TASK.search(prompt)
        assert task_match is not None, prompt
        question = task_match.group(1)
        if calls is not None:
            calls.append(question)
        topic_match = _TOPIC.match(question)
        topic = topic_match.group(1) if topic_match else "general"
        reward_match = _REWARD.search(prompt)
        success = reward_match is not None and float(reward_match.group(1)) >= 1.0
        block = _IN_CONTEXT.search(prompt)
        ids = _SKILL_ID.findall(block.group(1)) if block else []
        tags = [{"skill_id": i, "tag": "helpful" if success else "harmful"} for i in ids]
        args = {
            "error_identification": "" if success else f"The agent mishandled the {topic} request.",
            "root_cause_analysis": f"It did not follow the {topic} policy.",
            "correct_approach": f"Apply the {topic} policy step by step.",
            "key_insight": f"Check the {topic} policy before acting.",
            "skill_tags": tags,
        }
        return ModelResponse(parts=[ToolCallPart(info.output_tools[0].name, args)])

    return reflect


def skill_manager_function(hook: Hook | None = None) -> Callable[[list[ModelMessage], AgentInfo], ModelResponse]:
    """The scripted skill-manager model (search, add-or-widen, tag, done)."""

    def manage(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        prompt = first_prompt(messages)
        trace_id = _match(_SM_TRACE, prompt)
        epoch = int(_match(_SM_EPOCH, prompt))
        task = _SM_TASK.search(prompt)
        topic = task.group(1) if task else "general"
        returns = [p for m in messages if isinstance(m, ModelRequest) for p in m.parts if isinstance(p, ToolReturnPart)]
        if hook is not None:
            hook(trace_id, epoch, len([m for m in messages if isinstance(m, ModelResponse)]) + 1)
        done = {p.tool_name for p in returns if applied(p)}
        if "search_skills" not in done:
            return _call("search_skills", query=f"{topic} policy", top_k=5)
        if not done & {"add_skill", "update_skill"}:
            found = next(p.content for p in returns if p.tool_name == "search_skills")
            assert isinstance(found, list)
            if returns[-1].outcome == "success" and not applied(returns[-1]):  # another session got there first
                found = conflict_skills(returns[-1])  # merge with what it wrote
            same = [s for s in found if topic in s["keywords"]]
            if same:
                return _call(
                    "update_skill",
                    skill_id=same[0]["id"],
                    issue=f"{same[0]['issue']} Seen again in {trace_id} (epoch {epoch}).",
                )
            return _call(
                "add_skill",
                section="context",
                issue=f"The agent mishandles {topic} requests (first seen in {trace_id}).",
                keywords=[topic, "policy"],
                insight=f"Check the {topic} policy before acting.",
            )
        tags = [(i, int(d)) for i, d in _SM_TAG.findall(prompt)]
        tagged = sum(1 for p in returns if p.tool_name == "tag_skill")
        if tagged < len(tags):  # one call per response: parallel tool calls would make the log order vary
            skill_id, delta = tags[tagged]
            return _call("tag_skill", skill_id=skill_id, delta=delta)
        return ModelResponse(parts=[TextPart(f"Recorded the {topic} lesson from {trace_id}.")])

    return manage


def applied(part: ToolReturnPart) -> bool:
    """Whether a tool call went through (not refused for a retry, not a conflict with another session)."""
    return part.outcome == "success" and not (isinstance(part.content, dict) and part.content.get("ok") is False)


def conflict_skills(part: ToolReturnPart) -> list[dict[str, Any]]:
    """The current text of the skills a conflict with another session shows the model."""
    assert isinstance(part.content, dict) and part.content.get("ok") is False, part.content
    skills: list[dict[str, Any]] = part.content["skills"]
    return skills


def _match(pattern: re.Pattern[str], text: str) -> str:
    found = pattern.search(text)
    assert found is not None, f"{pattern.pattern} not in prompt:\n{text}"
    return found.group(1)


def _call(tool: str, **args: Any) -> ModelResponse:
    return ModelResponse(parts=[ToolCallPart(tool, args)])


def scripted_roles(
    *, hook: Hook | None = None, reflected: list[str] | None = None, sm_settings: SMSettings | None = None
) -> tuple[SimpleReflector, SkillManager]:
    """A `SimpleReflector` and a `SkillManager`, both driven by the scripted functions above."""
    reflector = SimpleReflector(FunctionModel(reflector_function(reflected)))
    manager = SkillManager(
        FunctionModel(skill_manager_function(hook)), embedder=TestEmbedder(), settings=sm_settings or SMSettings()
    )
    return reflector, manager


Step = Callable[[list[ModelMessage], AgentInfo], ModelResponse]
"""One scripted model response: a function of the history and the offered tools."""


class Script:
    """A scripted model: request n runs step n, which sees the history and the offered tools; every request's
    messages and tool info are kept for assertions."""

    def __init__(self, *steps: Step, name: str = "scripted") -> None:
        self.steps = list(steps)
        self.name = name
        self.seen: list[list[ModelMessage]] = []
        self.infos: list[AgentInfo] = []

    def __call__(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        self.seen.append(list(messages))
        self.infos.append(info)
        assert len(self.seen) <= len(self.steps), "the model was asked more often than scripted"
        return self.steps[len(self.seen) - 1](messages, info)

    @property
    def model(self) -> FunctionModel:
        return FunctionModel(self, model_name=self.name)
