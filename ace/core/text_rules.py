"""What may go into a skill's text and id: length caps, forbidden characters, the id format.

Skill text reaches every agent's prompt, so it is plain prose: no control characters (newline and tab are fine in
`issue` / `insight`), no NUL, no bidirectional overrides or isolates that make text display otherwise than it reads.
"""

from __future__ import annotations

import re
import unicodedata

from ace.exceptions import SkillbookError

__all__ = [
    "DEFAULT_MAX_TEXT_CHARS",
    "check_text",
    "skill_id_number",
    "validate_skill_id",
]

DEFAULT_MAX_TEXT_CHARS = 2_000
"""Default cap on the length of a skill's `issue` and of its `insight`."""

_SECTIONS = frozenset({"context", "harness"})
# C0 and C1 controls except tab and newline, the Arabic letter mark, LRM / RLM, the line and paragraph separators,
# the bidi embeddings / overrides (U+202A-202E) and isolates (U+2066-2069), the BOM, and lone surrogates.
_FORBIDDEN_PROSE = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069\ufeff\ud800-\udfff]"
)
_FORBIDDEN_LABEL = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069\ufeff\ud800-\udfff]")


def check_text(field: str, text: str, *, max_chars: int | None = None, prose: bool = True) -> str:
    """Return `text` if it is at most `max_chars` long and holds no forbidden character; raise naming the fix.

    `prose=False` (keywords) also refuses newline and tab.
    """
    if max_chars is not None and len(text) > max_chars:
        raise SkillbookError(
            f"{field} is {len(text):,} characters, over the limit of {max_chars:,}: say it in fewer words (one "
            f"problem and where it applies; one imperative action), or split it into several skills"
        )
    if text.isprintable():  # the common case, decided in C: nothing below can match
        return text
    bad = (_FORBIDDEN_PROSE if prose else _FORBIDDEN_LABEL).search(text)
    if bad is not None:
        char = bad.group()
        name = unicodedata.name(char, "control character")
        allowed = "newlines and tabs are fine" if prose else "use letters, digits and underscores"
        raise SkillbookError(
            f"{field} contains U+{ord(char):04X} ({name}) at character {bad.start()}: control, NUL and "
            f"bidirectional-override characters are not allowed; write plain text ({allowed})"
        )
    return text


def validate_skill_id(skill_id: object, section: str) -> str:
    """Return `skill_id` if it is `<section>-NNNNN` (at least five digits, the skill's own section as prefix)."""
    if not isinstance(skill_id, str):
        raise SkillbookError(f"skill id must be a string, got {type(skill_id).__name__}")
    parsed = skill_id_number(skill_id)
    if parsed is None or parsed[0] != section:
        raise SkillbookError(
            f"skill id {skill_id!r} is not a valid id for a {section} skill: ids are '{section}-' and at least five "
            f"digits (e.g. '{section}-00001'), assigned by the skillbook. Give the skill such an id in the file "
            "(one not used by another skill, and the same in operations and dedup_keep_pairs), or re-create it "
            "with add_skill"
        )
    return skill_id


def skill_id_number(skill_id: str) -> tuple[str, int] | None:
    """`("context", 12)` for `context-00012`; `None` for anything that is not a skill id (a section, a dash, at
    least five ASCII digits)."""
    section, dash, digits = skill_id.partition("-")
    if section in _SECTIONS and dash and len(digits) >= 5 and digits.isascii() and digits.isdigit():
        return section, int(digits)
    return None
