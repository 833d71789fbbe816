"""Skill search for agents: `retrieve_top_k` (its results render with `ace.core.rendering.render_skills_xml`).

Search is hybrid, as the spec says: an optional section pre-filter, BM25 over issue + insight + keywords,
dense cosine over the skills' embeddings, and Reciprocal Rank Fusion (k=60, over each ranking's first
`RRF_WINDOW`), with the requested keywords as a third fused ranking (see `retrieve_top_k`). The index behind it
lives on the skillbook (`skillbook.caches`) and follows its mutations; it is never rebuilt per query.
"""

from __future__ import annotations

from collections.abc import Sequence

from ace.core.skill import Section, Skill, validate_section
from ace.core.skillbook import Skillbook
from ace.embeddings.base import Embedder
from ace.exceptions import SkillbookError
from ace.retrieval.fusion import RRF_K, RRF_WINDOW
from ace.retrieval.index import search_index

__all__ = ["RRF_K", "RRF_WINDOW", "retrieve_top_k", "search_index"]


def retrieve_top_k(
    skillbook: Skillbook,
    query: str,
    *,
    top_k: int = 5,
    section: Section | None = None,
    keywords: Sequence[str] | None = None,
    embedder: Embedder | None = None,
    exact: bool = False,
) -> list[Skill]:
    """The `top_k` visible skills (active, not quarantined) that best match `query`, best first.

    Ranking: `section` (when given) keeps only that section's skills. Every remaining visible skill is
    ranked by dense cosine between the query and `Skill.embedding_text()`, and the skills sharing at
    least one query word are ranked by BM25 (rank-bm25's Okapi formula and scores; lowercase word
    tokens, snake_case split, English function words dropped) over the same text; the two rankings are
    fused by Reciprocal Rank Fusion over a window, as search engines define it: each ranking gives
    `1/(60 + rank)` to its first `RRF_WINDOW` (100, or `top_k` when larger) skills only, and nothing to the
    others. Equal scores rank in skill creation order.
    `embedder=None` uses the embedder the skillbook's index already has, else the offline default
    (all-MiniLM-L6-v2 int8); an embedder of another model re-embeds every skill.

    `keywords` boost rather than filter: the skills sharing at least one of them (after the same
    normalisation as stored keywords) form a third fused ranking, ranked by how many they share (equal
    counts tie; not cut at the window). A keyword match is thus worth a first place in one ranking; it lifts
    labelled skills above comparable ones without hiding a near-duplicate whose author chose other labels,
    which the duplicate-avoidance rule (search before add) must still see. A label that normalises to nothing
    (or is too long to be a keyword) is ignored.

    `exact=True` returns this ranking computed in full (every cosine in float32, every list sorted, then cut at
    the window) at any size: the reference. The default is the same below 16,384 indexed skills or without the
    `ann` extra; from there it finds the dense ranking's first 100 by probing k-means lists of int8 codes of the
    vectors, not every row: approximate, its agreement with the reference is measured (`benchmarks/scale.py`,
    docs/performance.md). An index built with `ann_min` searches an HNSW graph instead (opt-in).

    Missing skill vectors are computed first, in batches, and cached on the skills (`set_embedding`).

    Raises:
        EmbeddingError: the query (or a skill without a cached vector) could not be embedded.
        SkillbookError: empty query, `top_k` below 1, or an unknown section.
    """
    if not isinstance(query, str) or not query.strip():
        raise SkillbookError("query must be non-empty text: describe the problem you are looking for")
    if isinstance(top_k, bool) or not isinstance(top_k, int) or top_k < 1:
        raise SkillbookError(f"top_k must be a positive integer, got {top_k!r}")
    sec = validate_section(section) if section is not None else None
    return search_index(skillbook, embedder).search(
        skillbook, query, top_k=top_k, section=sec, keywords=keywords, exact=exact
    )
