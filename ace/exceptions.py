"""The errors ACE raises, in two families (pydantic-ai's `UserError` / `AgentRunError` split).

`UserError`: bad input or configuration, fixed by the user; `ace-eval` prints the message and exits 2, never a
traceback. `RunError`: something failed on the way (a model, the sandbox, a checkpoint); `ace-eval` exits 1 and,
when a run folder exists, says how to resume it. Every other error class of ACE and ace-eval subclasses one of
the two, so a caller can catch a family without knowing the modules.
"""

from __future__ import annotations

__all__ = [
    "AceError",
    "MissingExtraError",
    "RunError",
    "SkillFieldError",
    "SkillbookError",
    "SkillbookFormatError",
    "UnknownSkillError",
    "UserError",
]


class AceError(Exception):
    """Base class of every error ACE raises on purpose."""


class UserError(AceError):
    """Bad input or configuration (a flag, a file, a skillbook edit); the message names the fix."""


class RunError(AceError):
    """A run failed on the way (a model, the sandbox, a checkpoint, a step); resuming may get past it."""


class MissingExtraError(UserError, ImportError):
    """An optional extra that is not installed, or installed but broken (a module it needs is missing); the message
    names the extra and its install command, and the module the import failed on as detail."""

    def __init__(self, message: str, *, extra: str, installed: bool, failed_on: str | None = None) -> None:
        super().__init__(message)
        self.extra = extra
        """The extra's name in pyproject.toml, e.g. `tau2`."""
        self.installed = installed
        """Whether its package is installed (then a dependency of it is missing or broken)."""
        self.failed_on = failed_on
        """The module the import failed on, or the import error's text when it names no module."""


class SkillbookError(UserError, ValueError):
    """A skillbook operation was refused; the message names the field and the fix."""


class SkillFieldError(SkillbookError, AttributeError):
    """An assignment to a `Skill` field: changes go through the skillbook method the message names."""


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
