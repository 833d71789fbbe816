"""Degenerate skills: text that passes the skillbook's rules but teaches nothing (`ace-eval verify` warns).

A small model can write a skill whose issue, insight and keyword are all `"15.0"`: non-empty, so the
skillbook accepts it, yet no agent can act on it. These checks name such skills: issue equal to insight,
text of numbers and punctuation only, an issue or insight under `min_words` words, keywords that are numbers
only.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from ace.core.skill import Skill
from ace_eval.text import tone

__all__ = ["DEFAULT_MIN_WORDS", "SkillWarning", "degenerate_reasons", "degenerate_skills"]

DEFAULT_MIN_WORDS = 3
"""An issue or insight with fewer words (tokens holding a letter) is too short to act on."""
_LETTER = re.compile(r"[^\W\d_]")
_SHOWN_CHARS = 40


@dataclass(frozen=True, kw_only=True)
class SkillWarning:
    """One degenerate skill and every reason it is one."""

    skill_id: str
    reasons: tuple[str, ...]

    def line(self) -> str:
        return f"{tone('WARN', 'warn')}  {self.skill_id} is degenerate: {'; '.join(self.reasons)}"


def _words(text: str) -> int:
    return sum(1 for token in text.split() if _LETTER.search(token))


def _normalised(text: str) -> str:
    return " ".join(text.lower().split()).strip(" .!?;:")


def _shown(text: str) -> str:
    flat = " ".join(text.split())
    return repr(flat if len(flat) <= _SHOWN_CHARS else flat[: _SHOWN_CHARS - 3] + "...")


def degenerate_reasons(skill: Skill, *, min_words: int = DEFAULT_MIN_WORDS) -> list[str]:
    """Why `skill` teaches nothing (empty when it looks usable)."""
    if min_words < 1:
        raise ValueError(f"min_words must be at least 1, got {min_words}")
    reasons: list[str] = []
    insight = (skill.insight or "").strip()
    fields = [("issue", skill.issue.strip())] + ([("insight", insight)] if insight else [])
    if insight and _normalised(insight) == _normalised(skill.issue):
        reasons.append("issue and insight are the same text")
    for name, text in fields:
        if not _LETTER.search(text):
            reasons.append(f"{name} is numbers and punctuation only ({_shown(text)})")
        elif _words(text) < min_words:
            reasons.append(f"{name} has under {min_words} words ({_shown(text)})")
    numeric = [k for k in skill.keywords if not _LETTER.search(k)]
    if numeric:
        every = "every keyword is" if len(numeric) == len(skill.keywords) else "keywords are"
        reasons.append(f"{every} numbers only ({', '.join(numeric)})")
    return reasons


def degenerate_skills(skills: Iterable[Skill], *, min_words: int = DEFAULT_MIN_WORDS) -> list[SkillWarning]:
    """A warning per active skill that is degenerate, in the order given."""
    warnings: list[SkillWarning] = []
    for skill in skills:
        if not skill.active:
            continue
        reasons = degenerate_reasons(skill, min_words=min_words)
        if reasons:
            warnings.append(SkillWarning(skill_id=skill.id, reasons=tuple(reasons)))
    return warnings
