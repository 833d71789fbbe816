"""The skill manager: one recursive tool-calling session per sample that turns reflections into atomic edits."""

from ace.skill_manager.deps import SMSettings
from ace.skill_manager.manager import SkillManager, SMResult

__all__ = ["SMResult", "SMSettings", "SkillManager"]
