"""The skill manager's atomic tools: add, update, tag, remove (soft), search and read skills.

Each tool takes `RunContext[SMDeps]` first; its docstring is the description the model reads. A call the
skillbook refuses (unknown id, context skill without insight, empty issue or keywords, bad delta, removed
skill) is turned into `ModelRetry` with the reason, so the model retries and the skillbook is untouched.
Every mutation records a per-operation `InsightSource` derived from `SMDeps.current_source`. Every call is
one span named after the tool, with `ace.*` attributes (no skill text unless `record_content`).

Optimistic concurrency: sessions may run concurrently on one skillbook (`TrainingConfig(sm_sessions=
"concurrent")`). Each session remembers the version of every skill it was shown (`SMDeps.seen`). An edit of a
skill whose text another session changed since is not applied and returns the current text (no lost update), and
an `add_skill` is not applied when a skill that another session added or rewrote since this session's last search
ranks among the new skill's own search results (no near-duplicate by a race). Such a call returns a
`ConflictResult` (`ok: false`, the reason, the skills' current text) rather than a retry: a collision is not the
model's mistake and must not use up its retries. It costs one more model call, only when sessions really collide;
in a session that runs alone the checks never fire.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Annotated, Literal, ParamSpec, TypeVar

from opentelemetry.trace import Span
from pydantic import BeforeValidator, Field
from pydantic_ai import ModelRetry, RunContext, Tool
from pydantic_ai.tools import ToolDefinition
from typing_extensions import TypedDict

from ace.agents.recursive import SessionBudget
from ace.core.insight_source import InsightSource, OperationType
from ace.core.skill import (
    Skill,
    SkillSummary,
    normalize_keywords,
    skill_summary,
    validate_insight,
    validate_issue,
)
from ace.core.skillbook import Skillbook
from ace.core.text_rules import DEFAULT_MAX_TEXT_CHARS, check_text
from ace.embeddings.base import Embedder
from ace.exceptions import SkillbookError
from ace.llm import DECODE_REQUIRED, TEXT_HINT, Label, Prose
from ace.observability import AttributeInput, ace_span
from ace.retrieval.top_k import retrieve_top_k

__all__ = [
    "SKILL_ID_CHOICES",
    "SM_TOOLS",
    "AddSkillResult",
    "AppliedOperation",
    "ConflictResult",
    "OkResult",
    "Refusal",
    "SMDeps",
    "SMSettings",
    "SkillDetail",
    "SkillSummary",
    "ToolName",
    "add_skill",
    "read_skill",
    "remove_skill",
    "search_skills",
    "tag_skill",
    "update_skill",
]

ToolName = Literal["add_skill", "update_skill", "tag_skill", "remove_skill", "search_skills", "read_skill"]
P = ParamSpec("P")
R = TypeVar("R")
_TAG_LABELS = {1: "helpful", -1: "harmful", 0: "neutral"}
_OCCURRENCES_SHOWN = 5
SKILL_ID_CHOICES = 32
"""Up to this many active skills, a tool's `skill_id` is offered as an enum of their ids: a model that decodes under
the schema (the embedded model, a provider's strict tool mode) then cannot invent an id, and others see the choice."""


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
    with _tool_call(deps, "add_skill", attrs, _content(issue=issue, insight=insight, keywords=keywords)) as span:
        _check_keyword_count(keywords, deps.settings)
        _check_lengths(deps.settings, issue, insight)
        source = deps.current_source.derive("ADD", learning_text=insight or issue)
        book = deps.skillbook
        while True:
            position = book.operations_count
            similar = _unseen_similar(deps, issue, keywords, insight)  # searches: outside the lock
            if similar:
                return _conflict(
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
        _applied(deps, span, "add_skill", "ADD", skill)
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
    with _tool_call(deps, "update_skill", attrs, _content(issue=issue, insight=insight, keywords=keywords)) as span:
        if keywords is not None:
            _check_keyword_count(keywords, deps.settings)
        _check_lengths(deps.settings, issue, insight)
        source = deps.current_source.derive("UPDATE", learning_text=insight or issue)
        with deps.skillbook.locked():
            stale = _stale(deps, skill_id)
            if stale is not None:
                return _stale_conflict(deps, span, "update_skill", stale)
            _refuse_no_op(deps.skillbook, skill_id, issue, keywords, insight)
            skill = deps.skillbook.update_skill(skill_id, issue, keywords, insight, insight_source=source)
        span.set_attribute("ace.section", skill.section)
        _applied(deps, span, "update_skill", "UPDATE", skill)
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
    with _tool_call(deps, "tag_skill", attrs, {}) as span:
        source = deps.current_source.derive("TAG", learning_text=f"tagged {_TAG_LABELS.get(delta, str(delta))}")
        skill = deps.skillbook.tag_skill(skill_id, delta, insight_source=source)
        span.set_attribute("ace.section", skill.section)
        _applied(deps, span, "tag_skill", "TAG", skill)
        return {"ok": True}


def remove_skill(ctx: RunContext[SMDeps], skill_id: str, reason: Prose) -> OkResult | ConflictResult:
    """Deactivate a harmful or outdated skill (soft delete: its history is kept, it leaves the active skills).

    Args:
        skill_id: The id of the skill to remove, e.g. 'context-00003'.
        reason: Why it is harmful or outdated, in one sentence.
    """
    deps = ctx.deps
    attrs: dict[str, AttributeInput] = {"ace.skill_id": skill_id}
    with _tool_call(deps, "remove_skill", attrs, _content(reason=reason)) as span:
        source = deps.current_source.derive("REMOVE", learning_text=reason)
        with deps.skillbook.locked():
            stale = _stale(deps, skill_id)
            if stale is not None:
                return _stale_conflict(deps, span, "remove_skill", stale)
            skill = deps.skillbook.remove_skill(skill_id, reason, insight_source=source)
        span.set_attribute("ace.section", skill.section)
        _applied(deps, span, "remove_skill", "REMOVE", skill)
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
    with _tool_call(deps, "search_skills", attrs, _content(query=query, keywords=keywords)) as span:
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
    with _tool_call(deps, "read_skill", {"ace.skill_id": skill_id}, {}) as span:
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
@contextmanager
def _tool_call(
    deps: SMDeps,
    tool: ToolName,
    attributes: Mapping[str, AttributeInput],
    content: Mapping[str, AttributeInput],
) -> Iterator[Span]:
    """The tool's span; a refused call (`SkillbookError` or `ModelRetry`) is logged and sent back as a retry."""
    attrs = {"ace.tool": tool, **attributes, **(content if deps.settings.record_content else {})}
    with ace_span(tool, attrs, expected=(ModelRetry,)) as span:
        try:
            yield span
        except SkillbookError as e:
            _refused(deps, span, tool, str(e))
            raise ModelRetry(str(e)) from None
        except ModelRetry as e:
            _refused(deps, span, tool, e.message)
            raise


def _refused(deps: SMDeps, span: Span, tool: ToolName, reason: str) -> None:
    deps.refusals.append(Refusal(tool=tool, reason=reason))
    span.set_attribute("ace.result", "refused")
    if deps.settings.record_content:
        span.set_attribute("ace.refusal", reason)


def _applied(deps: SMDeps, span: Span, tool: ToolName, op: OperationType, skill: Skill) -> None:
    deps.applied.append(AppliedOperation(tool=tool, operation_type=op, skill_id=skill.id))
    deps.saw([skill])
    span.set_attribute("ace.skill_id", skill.id)
    span.set_attribute("ace.result", "ok")


def _content(
    *,
    issue: str | None = None,
    insight: str | None = None,
    keywords: list[str] | None = None,
    reason: str | None = None,
    query: str | None = None,
) -> dict[str, AttributeInput]:
    """Attributes carrying the model's text, recorded only when the user opted in to content."""
    return {
        "ace.issue": issue,
        "ace.insight": insight,
        "ace.keywords": None if keywords is None else [str(k) for k in keywords],
        "ace.reason": reason,
        "ace.query": query,
    }


def _check_keyword_count(keywords: list[str], settings: SMSettings) -> None:
    if len(normalize_keywords(keywords)) > settings.max_keywords:
        raise ModelRetry(
            f"too many keywords ({len(keywords)}): pass at most {settings.max_keywords} short stable labels "
            "(domain, subsystem, API family, behaviour); put detail in issue"
        )


def _check_lengths(settings: SMSettings, issue: str, insight: str | None) -> None:
    """Refuse an issue or insight over the session's cap (a `SkillbookError`, sent back as a retry)."""
    check_text("issue", issue.strip(), max_chars=settings.max_text_chars)
    if insight is not None:
        check_text("insight", insight.strip(), max_chars=settings.max_text_chars)


def _refuse_no_op(book: Skillbook, skill_id: str, issue: str, keywords: list[str] | None, insight: str | None) -> None:
    """An update that would change nothing is refused: it would only add noise to the audit chain."""
    old = book.get_skill(skill_id)
    if old is None or not old.active:
        return  # the skillbook refuses these with the precise reason
    same_issue = validate_issue(issue) == old.issue
    same_keywords = keywords is None or normalize_keywords(keywords) == old.keywords
    same_insight = insight is None or validate_insight(old.section, insight) == old.insight
    if same_issue and same_keywords and same_insight:
        raise ModelRetry(
            f"update_skill({skill_id!r}) would change nothing: widen or refine the issue, insight or keywords, "
            "or use tag_skill to record that the skill helped"
        )


def _stale(deps: SMDeps, skill_id: str) -> Skill | None:
    """The current version of a skill another session rewrote since this session was shown it, else `None`.

    Caller holds the lock.
    """
    deps.begin()
    current = deps.skillbook.get_skill(skill_id)
    if current is None:
        return None  # the skillbook refuses unknown ids with the precise reason
    shown = deps.seen.get(skill_id)
    if shown is not None:
        return None if shown.same_text(current) else current
    # Never shown (an id from the reflection's tags): stale if another session rewrote it during this one.
    rewritten = any(
        op.skill_id == skill_id and op.type in ("UPDATE", "REMOVE")
        for op in deps.skillbook.operations_since(deps.started_at or 0)
    )
    return current if rewritten and not _own(deps, skill_id) else None


def _stale_conflict(deps: SMDeps, span: Span, tool: ToolName, current: Skill) -> ConflictResult:
    return _conflict(
        deps,
        span,
        tool,
        f"{tool} was not applied: another session rewrote {current.id} after you read it. Redo your edit on its "
        "current text (in skills), keeping what the other session added, or skip it if the skill already covers "
        "your lesson.",
        [current],
    )


def _conflict(deps: SMDeps, span: Span, tool: ToolName, message: str, skills: list[Skill]) -> ConflictResult:
    """Report a collision with another session as the call's result (it is not the model's mistake, so it costs
    no retry); the skills shown count as seen."""
    deps.saw(skills)
    deps.refusals.append(Refusal(tool=tool, reason=message))
    span.set_attribute("ace.result", "conflict")
    span.set_attribute("ace.conflict_ids", [s.id for s in skills])
    return {"ok": False, "conflict": message, "skills": [skill_summary(s) for s in skills]}


def _seen_current(deps: SMDeps, skill_id: str) -> bool:
    """Whether the model was already shown this skill's current text."""
    shown, current = deps.seen.get(skill_id), deps.skillbook.get_skill(skill_id)
    return shown is not None and current is not None and shown.same_text(current)


def _own(deps: SMDeps, skill_id: str) -> bool:
    return any(op.skill_id == skill_id for op in deps.applied)


def _unseen_similar(deps: SMDeps, issue: str, keywords: list[str], insight: str | None) -> list[Skill]:
    """Skills this session has not seen (another session added or rewrote them since its last search) that rank
    among the new skill's own search results: the model must judge them before adding."""
    deps.begin()
    unseen = {
        op.skill_id
        for op in deps.skillbook.operations_since(deps.searched_at or 0)
        if op.type in ("ADD", "UPDATE") and op.skill_id is not None and not _own(deps, op.skill_id)
    }
    unseen = {sid for sid in unseen if not _seen_current(deps, sid)}
    if not unseen:
        return []
    found = retrieve_top_k(
        deps.skillbook,
        f"{issue}\n{insight or ''}".strip(),
        top_k=max(deps.settings.context_top_k, 1),
        keywords=keywords or None,
        embedder=deps.embedder,
    )
    return [s for s in found if s.id in unseen and s.visible]


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
