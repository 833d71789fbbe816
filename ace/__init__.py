"""ACE: agents that learn from their own traces through a skillbook of issues, insights and keywords."""

from importlib.metadata import PackageNotFoundError, version

from ace.core import (
    SCHEMA_VERSION,
    VALID_SECTIONS,
    InsightSource,
    Skill,
    Skillbook,
    UpdateOperation,
    normalize_keywords,
)
from ace.exceptions import AceError, SkillbookError, SkillbookFormatError, UnknownSkillError

try:
    __version__ = version("agentic-context-engine")
except PackageNotFoundError:  # running from a source tree that was not installed
    __version__ = "0.0.0"

__all__ = [
    "SCHEMA_VERSION",
    "VALID_SECTIONS",
    "AceError",
    "InsightSource",
    "Skill",
    "Skillbook",
    "SkillbookError",
    "SkillbookFormatError",
    "UnknownSkillError",
    "UpdateOperation",
    "__version__",
    "normalize_keywords",
]
