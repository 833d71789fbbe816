"""The rule-based skill manager (`--skill-manager-model rules`): a deterministic policy in place of an LLM.

It drives the same `SkillManager` session (the six atomic tools, `sm.session` spans, provenance) through a
pydantic-ai `FunctionModel`, and reads the reflections the grounded reflector writes (`ace.reflector.grounded`):

1. apply every proposed skill tag (`tag_skill`);
2. for each failure lesson (its tool and failure kind, parsed from the reflection's key insight), search first;
3. a skill carrying the same tool and failure kind as keywords is widened (`update_skill`: the union of its
   domains and differing arguments) when the lesson adds something, else left alone; otherwise one skill is added.

Skill texts are templates filled from the verdict: the issue names the domain, the tool (or the policy point) and
what went wrong; the insight is the reflection's key insight; the keywords are the domain, the tool and the failure
kind. A reflection that is not the grounded reflector's (free prose) teaches this policy nothing: it changes nothing.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    RetryPromptPart,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel

__all__ = ["RULES_MODEL_NAME", "Lesson", "lessons_of", "rules_model"]

RULES_MODEL_NAME = "rules"
_INSIGHT = re.compile(r"^key_insight: (.*)$", re.M)
_TAG = re.compile(r'-> tag_skill\(skill_id="([^"]+)", delta=(-?\d)\)')
_MAX_CONFLICTS = 3
_SOURCE = re.compile(r"^source_system: (\S+)$", re.M)
_LESSONS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("wrong_arguments", re.compile(r"^Before calling (\S+), check (.+) against the user's request")),
    ("missing_action", re.compile(r"^When the task requires (\S+), make that call")),
    ("forbidden_write", re.compile(r"^Call (\S+) only after confirming the policy allows it")),
    ("not_communicated", re.compile(r"^Tell the user the concrete result")),
    ("policy_not_met", re.compile(r"^Follow the policy point: (.+?)\.?$")),
    ("database_differs", re.compile(r"^Make exactly the writes the task requires")),
)


@dataclass(frozen=True, kw_only=True)
class Lesson:
    """One failure a grounded reflection teaches: its kind, tool (if any), differing arguments, domains, insight."""

    kind: str
    tool: str | None
    arguments: tuple[str, ...]
    domains: tuple[str, ...]
    insight: str
    point: str = ""
    """The policy point (`policy_not_met`)."""

    @property
    def keywords(self) -> list[str]:
        return [*self.domains, *([self.tool] if self.tool else []), self.kind][:5]

    @property
    def issue(self) -> str:
        where = f"In {' and '.join(self.domains)}, the agent" if self.domains else "The agent"
        match self.kind:
            case "wrong_arguments":
                return f"{where} called {self.tool} with wrong {', '.join(self.arguments)}."
            case "missing_action":
                return f"{where} did not complete the required {self.tool} call."
            case "forbidden_write":
                return f"{where} called {self.tool} when the policy did not allow that change."
            case "not_communicated":
                return f"{where} did not tell the user the result it had found."
            case "policy_not_met":
                return f"{where} missed the policy point: {self.point}."
            case _:
                return f"{where} left the database different from the expected one."

    def widened(self, skill: dict[str, Any]) -> Lesson:
        """This lesson merged with an existing skill's domains and arguments (what its keywords and issue say)."""
        keywords = [str(k) for k in skill.get("keywords") or []]
        domains = tuple(dict.fromkeys([*(k for k in keywords if k not in (self.tool, self.kind)), *self.domains]))
        arguments = self.arguments
        if self.kind == "wrong_arguments":
            old = re.search(r" with wrong (.+)\.$", str(skill.get("issue") or ""))
            if old:
                arguments = tuple(dict.fromkeys([*old.group(1).split(", "), *self.arguments]))
        return replace(self, domains=domains, arguments=arguments)


def lessons_of(prompt: str) -> list[Lesson]:
    """The failure lessons of the grounded reflections in a skill-manager prompt (none for other reflections)."""
    source = _SOURCE.search(prompt)
    domain = _domain(source.group(1)) if source else None
    lessons: list[Lesson] = []
    for insight in _INSIGHT.findall(prompt):
        for kind, pattern in _LESSONS:
            found = pattern.match(insight)
            if found is None:
                continue
            groups = found.groups()
            tool = groups[0] if groups and kind != "policy_not_met" else None
            arguments = tuple(groups[1].split(", ")) if kind == "wrong_arguments" else ()
            point = groups[0] if kind == "policy_not_met" else ""
            lessons.append(
                Lesson(
                    kind=kind,
                    tool=tool,
                    arguments=arguments,
                    domains=(domain,) if domain else (),
                    insight=insight,
                    point=point,
                )
            )
            break
    return lessons


def rules_model() -> FunctionModel:
    """The deterministic skill-manager policy as a pydantic-ai model (no request leaves the process)."""
    return FunctionModel(_policy, model_name=RULES_MODEL_NAME)


