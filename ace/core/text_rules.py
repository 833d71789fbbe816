"""What may go into a skill's text and id: length caps, forbidden characters, the id format.

Skill text reaches every agent's prompt, so it is plain prose: no control characters (newline and tab are fine in
`issue` / `insight`), no NUL, no bidirectional overrides or isolates that make text display otherwise than it reads.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Iterable
from typing import Literal

from ace.exceptions import SkillbookError

__all__ = [
    "DEFAULT_MAX_TEXT_CHARS",
    "MAX_KEYWORD_LENGTH",
    "VALID_SECTIONS",
    "Section",
    "check_text",
    "keyword_list",
    "normalize_keywords",
    "skill_id_number",
    "validate_insight",
    "validate_issue",
    "validate_section",
    "validate_skill_id",
]

DEFAULT_MAX_TEXT_CHARS = 2_000
"""Default cap on the length of a skill's `issue` and of its `insight`."""

Section = Literal["context", "harness"]
VALID_SECTIONS: frozenset[str] = frozenset({"context", "harness"})
MAX_KEYWORD_LENGTH = 40
_SECTIONS = VALID_SECTIONS
_NON_IDENT = re.compile(r"[^\w.]+")
_UNDERSCORES = re.compile(r"_{2,}")
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


def validate_section(section: object) -> Section:
    """Return `section` if it is `context` or `harness`; raise naming the fix otherwise."""
    if section == "context":
        return "context"
    if section == "harness":
        return "harness"
    raise SkillbookError(
        f"section must be one of {sorted(VALID_SECTIONS)}, got {section!r}: use 'context' for guidance the "
        "agent should follow and 'harness' for problems of the runtime around it; put finer categories in "
        "keywords"
    )


def validate_issue(issue: object, *, max_chars: int | None = None) -> str:
    """The issue text, stripped; every mutation needs a non-empty one, of plain text, at most `max_chars` long."""
    if not isinstance(issue, str) or not issue.strip():
        raise SkillbookError(
            f"issue is required and must be non-empty text, got {issue!r}: describe the problem and where it applies"
        )
    return check_text("issue", issue.strip(), max_chars=max_chars)


def validate_insight(section: Section, insight: object, *, max_chars: int | None = None) -> str | None:
    """The insight text, stripped: required for `context`, optional (`None` when blank) for `harness`; plain text
    of at most `max_chars`."""
    if insight is not None and not isinstance(insight, str):
        raise SkillbookError(f"insight must be text or null, got {type(insight).__name__}")
    text = insight.strip() if isinstance(insight, str) else ""
    if section == "context" and not text:
        raise SkillbookError(
            "insight is required for a context skill: pass insight= with the imperative action the agent "
            "should take (or use section='harness' for a problem with no agent-side action)"
        )
    return check_text("insight", text, max_chars=max_chars) or None


@functools.lru_cache(maxsize=4096)
def _label(raw: str) -> str:
    """One keyword normalised (a pure memo: a skillbook uses a few hundred labels over and over)."""
    return _UNDERSCORES.sub("_", _NON_IDENT.sub("_", raw.strip().lower())).strip("_.")


def normalize_keywords(keywords: object) -> list[str]:
    """Keywords as short lowercase identifiers (`Booking API` -> `booking_api`), de-duplicated, order kept.

    Raises `SkillbookError` when `keywords` is not a list of strings, when a label is longer than
    `MAX_KEYWORD_LENGTH` after normalisation, or when nothing is left.
    """
    if isinstance(keywords, str) or not isinstance(keywords, Iterable):
        raise SkillbookError(
            f"keywords must be a list of short labels, got {type(keywords).__name__}: pass e.g. "
            "['airline', 'booking_api']"
        )
    out: list[str] = []
    seen: set[str] = set()
    for raw in keywords:
        if not isinstance(raw, str):
            raise SkillbookError(f"keywords must be strings, got {raw!r}")
        if not raw.isprintable():
            check_text(f"keyword {raw!r}", raw, prose=False)
        label = _label(raw)
        if not label:
            continue
        if len(label) > MAX_KEYWORD_LENGTH:
            raise SkillbookError(
                f"keyword {raw!r} is too long ({len(label)} > {MAX_KEYWORD_LENGTH} characters): keywords are "
                "short stable labels (domain, subsystem, API family); put prose in issue"
            )
        if label not in seen:
            seen.add(label)
            out.append(label)
    if not out:
        raise SkillbookError(
            "keywords must contain at least one label: pass 1-5 short labels such as the domain, subsystem, "
            "API family or behaviour category"
        )
    return out


def keyword_list(keywords: object) -> list[str]:
    """A copy of `keywords` as a list, refusing a bare string (which would split into letters)."""
    if isinstance(keywords, str) or not isinstance(keywords, Iterable):
        return normalize_keywords(keywords)  # always raises, with the error that names the fix
    return list(keywords)
