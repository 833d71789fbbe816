"""`Reflection`: what a reflector concluded from one trace, and the skill tags it proposes."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from ace.llm.text_hints import AgentProse, CauseProse, Prose, RemedyProse

__all__ = ["TAG_DELTAS", "Reflection", "SkillTag", "TagLabel"]

TagLabel = Literal["helpful", "harmful", "neutral"]
TAG_DELTAS: dict[TagLabel, int] = {"helpful": 1, "harmful": -1, "neutral": 0}
"""The `tag_skill` delta each label stands for."""


class SkillTag(BaseModel):
    """A verdict on one skill the trace shows the agent used."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    skill_id: str = Field(min_length=1)
    """The skill's id, e.g. `context-00007`."""
    tag: TagLabel
    """Whether following the skill helped, hurt, or made no difference in this trace."""

    @property
    def delta(self) -> int:
        """The `tag_skill` delta for this verdict: 1 helpful, -1 harmful, 0 neutral."""
        return TAG_DELTAS[self.tag]

    @field_validator("skill_id")
    @classmethod
    def _strip_id(cls, value: str) -> str:
        value = value.strip()
        if not value:
            raise ValueError("skill tag id must name a skill, e.g. 'context-00007'")
        return value


class Reflection(BaseModel):
    """A reflector's analysis of one trace: what went wrong, why, what to do instead, and skill verdicts."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    error_identification: AgentProse
    """What went wrong in the trace (empty when nothing did)."""
    root_cause_analysis: CauseProse
    """Why it went wrong."""
    correct_approach: RemedyProse
    """What the agent should have done."""
    key_insight: Prose
    """The one reusable lesson, phrased so that it applies beyond this trace."""
    skill_tags: list[SkillTag] = Field(default_factory=list[SkillTag])
    """Verdicts on skills the trace shows the agent used."""

    def as_prompt_text(self) -> str:
        """The four analysis fields as labelled lines, for a prompt or a retrieval query."""
        return "\n".join(
            f"{label}: {text.strip()}"
            for label, text in (
                ("error_identification", self.error_identification),
                ("root_cause_analysis", self.root_cause_analysis),
                ("correct_approach", self.correct_approach),
                ("key_insight", self.key_insight),
            )
            if text.strip()
        )
