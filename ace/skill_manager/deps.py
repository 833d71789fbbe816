"""What the skill manager's tools read and return: the session's settings and deps, and the tools' result types.

`SMDeps` carries the skillbook, the provenance of the session, search and `SMSettings`; it also records what the
session applied and refused, and the version of every skill it was shown (the optimistic-concurrency checks in
`ace.skill_manager.tools` read it).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Literal

from typing_extensions import TypedDict

from ace.agents.recursive import SessionBudget
from ace.core.insight_source import InsightSource, OperationType
from ace.core.skill import Skill, SkillSummary
from ace.core.skillbook import Skillbook
from ace.core.text_rules import DEFAULT_MAX_TEXT_CHARS
from ace.embeddings.base import Embedder

__all__ = [
    "AddSkillResult",
    "AppliedOperation",
    "ConflictResult",
    "OccurrenceView",
    "OkResult",
    "Refusal",
    "SMDeps",
    "SMSettings",
    "SkillDetail",
    "ToolName",
]

ToolName = Literal["add_skill", "update_skill", "tag_skill", "remove_skill", "search_skills", "read_skill"]


@dataclass(frozen=True, kw_only=True)
class SMSettings:
    """How a skill-manager session runs: budgets, retries, limits of the tools, and content recording."""

    budget: SessionBudget = field(default_factory=lambda: SessionBudget(request_limit=20, tool_calls_limit=30))
    """Request / tool-call / token limits and the history-compaction threshold of one session."""
    tool_retries: int = 3
    """How often the model may retry one refused tool before the session stops."""
    context_top_k: int = 5
    """Existing skills retrieved for the reflections and shown in the prompt (0: none)."""
    show_trace: bool = True
    """Show the trace's id and task in the session prompt; `False` for a small model, which copies them into the
    skill (the provenance of every edit is recorded either way)."""
    max_keywords: int = 5
    """Most keywords a skill may carry."""
    max_top_k: int = 20
    """Largest `top_k` a `search_skills` call may ask for."""
    max_text_chars: int = DEFAULT_MAX_TEXT_CHARS
    """Longest `issue`, and longest `insight`, a call may write (the skillbook's own cap applies too)."""
    record_content: bool = False
    """Put prompts and skill text on spans (the user opted in)."""


@dataclass(frozen=True, kw_only=True)
class AppliedOperation:
    """One mutation a session applied to the skillbook."""

    tool: ToolName
    operation_type: OperationType
    skill_id: str


@dataclass(frozen=True, kw_only=True)
class Refusal:
    """One tool call sent back to the model for a retry."""

    tool: ToolName
    reason: str


@dataclass(kw_only=True)
class SMDeps:
    """What every skill-manager tool reads: the skillbook, the provenance of this session, search, settings."""

    skillbook: Skillbook
    current_source: InsightSource
    """The trace / epoch / reflection this session learns from; each mutation derives its own entry from it."""
    embedder: Embedder | None = None
    """Dense half of `search_skills`; `None` keeps the skillbook index's embedder (or the offline default)."""
    settings: SMSettings = field(default_factory=SMSettings)
    applied: list[AppliedOperation] = field(default_factory=list[AppliedOperation])
    """Mutations applied so far in this session, in order."""
    refusals: list[Refusal] = field(default_factory=list[Refusal])
    """Calls refused so far in this session, in order."""
    seen: dict[str, Skill] = field(default_factory=dict[str, Skill])
    """The version of each skill this session was last shown (prompt, search, read, its own edits)."""
    started_at: int | None = None
    """Audit-log length when the session started (`None`: when the first tool runs)."""
    searched_at: int | None = None
    """Audit-log length at this session's last search (`None`: at its start); skills other sessions added or
    rewrote after it are what the model has not seen."""
    skill_id_choices: tuple[str, ...] | None = None
    """The ids offered as the enum of `skill_id`, fixed when the tools that take one are first offered (empty: too
    many skills for an enum). Fixed per session, so the tool definitions, and a prompt cache over them, stay the
    same from step to step."""

    def saw(self, skills: Iterable[Skill]) -> None:
        """Remember the versions of skills shown to the model."""
        for skill in skills:
            self.seen[skill.id] = skill

    def begin(self) -> None:
        """Mark the session's start (the skillbook version its prompt reflects)."""
        if self.started_at is None:
            self.started_at = self.searched_at = self.skillbook.operations_count


class AddSkillResult(TypedDict):
    ok: bool
    skill_id: str


class OkResult(TypedDict):
    ok: bool


class ConflictResult(TypedDict):
    """A call not applied because another session changed what it relied on; `skills` shows their current text."""

    ok: bool
    conflict: str
    skills: list[SkillSummary]


class OccurrenceView(TypedDict):
    trace_uid: str
    source_system: str
    epoch: int | None
    operation_type: str | None
    timestamp: str


class SkillDetail(SkillSummary):
    used: int
    active: bool
    removal_reason: str | None
    quarantine_reason: str | None
    """Why the skill is quarantined (out of every prompt and search), or `None`."""
    occurrences_count: int
    occurrences: list[OccurrenceView]
    """The latest few entries of the audit chain."""
