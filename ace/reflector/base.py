"""What every reflector shares: the `Reflector` protocol, its result and error, the skill-tag check, and the span
attributes of a trace. `reflector.py` (the simple reflector) and `rr/` (the recursive one) both build on it, so
neither imports the other.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from pydantic_ai import ModelRetry
from pydantic_ai.usage import RunUsage

from ace.core.skillbook import Skillbook
from ace.exceptions import RunError
from ace.observability import AttributeInput
from ace.reflector.reflection import Reflection, SkillTag
from ace.reflector.trace_view import TraceView

__all__ = [
    "Reflector",
    "ReflectorError",
    "ReflectorResult",
    "TagCheck",
    "check_skill_tags",
    "split_skill_tags",
    "trace_attributes",
]


@dataclass(frozen=True, kw_only=True)
class ReflectorResult:
    """One reflection with what it cost."""

    reflection: Reflection
    usage: RunUsage
    """Requests and tokens of the whole reflection (retries and tool rounds included)."""
    model_name: str | None
    dropped_tags: tuple[SkillTag, ...] = ()
    """Tags the model kept proposing for skills that were not in the trace's context; left out of `reflection`."""
    tool_calls: int = 0
    """Tools the reflector called (recursive reflector only)."""


@runtime_checkable
class Reflector(Protocol):
    """Anything that analyses one trace against a skillbook."""

    async def reflect(self, trace: Mapping[str, Any], skillbook: Skillbook) -> ReflectorResult:
        """Reflect on `trace` (a collection trace as a mapping); `skillbook` resolves the skills in context."""
        ...


class ReflectorError(RunError, RuntimeError):
    """A reflector could not produce a reflection; the message says why and what to change."""

    def __init__(self, message: str, *, usage: RunUsage | None = None) -> None:
        super().__init__(message)
        self.usage = usage or RunUsage()
        """What the failed attempt cost."""


# ------------------------------------------------------------------------------------------- skill tags
@dataclass(kw_only=True)
class TagCheck:
    """Per-run state of the skill-tag check: which ids may be tagged, and what was dropped."""

    allowed: frozenset[str]
    dropped: list[SkillTag] = field(default_factory=list[SkillTag])


def split_skill_tags(tags: Iterable[SkillTag], allowed: Collection[str]) -> tuple[list[SkillTag], list[SkillTag]]:
    """Tags on allowed ids (one per skill, the last verdict wins, in first-mention order) and the others."""
    latest: dict[str, SkillTag] = {}
    rejected: list[SkillTag] = []
    for tag in tags:
        if tag.skill_id in allowed:
            latest[tag.skill_id] = tag
        else:
            rejected.append(tag)
    return list(latest.values()), rejected


def check_skill_tags(reflection: Reflection, check: TagCheck, *, retry: int, max_retries: int) -> Reflection:
    """The reflection with only allowed tags; asks the model to fix unknown ones while it has retries left.

    Raises:
        ModelRetry: some tag names a skill outside `check.allowed` and `retry < max_retries`.
    """
    kept, rejected = split_skill_tags(reflection.skill_tags, check.allowed)
    if rejected and retry < max_retries:
        valid = ", ".join(sorted(check.allowed)) or "none: return an empty skill_tags list"
        raise ModelRetry(
            f"skill_tags names skills that were not in the agent's context: "
            f"{', '.join(sorted({t.skill_id for t in rejected}))}. Tag only skills listed in <skills_in_context> "
            f"(valid ids: {valid}); keep every other field as it was."
        )
    check.dropped.extend(rejected)
    return reflection if kept == reflection.skill_tags else reflection.model_copy(update={"skill_tags": kept})


def trace_attributes(trace: Mapping[str, Any], view: TraceView, in_context_count: int) -> dict[str, AttributeInput]:
    """The `ace.*` span attributes that identify a trace and its size (no content)."""
    return {
        "ace.trace_uid": _str_or_none(trace.get("trace_uid")),
        "ace.source_system": _str_or_none(trace.get("source_system")),
        "ace.trace_id": _str_or_none(trace.get("trace_id")),
        "ace.messages_count": len(view.messages),
        "ace.trace_tool_calls": len(view.tool_calls),
        "ace.trace_failed_tool_results": len(view.errors) + len(view.orphan_errors),
        "ace.skills_in_context_count": in_context_count,
    }


def _str_or_none(value: object) -> str | None:
    return None if value is None else str(value)
