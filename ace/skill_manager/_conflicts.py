"""Optimistic concurrency between skill-manager sessions that share one skillbook.

Sessions may run concurrently (`TrainingConfig(sm_sessions="concurrent")`). Each session remembers the version of
every skill it was shown (`SMDeps.seen`). An edit of a skill whose text another session changed since is not applied
and returns the current text (no lost update), and an `add_skill` is not applied when a skill that another session
added or rewrote since this session's last search ranks among the new skill's own search results (no near-duplicate
by a race). Such a call returns a `ConflictResult` (`ok: false`, the reason, the skills' current text) rather than a
retry: a collision is not the model's mistake and must not use up its retries. It costs one more model call, only
when sessions really collide; in a session that runs alone the checks never fire.
"""

from __future__ import annotations

from opentelemetry.trace import Span

from ace.core.skill import Skill, skill_summary
from ace.retrieval.top_k import retrieve_top_k
from ace.skill_manager.deps import ConflictResult, Refusal, SMDeps, ToolName

__all__ = ["conflict", "find_stale", "stale_conflict", "unseen_similar"]


def find_stale(deps: SMDeps, skill_id: str) -> Skill | None:
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


def stale_conflict(deps: SMDeps, span: Span, tool: ToolName, current: Skill) -> ConflictResult:
    """The conflict of an edit of a skill another session rewrote (`find_stale`)."""
    return conflict(
        deps,
        span,
        tool,
        f"{tool} was not applied: another session rewrote {current.id} after you read it. Redo your edit on its "
        "current text (in skills), keeping what the other session added, or skip it if the skill already covers "
        "your lesson.",
        [current],
    )


def conflict(deps: SMDeps, span: Span, tool: ToolName, message: str, skills: list[Skill]) -> ConflictResult:
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


def unseen_similar(deps: SMDeps, issue: str, keywords: list[str], insight: str | None) -> list[Skill]:
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
