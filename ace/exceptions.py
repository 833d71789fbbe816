"""The errors ACE raises: user mistakes (`SkillbookError` and friends) apart from run failures."""

from __future__ import annotations

__all__ = [
    "AceError",
    "SkillbookError",
    "SkillbookFormatError",
    "UnknownSkillError",
]


class AceError(Exception):
    """Base class of every error ACE raises on purpose."""


class SkillbookError(AceError, ValueError):
    """A skillbook operation was refused; the message names the field and the fix."""


class UnknownSkillError(SkillbookError):
    """A skill id that the skillbook does not hold."""

    def __init__(self, skill_id: str, known: list[str]) -> None:
        import difflib

        self.skill_id = skill_id
        close = difflib.get_close_matches(skill_id, known, n=3, cutoff=0.6)
        hint = f" Did you mean {', '.join(repr(c) for c in close)}?" if close else ""
        super().__init__(f"Unknown skill id {skill_id!r}: search_skills or read_skill to find a valid id.{hint}")


class SkillbookFormatError(SkillbookError):
    """A skillbook file that cannot be read: malformed JSON, an old format, or an invalid skill."""

    def __init__(self, message: str, *, path: str | None = None) -> None:
        self.path = path
        super().__init__(message)
