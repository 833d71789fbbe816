"""Skills for one prompt within a token budget: hybrid search, then effectiveness, then the budget.

`retrieve_within_budget` takes the best `candidates` skills of `retrieve_top_k` for the query, drops those the
evidence says hurt more than they help (`harmful_count > helpful_count`), and keeps them in relevance order
while their rendered text fits `max_tokens`; a skill too long for what is left is skipped, not cut.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from ace.core.skill import Skill
from ace.core.skillbook import Skillbook
from ace.embeddings.base import Embedder
from ace.exceptions import SkillbookError
from ace.retrieval.top_k import retrieve_top_k

__all__ = ["CHARS_PER_TOKEN", "approx_tokens", "render_skill", "render_skill_list", "retrieve_within_budget"]

CHARS_PER_TOKEN = 4
"""The estimate `approx_tokens` uses (English text and JSON average about four characters a token)."""


def approx_tokens(text: str) -> int:
    """A tokenizer-free estimate of `text`'s tokens, rounded up."""
    return -(-len(text) // CHARS_PER_TOKEN)


def render_skill(skill: Skill) -> str:
    """One skill in `Skillbook.as_prompt()`'s format: id, keywords, issue, insight."""
    lines = [f"- [{skill.id}]", f"Keywords: {', '.join(skill.keywords)}", f"Issue: {skill.issue}"]
    if skill.insight:
        lines.append(f"Insight: {skill.insight}")
    return "\n".join(lines)


def render_skill_list(skills: Sequence[Skill]) -> str:
    """Skills rendered one after the other, in the given order."""
    return "\n".join(render_skill(s) for s in skills)


def retrieve_within_budget(
    skillbook: Skillbook,
    query: str,
    *,
    max_tokens: int,
    candidates: int = 20,
    embedder: Embedder | None = None,
    count_tokens: Callable[[str], int] = approx_tokens,
) -> list[Skill]:
    """The most relevant helpful skills for `query` whose rendering (`render_skill_list`) fits `max_tokens`.

    Raises `SkillbookError` for a budget below 1 and, like `retrieve_top_k`, for an empty query.
    """
    if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1:
        raise SkillbookError(f"max_tokens must be a positive integer, got {max_tokens!r}")
    if len(skillbook) == 0:
        return []
    found = retrieve_top_k(skillbook, query, top_k=candidates, embedder=embedder)
    chosen: list[Skill] = []
    used = 0
    for skill in found:
        if skill.harmful_count > skill.helpful_count:
            continue
        cost = count_tokens(render_skill(skill)) + (1 if chosen else 0)  # the newline between two skills
        if used + cost <= max_tokens:
            chosen.append(skill)
            used += cost
    return chosen
