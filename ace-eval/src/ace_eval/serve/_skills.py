"""`GET /v1/skills?query=...&max_tokens=...`: what `SkillInstructions` gives an agent for that prompt, from the
store's current version (followed as it moves: a publish or a rollback shows at the next request), as JSON."""

from __future__ import annotations

import threading
from pathlib import Path
from urllib.parse import parse_qs

from ace.embeddings.base import Embedder
from ace.exceptions import UserError
from ace.integrations.pydantic_ai import SkillInstructions
from ace.integrations.store_format import CurrentSkillbook, read_current

__all__ = ["SkillQueryError", "SkillsSelector", "parse_skill_query"]

DEFAULT_MAX_TOKENS = 500


class SkillQueryError(UserError, ValueError):
    """A query string without a query, or with a budget that is not a positive integer (400)."""


def parse_skill_query(query_string: str) -> tuple[str, int]:
    """`query` and `max_tokens` (default 500) from the request's query string."""
    params = parse_qs(query_string, keep_blank_values=True)
    query = (params.get("query") or [""])[-1]
    if not query.strip():
        raise SkillQueryError("send the agent's prompt as ?query=... (URL-encoded)")
    raw = (params.get("max_tokens") or [str(DEFAULT_MAX_TOKENS)])[-1]
    if not raw.isdigit() or int(raw) < 1:
        raise SkillQueryError(f"max_tokens must be a positive integer, got {raw[:20]!r}")
    return query, int(raw)


class SkillsSelector:
    """The skills of the store's current version selected for a query, within a token budget. Thread-safe."""

    def __init__(self, root: Path, *, embedder: Embedder | None = None) -> None:
        self.root = root
        self.embedder = embedder
        self._lock = threading.Lock()
        self._current: CurrentSkillbook | None = None

    def select(self, query: str, max_tokens: int) -> dict[str, object] | None:
        """`{"version", "instructions", "skills": [...]}`, or `None` before the first version."""
        if read_current(self.root) is None:
            return None
        with self._lock:  # one retrieval at a time: the skillbook's search index is built once and shared
            if self._current is None:
                self._current = CurrentSkillbook(self.root)
            book = self._current.get()
            chosen = SkillInstructions(book, max_tokens=max_tokens, embedder=self.embedder)
            text = chosen.for_prompt(query)
            version = self._current.version
        by_id = {skill.id: skill for skill in book.skills()}
        skills = [by_id[i] for i in chosen.last_skill_ids]
        return {
            "version": version,
            "query": query,
            "max_tokens": max_tokens,
            "instructions": text,
            "skills": [
                {"id": s.id, "section": s.section, "issue": s.issue, "insight": s.insight, "keywords": s.keywords}
                for s in skills
            ],
        }