def _policy(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    prompt = _first_prompt(messages)
    lessons = lessons_of(prompt)
    tools = {t.name for t in info.function_tools}
    searches = _returns(messages, "search_skills")
    last = messages[-1]
    if any(isinstance(p, RetryPromptPart) for p in getattr(last, "parts", ())) or not tools:
        return _done("stopped: a call was refused or no tool is left")
    if not any(isinstance(m, ModelResponse) for m in messages):  # first turn: the tags, then the first search
        calls = [
            ToolCallPart("tag_skill", {"skill_id": skill_id, "delta": int(delta)})
            for skill_id, delta in _TAG.findall(prompt)
            if "tag_skill" in tools
        ]
        if lessons:
            calls.append(_search(lessons[0]))
        return ModelResponse(parts=calls) if calls else _done("no lesson in these reflections: nothing changed")
    conflict = _conflict(last)
    if conflict is not None and searches and len(searches) <= len(lessons) and _conflicts(messages) <= _MAX_CONFLICTS:
        # another session added or rewrote a similar skill meanwhile: decide again against its current text
        edit = _edit(lessons[len(searches) - 1], conflict, tools)
        if edit is not None:
            return ModelResponse(parts=[edit])
    elif _last_tool(last) == "search_skills" and len(searches) <= len(lessons):
        lesson = lessons[len(searches) - 1]
        edit = _edit(lesson, searches[-1], tools)
        if edit is not None:
            return ModelResponse(parts=[edit])
    if len(searches) < len(lessons):
        return ModelResponse(parts=[_search(lessons[len(searches)])])
    return _done(f"applied {len(lessons)} grounded lesson(s)")


def _edit(lesson: Lesson, found: list[dict[str, Any]], tools: set[str]) -> ToolCallPart | None:
    """Widen the skill with the same tool and failure kind, or add one; `None` when the lesson adds nothing."""
    marker = lesson.tool or lesson.kind
    same = next(
        (s for s in found if marker in s.get("keywords", []) and lesson.kind in s.get("keywords", [])),
        None,
    )
    if same is None:
        return ToolCallPart(
            "add_skill",
            {"section": "context", "issue": lesson.issue, "keywords": lesson.keywords, "insight": lesson.insight},
        )
    wide = lesson.widened(same)
    if "update_skill" not in tools or (wide.issue == same.get("issue") and wide.keywords == same.get("keywords")):
        return None
    return ToolCallPart("update_skill", {"skill_id": same["id"], "issue": wide.issue, "keywords": wide.keywords})


def _search(lesson: Lesson) -> ToolCallPart:
    return ToolCallPart("search_skills", {"query": lesson.issue, "keywords": [lesson.tool or lesson.kind, lesson.kind]})


def _done(summary: str) -> ModelResponse:
    return ModelResponse(parts=[TextPart(summary)])


def _first_prompt(messages: Sequence[ModelMessage]) -> str:
    first = messages[0] if messages else None
    parts = first.parts if isinstance(first, ModelRequest) else []
    texts = [getattr(p, "content", None) for p in parts]
    return "\n".join(t for t in texts if isinstance(t, str))


def _returns(messages: Sequence[ModelMessage], tool: str) -> list[list[dict[str, Any]]]:
    """The results of every `tool` call so far, in order."""
    out: list[list[dict[str, Any]]] = []
    for message in messages:
        if isinstance(message, ModelRequest):
            for part in message.parts:
                if isinstance(part, ToolReturnPart) and part.tool_name == tool:
                    content = part.content if isinstance(part.content, list) else json.loads(str(part.content))
                    out.append([dict(c) for c in content if isinstance(c, dict)])
    return out


def _conflict(message: ModelMessage) -> list[dict[str, Any]] | None:
    """The skills a conflict with another session shows (the last call was not applied), else `None`."""
    parts = [p for p in message.parts if isinstance(p, ToolReturnPart)] if isinstance(message, ModelRequest) else []
    content: object = parts[-1].content if parts else None
    if not isinstance(content, dict) or content.get("ok") is not False:
        return None
    skills = content.get("skills")
    return [dict(c) for c in skills if isinstance(c, dict)] if isinstance(skills, list) else None


def _conflicts(messages: Sequence[ModelMessage]) -> int:
    return sum(_conflict(m) is not None for m in messages)


def _last_tool(message: ModelMessage) -> str | None:
    parts = [p for p in message.parts if isinstance(p, ToolReturnPart)] if isinstance(message, ModelRequest) else []
    return parts[-1].tool_name if parts else None


def _domain(source_system: str) -> str | None:
    """`airline` for `tau-bench-airline` or `demo-airline`, `mock` for `tau2-mock`."""
    tail = source_system.rsplit("-", 1)[-1].strip().lower()
    return tail if tail.isalpha() and len(tail) >= 3 else None
