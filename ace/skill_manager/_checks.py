"""The session's own rules for a call's arguments, checked before the skillbook's: keyword count, text length, no-op."""

from __future__ import annotations

from pydantic_ai import ModelRetry

from ace.core.skill import normalize_keywords, validate_insight, validate_issue
from ace.core.skillbook import Skillbook
from ace.core.text_rules import check_text
from ace.skill_manager.deps import SMSettings

__all__ = ["check_keyword_count", "check_lengths", "refuse_no_op"]


def check_keyword_count(keywords: list[str], settings: SMSettings) -> None:
    """Refuse more keywords than the session allows (a `ModelRetry`)."""
    if len(normalize_keywords(keywords)) > settings.max_keywords:
        raise ModelRetry(
            f"too many keywords ({len(keywords)}): pass at most {settings.max_keywords} short stable labels "
            "(domain, subsystem, API family, behaviour); put detail in issue"
        )


def check_lengths(settings: SMSettings, issue: str, insight: str | None) -> None:
    """Refuse an issue or insight over the session's cap (a `SkillbookError`, sent back as a retry)."""
    check_text("issue", issue.strip(), max_chars=settings.max_text_chars)
    if insight is not None:
        check_text("insight", insight.strip(), max_chars=settings.max_text_chars)


def refuse_no_op(book: Skillbook, skill_id: str, issue: str, keywords: list[str] | None, insight: str | None) -> None:
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
