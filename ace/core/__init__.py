"""The skillbook and its provenance records."""

from ace.core.effectiveness import QuarantinePolicy, SkillKpis, skill_kpis
from ace.core.insight_source import InsightSource
from ace.core.skill import VALID_SECTIONS, Quarantine, Skill, normalize_keywords
from ace.core.skillbook import SCHEMA_VERSION, Skillbook
from ace.core.text_rules import DEFAULT_MAX_TEXT_CHARS
from ace.core.trace import TraceIdentity, TraceInput, TraceLike
from ace.core.update_operation import UpdateOperation

__all__ = [
    "DEFAULT_MAX_TEXT_CHARS",
    "SCHEMA_VERSION",
    "VALID_SECTIONS",
    "InsightSource",
    "Quarantine",
    "QuarantinePolicy",
    "Skill",
    "SkillKpis",
    "Skillbook",
    "TraceIdentity",
    "TraceInput",
    "TraceLike",
    "UpdateOperation",
    "normalize_keywords",
    "skill_kpis",
]
