"""How the skillbook reaches a benchmark's agent (`--skill-injection`): the values every built-in agent takes."""

from __future__ import annotations

from typing import Literal, get_args

__all__ = ["SKILL_INJECTIONS", "SkillInjection"]

SkillInjection = Literal["prompt", "top-k", "none"]
"""How the skillbook reaches the agent: all active skills (`as_prompt()`), the top-k retrieved for the
user's opening message, or not at all."""
SKILL_INJECTIONS: tuple[SkillInjection, ...] = get_args(SkillInjection)
