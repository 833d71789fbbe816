"""ACE's tau2 agent: tau2's own `LLMAgent` with the skillbook after the policy, registered as `ace_agent`.

The skillbook reaches the agent through its LLM arguments, so tau2's CLI can run it unchanged:
`--agent ace_agent --agent-llm-args '{"ace_skillbook": "skillbook.json", "ace_skill_injection": "top-k"}'`
(those keys are removed before the arguments reach litellm). Without a skillbook the system prompt is exactly
tau2's `llm_agent` prompt, so a baseline run with `ace_agent` is tau2's baseline.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, get_args

from ace.core.skillbook import Skillbook
from ace.embeddings.base import Embedder
from ace.exceptions import UserError
from ace_eval.benchmarks.tau2._tau2 import (
    AGENT_INSTRUCTION,
    SYSTEM_PROMPT,
    LLMAgent,
    SystemMessage,
    UserMessage,
    registry,
)
from ace_eval.benchmarks.tau_bench.agent import SkillContext, SkillInjection, render_skills

__all__ = [
    "AGENT_NAME",
    "EMBEDDER_ARG",
    "INJECTION_ARG",
    "LOADED_ARG",
    "SKILLBOOK_ARG",
    "TOP_K_ARG",
    "AceAgent",
    "load_agent_skillbook",
    "register_ace_agent",
    "skill_args",
]

AGENT_NAME = "ace_agent"
"""The name `AceAgent` is registered under in tau2's registry (`tau2 run --agent ace_agent`)."""
SKILLBOOK_ARG = "ace_skillbook"
INJECTION_ARG = "ace_skill_injection"
TOP_K_ARG = "ace_top_k"
EMBEDDER_ARG = "ace_embedder"
"""An `Embedder` object for `top-k` retrieval, passed in process (`run_episodes`); absent: the skillbook's default."""
LOADED_ARG = "ace_loaded_skillbook"
"""The `Skillbook` read once for a whole run, passed in process (`run_episodes`); absent: read `ace_skillbook`."""
_SKILLBOOK_BLOCK = """
<skillbook>
Lessons learned from earlier conversations. Apply the ones that fit; the policy above always wins.

{skills}
</skillbook>"""


def load_agent_skillbook(path: str) -> Skillbook:
    """The skillbook at `path` (tau2's own CLI: read per agent; `run_episodes` passes one loaded for the run)."""
    resolved = Path(path).resolve()
    if not resolved.is_file():
        raise UserError(f"{SKILLBOOK_ARG}: no skillbook file at {resolved}; pass a saved skillbook's path")
    return Skillbook.load_from_file(resolved)


def skill_args(skillbook: str | os.PathLike[str] | None, injection: SkillInjection, top_k: int = 5) -> dict[str, Any]:
    """The LLM-argument keys that give `AceAgent` a skillbook (empty for no skillbook or `none`)."""
    if skillbook is None or injection == "none":
        return {}
    return {SKILLBOOK_ARG: str(Path(skillbook).resolve()), INJECTION_ARG: injection, TOP_K_ARG: top_k}


class AceAgent(LLMAgent):  # type: ignore[misc]  # tau2 ships no type information
    """tau2's LLM agent with the skillbook in its system prompt (`prompt`: all skills; `top-k`: retrieved)."""

    def __init__(
        self, tools: list[Any], domain_policy: str, llm: str | None = None, llm_args: dict[str, Any] | None = None
    ) -> None:
        args = dict(llm_args or {})
        path = args.pop(SKILLBOOK_ARG, None)
        injection = args.pop(INJECTION_ARG, "prompt")
        top_k = args.pop(TOP_K_ARG, 5)
        embedder = args.pop(EMBEDDER_ARG, None)
        loaded = args.pop(LOADED_ARG, None)
        super().__init__(tools=tools, domain_policy=domain_policy, llm=llm, llm_args=args)
        if injection not in get_args(SkillInjection):
            raise UserError(f"{INJECTION_ARG}={injection!r}: choose one of {', '.join(get_args(SkillInjection))}")
        if not isinstance(top_k, int) or top_k < 1:
            raise UserError(f"{TOP_K_ARG}={top_k!r}: pass a whole number of skills, at least 1")
        if embedder is not None and not isinstance(embedder, Embedder):
            raise UserError(f"{EMBEDDER_ARG}: pass an ace Embedder object (in process), got {type(embedder).__name__}")
        self.embedder: Embedder | None = embedder
        """The embedder `top-k` retrieval uses (None: the skillbook's default)."""
        self.injection: SkillInjection = injection
        self.top_k = top_k
        if loaded is not None and not isinstance(loaded, Skillbook):
            raise UserError(f"{LOADED_ARG}: pass an ace Skillbook object (in process), got {type(loaded).__name__}")
        self.skillbook = loaded if loaded is not None else load_agent_skillbook(str(path)) if path else None
        self.skills = SkillContext("", ())
        self._retrieved = False
        if injection == "prompt":
            self.skills = render_skills(self.skillbook, "prompt", query="")

    @property
    def system_prompt(self) -> str:
        prompt = SYSTEM_PROMPT.format(domain_policy=self.domain_policy, agent_instruction=AGENT_INSTRUCTION)
        if not self.skills.text:
            return str(prompt)
        return str(prompt) + _SKILLBOOK_BLOCK.format(skills=self.skills.text)

    def generate_next_message(self, message: Any, state: Any) -> tuple[Any, Any]:
        """tau2's step; with `top-k`, the user's first message picks the skills before the first reply."""
        if self.injection == "top-k" and not self._retrieved and isinstance(message, UserMessage) and message.content:
            self._retrieved = True
            self.skills = render_skills(
                self.skillbook, "top-k", query=message.content, top_k=self.top_k, embedder=self.embedder
            )
            state.system_messages = [SystemMessage(role="system", content=self.system_prompt)]
        result: tuple[Any, Any] = super().generate_next_message(message, state)
        return result


def register_ace_agent() -> str:
    """Register `AceAgent` in tau2's registry (once per process); returns its name."""
    if AGENT_NAME not in registry.get_agents():
        registry.register_agent(AceAgent, AGENT_NAME)
    return AGENT_NAME
