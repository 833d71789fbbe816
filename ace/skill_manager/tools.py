"""The skill manager's atomic tools: add, update, tag, remove (soft), search and read skills.

Each tool takes `RunContext[SMDeps]` first; its docstring is the description the model reads. A call the
skillbook refuses (unknown id, context skill without insight, empty issue or keywords, bad delta, removed
skill) is turned into `ModelRetry` with the reason, so the model retries and the skillbook is untouched.
Every mutation records a per-operation `InsightSource` derived from `SMDeps.current_source`. Every call is
one span named after the tool, with `ace.*` attributes (no skill text unless `record_content`).

Sessions sharing one skillbook check each other's edits (`_conflicts`): a collision returns a
`ConflictResult` with the skills' current text instead of a retry.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Awaitable, Callable
from typing import Annotated, Literal, ParamSpec, TypeVar

from pydantic import BeforeValidator, Field
from pydantic_ai import ModelRetry, RunContext, Tool
from pydantic_ai.tools import ToolDefinition

from ace.core.skill import Skill, SkillSummary, skill_summary
from ace.llm import DECODE_REQUIRED, TEXT_HINT, Label, Prose
from ace.observability import AttributeInput
from ace.retrieval.top_k import retrieve_top_k
from ace.skill_manager._calls import applied, content, tool_call
from ace.skill_manager._checks import check_keyword_count, check_lengths, refuse_no_op
from ace.skill_manager._conflicts import conflict, find_stale, stale_conflict, unseen_similar
from ace.skill_manager.deps import (
    AddSkillResult,
    ConflictResult,
    OccurrenceView,
    OkResult,
    SkillDetail,
    SMDeps,
)

__all__ = [
    "SKILL_ID_CHOICES",
    "SM_TOOLS",
    "Delta",
    "add_skill",
    "read_skill",
    "remove_skill",
    "search_skills",
    "tag_skill",
    "update_skill",
]

P = ParamSpec("P")
R = TypeVar("R")
_TAG_LABELS = {1: "helpful", -1: "harmful", 0: "neutral"}
_OCCURRENCES_SHOWN = 5
SKILL_ID_CHOICES = 32
"""Up to this many active skills, a tool's `skill_id` is offered as an enum of their ids: a model that decodes under
the schema (the embedded model, a provider's strict tool mode) then cannot invent an id, and others see the choice."""


# ------------------------------------------------------------------------------------------ mutations
def add_skill(
    ctx: RunContext[SMDeps],
    section: Literal["context", "harness"],
    issue: Prose,
    keywords: Annotated[list[Label], Field(json_schema_extra={"minItems": 1})],
    insight: Annotated[str | None, Field(json_schema_extra={DECODE_REQUIRED: True, TEXT_HINT: "prose"})] = None,
) -> AddSkillResult | ConflictResult:
    """Add a new skill. Always call search_skills first; if a similar issue exists, call update_skill instead.

    Args:
        section: 'context': guidance the agent must follow (needs insight); 'harness': a problem of its runtime.
        issue: The problem and where it applies, in prose; start narrow (one domain, API or endpoint).
        keywords: 1-5 short stable labels (domain, subsystem, API family, behaviour), e.g. ['airline', 'refunds'].
        insight: The imperative action the agent should take; required for context, optional for harness.
    """
    deps = ctx.deps
    attrs: dict[str, AttributeInput] = {
        "ace.section": section,
        "ace.keywords_count": len(keywords),
        "ace.has_insight": insight is not None,
    }
    with tool_call(deps, "add_skill", attrs, content(issue=issue, insight=insight, keywords=keywords)) as span:
        check_keyword_count(keywords, deps.settings)
        check_lengths(deps.settings, issue, insight)
        source = deps.current_source.derive("ADD", learning_text=insight or issue)
        book = deps.skillbook
        while True:
            position = book.operations_count
            similar = unseen_similar(deps, issue, keywords, insight)  # searches: outside the lock
            if similar:
                return conflict(
                    deps,
                    span,
                    "add_skill",
                    "add_skill was not applied: while you worked, another session added or rewrote these skills, "
                    "which a search for your new skill finds. If one covers this lesson, widen it with update_skill; "
                    "if none does, call add_skill again.",
                    similar,
                )
            with book.locked():
                if book.operations_count != position:
                    continue  # another session changed the skillbook meanwhile: check again
                skill = book.add_skill(section, issue, keywords, insight, insight_source=source)
                break
        applied(deps, span, "add_skill", "ADD", skill)
        return {"ok": True, "skill_id": skill.id}


def update_skill(
    ctx: RunContext[SMDeps],
    skill_id: str,
    issue: Prose,
    keywords: list[Label] | None = None,
    insight: Annotated[str | None, Field(json_schema_extra={TEXT_HINT: "prose"})] = None,
) -> OkResult | ConflictResult:
    """Rewrite an existing skill: widen its issue to cover a new context, refine its insight, or fix its keywords.

    Args:
        skill_id: The id of the skill to rewrite, e.g. 'context-00003'.
        issue: The complete new issue (replaces the old one); when widening, cover every context it applies to.
        keywords: The complete new list (keep useful labels, add new ones, drop stale ones); omit to keep them.
        insight: The complete new imperative action; omit to keep the current one.
    """
    deps = ctx.deps
    attrs: dict[str, AttributeInput] = {
        "ace.skill_id": skill_id,
        "ace.keywords_count": None if keywords is None else len(keywords),
        "ace.insight_changed": insight is not None,
    }
    with tool_call(deps, "update_skill", attrs, content(issue=issue, insight=insight, keywords=keywords)) as span:
        if keywords is not None:
            check_keyword_count(keywords, deps.settings)
        check_lengths(deps.settings, issue, insight)
        source = deps.current_source.derive("UPDATE", learning_text=insight or issue)
        with deps.skillbook.locked():
            stale = find_stale(deps, skill_id)
            if stale is not None:
                return stale_conflict(deps, span, "update_skill", stale)
            refuse_no_op(deps.skillbook, skill_id, issue, keywords, insight)
            skill = deps.skillbook.update_skill(skill_id, issue, keywords, insight, insight_source=source)
        span.set_attribute("ace.section", skill.section)
        applied(deps, span, "update_skill", "UPDATE", skill)
        return {"ok": True}


def _strict_delta(value: object) -> object:
    """Refuse `true`, `1.0` or `"1"` for a delta before pydantic's lax mode turns them into 1."""
    if type(value) is not int:
        raise ValueError(f"delta must be the integer -1, 0 or 1, got {value!r} ({type(value).__name__})")
    return value


Delta = Annotated[Literal[-1, 0, 1], BeforeValidator(_strict_delta)]


def tag_skill(ctx: RunContext[SMDeps], skill_id: str, delta: Delta) -> OkResult:
    """Record how a skill the agent used worked out in this trace.

    Args:
        skill_id: The id of the skill the agent used, e.g. 'context-00003'.
        delta: 1 if following it helped, -1 if it hurt, 0 if it made no difference.
    """
    deps = ctx.deps
    attrs: dict[str, AttributeInput] = {"ace.skill_id": skill_id, "ace.delta": delta}
    with tool_call(deps, "tag_skill", attrs, {}) as span:
        source = deps.current_source.derive("TAG", learning_text=f"tagged {_TAG_LABELS.get(delta, str(delta))}")
        skill = deps.skillbook.tag_skill(skill_id, delta, insight_source=source)
        span.set_attribute("ace.section", skill.section)
        applied(deps, span, "tag_skill", "TAG", skill)
        return {"ok": True}


def remove_skill(ctx: RunContext[SMDeps], skill_id: str, reason: Prose) -> OkResult | ConflictResult:
    """Deactivate a harmful or outdated skill (soft delete: its history is kept, it leaves the active skills).

    Args:
        skill_id: The id of the skill to remove, e.g. 'context-00003'.
        reason: Why it is harmful or outdated, in one sentence.
    """
    deps = ctx.deps
    attrs: dict[str, AttributeInput] = {"ace.skill_id": skill_id}
    with tool_call(deps, "remove_skill", attrs, content(reason=reason)) as span:
        source = deps.current_source.derive("REMOVE", learning_text=reason)
        with deps.skillbook.locked():
            stale = find_stale(deps, skill_id)
            if stale is not None:
                return stale_conflict(deps, span, "remove_skill", stale)
            skill = deps.skillbook.remove_skill(skill_id, reason, insight_source=source)
        span.set_attribute("ace.section", skill.section)
        applied(deps, span, "remove_skill", "REMOVE", skill)
        return {"ok": True}


# -------------------------------------------------------------------------------------------- reading
def search_skills(
    ctx: RunContext[SMDeps],
    query: str,
    top_k: int = 5,
    section: Literal["context", "harness"] | None = None,
    keywords: list[str] | None = None,
) -> list[SkillSummary]:
    """Find active skills whose issue, insight or keywords match a query, best first.

    Args:
        query: What to look for: the problem, the action, or the domain and API involved.
        top_k: How many skills to return (1-20).
        section: Only skills of this section ('context' or 'harness'); omit to search both.
        keywords: Prefer skills carrying these labels; omit to search all.
    """
    deps = ctx.deps
    attrs: dict[str, AttributeInput] = {
        "ace.top_k": top_k,
        "ace.section": section,
        "ace.keywords_count": None if keywords is None else len(keywords),
    }
    with tool_call(deps, "search_skills", attrs, content(query=query, keywords=keywords)) as span:
        if not query.strip():
            raise ModelRetry("query must be non-empty: describe the problem, action or domain to look for")
        if not 1 <= top_k <= deps.settings.max_top_k:
            raise ModelRetry(f"top_k must be between 1 and {deps.settings.max_top_k}, got {top_k}")
        deps.begin()
        position = deps.skillbook.operations_count
        found = retrieve_top_k(
            deps.skillbook,
            query,
            top_k=top_k,
            section=section,
            keywords=keywords or None,
            embedder=deps.embedder,
        )
        results = [skill_summary(s) for s in found if s.visible]
        deps.saw(found)
        deps.searched_at = position
        span.set_attribute("ace.results_count", len(results))
        span.set_attribute("ace.result_ids", [s["id"] for s in results])
        span.set_attribute("ace.result", "ok")
        return results


def read_skill(ctx: RunContext[SMDeps], skill_id: str) -> SkillDetail:
    """Read one skill in full: text, keywords, counters, whether it is active, and its latest history.

    Args:
        skill_id: The id of the skill, e.g. 'context-00003'.
    """
    deps = ctx.deps
    with tool_call(deps, "read_skill", {"ace.skill_id": skill_id}, {}) as span:
        skill = deps.skillbook.require_skill(skill_id)
        deps.saw([skill])
        span.set_attribute("ace.section", skill.section)
        span.set_attribute("ace.active", skill.active)
        span.set_attribute("ace.result", "ok")
        return _detail(skill)


async def _while_budget_left(ctx: RunContext[SMDeps], tool: ToolDefinition) -> ToolDefinition | None:
    """Withdraw every tool on the session's last request and once its tool calls are spent, so that the model ends
    the session with its summary instead of being stopped by the budget (its edits stand either way)."""
    budget = ctx.deps.settings.budget
    usage = ctx.usage
    if budget.request_limit >= 2 and usage.requests >= budget.request_limit - 1:
        return None
    if budget.tool_calls_limit is not None and usage.tool_calls >= budget.tool_calls_limit:
        return None
    return tool


async def _when_skills_exist(ctx: RunContext[SMDeps], tool: ToolDefinition) -> ToolDefinition | None:
    """Offer a tool that needs an existing skill only once the skillbook has an active one, with the active ids as
    the choices of its `skill_id` while there are at most `SKILL_ID_CHOICES` (`SMDeps.skill_id_choices`).

    On an empty skillbook those calls can only fail (a small model otherwise spends its session guessing ids). The
    enum only shapes the schema: a call with another id still reaches the tool and is refused with a "did you mean".
    """
    if await _while_budget_left(ctx, tool) is None:
        return None
    deps = ctx.deps
    book = deps.skillbook
    count = book.active_count
    if not count:
        return None
    if deps.skill_id_choices is None:
        choices = tuple(sorted(s.id for s in book.skills())) if count <= SKILL_ID_CHOICES else ()
        if count <= SKILL_ID_CHOICES and not choices:
            return None  # every active skill is quarantined: none to name
        deps.skill_id_choices = choices
    properties = tool.parameters_json_schema.get("properties", {})
    if not deps.skill_id_choices or "skill_id" not in properties:
        return tool
    skill_id = {**properties["skill_id"], "enum": list(deps.skill_id_choices)}
    schema = {**tool.parameters_json_schema, "properties": {**properties, "skill_id": skill_id}}
    return dataclasses.replace(tool, parameters_json_schema=schema)


def _inline(function: Callable[P, R]) -> Callable[P, Awaitable[R]]:
    """The tool as a coroutine function, so pydantic-ai runs it on the event loop instead of a worker thread.

    The tools are short and never wait (a search is ~0.3 ms at 5,000 skills); the thread hop of a plain `def`
    tool cost more than the tool itself (~1.4 ms per session, `benchmarks/pipeline_overhead.py`). The skillbook's
    lock still guards them against sessions on other threads.
    """

    @functools.wraps(function)
    async def tool(*args: P.args, **kwargs: P.kwargs) -> R:
        return function(*args, **kwargs)

    return tool


# Mutations are barriers (`sequential`): several calls in one model response then apply in the order the model
# wrote them, so the audit log is the same on every run.
SM_TOOLS: tuple[Tool[SMDeps], ...] = (
    Tool(_inline(add_skill), prepare=_while_budget_left, sequential=True),
    Tool(_inline(update_skill), prepare=_when_skills_exist, sequential=True),
    Tool(_inline(tag_skill), prepare=_when_skills_exist, sequential=True),
    Tool(_inline(remove_skill), prepare=_when_skills_exist, sequential=True),
    Tool(_inline(search_skills), prepare=_while_budget_left),
    Tool(_inline(read_skill), prepare=_when_skills_exist),
)
"""The skill manager's whole tool surface; `purge` is deliberately not a tool. While the skillbook has no active
skill only `search_skills` and `add_skill` are offered; on the session's last request, none."""


# -------------------------------------------------------------------------------------------- helpers
def _detail(skill: Skill) -> SkillDetail:
    return SkillDetail(
        **skill_summary(skill),
        used=skill.used_count,
        active=skill.active,
        removal_reason=skill.removal_reason,
        quarantine_reason=skill.quarantine.reason if skill.quarantine is not None else None,
        occurrences_count=len(skill.occurrences),
        occurrences=[
            OccurrenceView(
                trace_uid=o.trace_uid,
                source_system=o.source_system,
                epoch=o.epoch,
                operation_type=o.operation_type,
                timestamp=o.timestamp,
            )
            for o in skill.occurrences[-_OCCURRENCES_SHOWN:]
        ],
    )
