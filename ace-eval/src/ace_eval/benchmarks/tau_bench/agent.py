"""The tool-calling agent: the airline policy plus the skillbook in its instructions, the 14 tools."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, assert_never

from pydantic_ai import Agent, RunContext, Tool
from pydantic_ai.models import Model
from pydantic_ai.settings import ModelSettings

from ace.core.skill import Section
from ace.core.skillbook import Skillbook
from ace.embeddings.base import Embedder
from ace.retrieval.budget import render_skill_list, retrieve_within_budget
from ace.retrieval.top_k import retrieve_top_k
from ace_eval.benchmarks.injection import SKILL_INJECTIONS, SkillInjection
from ace_eval.benchmarks.tau_bench.env import AirlineEnv
from ace_eval.benchmarks.tau_bench.schemas import TOOL_SPECS

__all__ = [
    "SKILL_INJECTIONS",
    "AgentDeps",
    "SkillContext",
    "SkillInjection",
    "agent_instructions",
    "airline_tools",
    "build_agent",
    "render_skills",
]

VALID_SECTION_ORDER: tuple[Section, ...] = ("context", "harness")
"""The order `Skillbook.as_prompt()` renders sections in."""


@dataclass(frozen=True)
class AgentDeps:
    """What the tools reach through `RunContext`: the episode's environment."""

    env: AirlineEnv


@dataclass(frozen=True)
class SkillContext:
    """The skills rendered into the agent's instructions, and their ids (recorded in the trace)."""

    text: str
    skill_ids: tuple[str, ...]


def render_skills(
    skillbook: Skillbook | None,
    injection: SkillInjection,
    *,
    query: str,
    top_k: int = 5,
    embedder: Embedder | None = None,
    max_tokens: int | None = None,
) -> SkillContext:
    """Render the skills for one episode; `query` (the user's opening message) drives `top-k` retrieval.

    `embedder` is the retrieval's (default: the skillbook's search index default, the embedded MiniLM);
    `max_tokens` retrieves the most relevant helpful skills that fit that many tokens instead of `top_k`.
    """
    if skillbook is None or len(skillbook) == 0:
        return SkillContext("", ())
    if injection == "none":
        return SkillContext("", ())
    if injection == "prompt":
        ids = tuple(s.id for section in VALID_SECTION_ORDER for s in skillbook.skills(section=section))
        return SkillContext(skillbook.as_prompt(), ids)
    if injection == "top-k":
        if not query.strip():  # nothing to retrieve for
            return SkillContext("", ())
        if max_tokens is not None:
            retrieved = retrieve_within_budget(skillbook, query, max_tokens=max_tokens, embedder=embedder)
        else:
            retrieved = retrieve_top_k(skillbook, query, top_k=top_k, embedder=embedder)
        return SkillContext(render_skill_list(retrieved), tuple(s.id for s in retrieved))
    assert_never(injection)


def agent_instructions(wiki: str, skills: SkillContext) -> str:
    """The policy, then the learned skills (if any) under their own heading."""
    if not skills.text:
        return wiki
    return (
        f"{wiki.rstrip()}\n\n# Skillbook\n"
        "Lessons learned from earlier conversations. Apply the ones that fit; the policy above always wins.\n\n"
        f"{skills.text}\n"
    )


def _airline_tool(name: str) -> Tool[AgentDeps]:
    spec = TOOL_SPECS[name]

    async def call(ctx: RunContext[AgentDeps], **kwargs: Any) -> str:
        return ctx.deps.env.step(name, kwargs)

    # The schema is not enforced: the arguments reach the tool as the model wrote them, as in the benchmark,
    # and a bad argument comes back as the tool's "Error: ..." string.
    return Tool.from_schema(
        call, name=name, description=spec.description, json_schema=spec.parameters, takes_ctx=True, sequential=True
    )


def airline_tools() -> list[Tool[AgentDeps]]:
    """The 13 airline tools and `think`, each running through the episode's `AirlineEnv.step`."""
    return [_airline_tool(name) for name in TOOL_SPECS]


def build_agent(model: Model, instructions: str, *, settings: ModelSettings | None = None) -> Agent[AgentDeps, str]:
    """The agent of one episode. One tool call at a time, as the policy asks (`parallel_tool_calls=False`)."""
    merged: ModelSettings = {"parallel_tool_calls": False, **(settings or {})}
    return Agent(
        model,
        deps_type=AgentDeps,
        output_type=str,
        instructions=instructions,
        tools=airline_tools(),
        model_settings=merged,
        name="tau-bench-airline-agent",
    )
