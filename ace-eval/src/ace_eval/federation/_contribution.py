"""What a project contributes on push: every skill's state (eligible ones with their text and provenance), redacted."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from ace.core.insight_source import utc_now
from ace.core.skill import Skill
from ace.core.skillbook import Skillbook
from ace.exceptions import SkillbookError
from ace.redaction import Redactor
from ace_eval.federation._hub import FederationError, Policy
from ace_eval.store import is_store, resolve_skillbook

__all__ = ["build_contribution", "content_hash", "linked_globals", "load_project_skillbook"]

_ID_KEYS = frozenset({"skill_id", "trace_ids", "content_hash", "linked", "project", "section", "state"})


def content_hash(section: str, issue: str, insight: str | None, keywords: list[str]) -> str:
    """The SHA-256 of what a skill says (section, issue, insight, keywords): equal text, equal hash."""
    text = "\x1f".join([section, issue, insight or "", ",".join(keywords)])
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def skill_hash(skill: Skill) -> str:
    return content_hash(skill.section, skill.issue, skill.insight, list(skill.keywords))


def linked_globals(skill: Skill, source_system: str) -> list[str]:
    """The global skill ids a pull linked to `skill` (its occurrences from the hub; trace id = global id)."""
    return sorted({o.trace_id for o in skill.occurrences if o.source_system == source_system})


def load_project_skillbook(path: Path) -> Skillbook:
    """The skillbook at `path` (a file, or a store's current version)."""
    if not path.exists():
        raise FederationError(f"{path}: no such skillbook or store; pass a skillbook.json or a store folder")
    try:
        return Skillbook.load_from_file(resolve_skillbook(path))
    except SkillbookError as e:
        raise FederationError(f"{path} does not read as a skillbook ({e}); nothing was pushed") from None


def _state(skill: Skill, policy: Policy) -> str:
    if not skill.active or skill.quarantine is not None or skill.harmful_count > skill.helpful_count:
        return "contradicting"
    if skill.helpful_count > skill.harmful_count and skill.helpful_count >= policy.min_helpful:
        return "eligible"
    return "neutral"


def build_contribution(
    book: Skillbook, *, project: str, source: Path, source_system: str, policy: Policy
) -> dict[str, Any]:
    """The project's contribution: one entry per skill; text only for eligible skills; ids kept, text redacted."""
    entries: list[dict[str, Any]] = []
    for skill in book.skills(include_inactive=True):
        state = _state(skill, policy)
        linked = linked_globals(skill, source_system)
        if state == "neutral" and not linked:
            continue
        entry: dict[str, Any] = {
            "skill_id": skill.id,
            "section": skill.section,
            "state": state,
            "content_hash": skill_hash(skill),
            "helpful": skill.helpful_count,
            "harmful": skill.harmful_count,
            "neutral": skill.neutral_count,
            "linked": linked,
            "trace_ids": sorted({o.trace_uid for o in skill.occurrences if o.source_system != source_system}),
        }
        if state == "eligible":
            entry.update(issue=skill.issue, insight=skill.insight, keywords=list(skill.keywords))
        entries.append(entry)
    raw = {"project": project, "source": "store" if is_store(source) else "skillbook", "skills": entries}
    redacted, _ = Redactor().redact_data(raw, skip_keys=_ID_KEYS)
    redacted["pushed_at"] = utc_now()
    return dict(redacted)
