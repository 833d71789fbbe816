"""One episode: the agent and the simulated user talk until the user stops, the agent transfers, or the
step budget runs out; then the run is scored and turned into a trace of the collection format."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage
from pydantic_ai.models import Model
from pydantic_ai.settings import ModelSettings
from pydantic_ai.usage import UsageLimits

from ace.core.skillbook import Skillbook
from ace.embeddings.base import Embedder
from ace.llm.retry import failure_kind
from ace_eval.benchmarks.tau_bench.agent import (
    AgentDeps,
    SkillContext,
    SkillInjection,
    agent_instructions,
    build_agent,
    render_skills,
)
from ace_eval.benchmarks.tau_bench.data import AirlineData, Task
from ace_eval.benchmarks.tau_bench.env import AirlineEnv, EpisodeEnd
from ace_eval.benchmarks.tau_bench.messages import to_chat_messages
from ace_eval.benchmarks.tau_bench.scoring import RewardResult
from ace_eval.benchmarks.tau_bench.user_sim import UserSimulator

__all__ = [
    "SOURCE_SYSTEM",
    "EpisodeConfig",
    "EpisodeResult",
    "model_label",
    "run_episode",
]

SOURCE_SYSTEM = "tau-bench-airline"


@dataclass(frozen=True, kw_only=True)
class EpisodeConfig:
    """How episodes run."""

    max_num_steps: int = 30
    """Agent model requests per episode (upstream's default); the episode then ends unscored (reward 0)."""
    skill_injection: SkillInjection = "prompt"
    top_k: int = 5
    """Skills retrieved per episode with `skill_injection="top-k"`."""
    skill_tokens: int | None = None
    """With `top-k`: the most relevant skills that fit this many tokens instead of `top_k` of them."""
    embedder: Embedder | None = None
    """Embeds the query and skills for `top-k` (default: the embedded MiniLM)."""
    agent_settings: ModelSettings | None = None
    user_settings: ModelSettings | None = None

    def __post_init__(self) -> None:
        if self.max_num_steps < 1:
            raise ValueError(f"max_num_steps must be at least 1, got {self.max_num_steps}")
        if self.top_k < 1:
            raise ValueError(f"top_k must be at least 1, got {self.top_k}")


@dataclass(frozen=True, kw_only=True)
class EpisodeResult:
    """What one episode did and how it scored."""

    task_id: int
    trial: int
    task: Task
    reward: float
    """Upstream's reward: 0.0 for an episode that did not end (step budget) or failed."""
    reward_result: RewardResult | None
    """The scoring, for an episode that ended (user stop or transfer)."""
    ended: EpisodeEnd
    steps: int
    """Agent model requests made."""
    messages: list[dict[str, Any]]
    """The agent's conversation as OpenAI-style chat messages, its instructions first."""
    skills_in_context: tuple[str, ...] = ()
    models: dict[str, str] = field(default_factory=dict)
    error: str | None = None
    """`"<ExceptionType>: <message>"` when a model or the loop failed (`ended == "error"`)."""
    error_kind: str | None = None
    """What kind of failure `error` is (`ace.llm.retry.failure_kind`: `auth`, `not_found`, `rate_limit`, ...)."""


def model_label(model: Model) -> str:
    """`system:model_name`, e.g. `openai:gpt-4o` or `function:scripted_agent`."""
    return f"{model.system}:{model.model_name}"


async def _agent_turn(
    agent: Agent[AgentDeps, str], prompt: str, deps: AgentDeps, history: list[ModelMessage], budget: int
) -> tuple[list[ModelMessage], str | None, int]:
    """Let the agent work until it replies, transfers, or spends `budget` model requests.

    Returns the new history, the reply (None when there is none) and the requests made.
    """
    requests = 0
    pending: ModelMessage | None = None
    # the budget is enforced here, node by node; pydantic-ai's own limit (50 requests) must not end the turn first
    limits = UsageLimits(request_limit=None)
    async with agent.iter(prompt, deps=deps, message_history=history, usage_limits=limits) as run:
        async for node in run:
            if not Agent.is_model_request_node(node):
                continue
            if deps.env.done or requests >= budget:
                pending = node.request  # tool results (or the user's message) not yet in the history
                break
            requests += 1
        messages = run.all_messages()
        reply = run.result.output if run.result is not None and pending is None else None
    if pending is not None and not any(m is pending for m in messages):
        messages.append(pending)
    return messages, reply, requests


async def run_episode(
    data: AirlineData,
    task_id: int,
    *,
    agent_model: Model,
    user_model: Model,
    trial: int = 0,
    skillbook: Skillbook | None = None,
    config: EpisodeConfig | None = None,
    gt_data_hash: str | None = None,
) -> EpisodeResult:
    """Run task `task_id` once. Model failures end the episode with `ended="error"` instead of raising."""
    config = config or EpisodeConfig()
    task = data.task(task_id)
    env = AirlineEnv(data, task)
    user = UserSimulator(user_model, task.instruction, settings=config.user_settings)
    deps = AgentDeps(env)
    skills = SkillContext("", ())
    instructions = data.wiki
    history: list[ModelMessage] = []
    steps = 0
    ended: EpisodeEnd | None = None
    error: str | None = None
    error_kind: str | None = None
    try:
        user_text = await user.start()
        skills = render_skills(
            skillbook,
            config.skill_injection,
            query=user_text,
            top_k=config.top_k,
            embedder=config.embedder,
            max_tokens=config.skill_tokens,
        )
        instructions = agent_instructions(data.wiki, skills)
        agent = build_agent(agent_model, instructions, settings=config.agent_settings)
        while True:
            history, reply, used = await _agent_turn(agent, user_text, deps, history, config.max_num_steps - steps)
            steps += used
            if env.done:
                break
            if reply is None:
                ended = "max_steps"
                break
            user_text = await user.reply(reply)
            if env.respond(reply, user_text):
                break
            if steps >= config.max_num_steps:
                ended = "max_steps"
                break
    except Exception as e:
        ended, error, error_kind = "error", f"{type(e).__name__}: {e}", failure_kind(e)
    final: EpisodeEnd = "error" if error is not None else env.ended or ended or "max_steps"
    result = env.calculate_reward(gt_data_hash) if final in ("user_stop", "transfer") else None
    return EpisodeResult(
        task_id=task_id,
        trial=trial,
        task=task,
        reward=result.reward if result is not None else 0.0,
        reward_result=result,
        ended=final,
        steps=steps,
        messages=to_chat_messages(history, system_prompt=instructions),
        skills_in_context=skills.skill_ids,
        models={"agent": model_label(agent_model), "user": model_label(user_model)},
        error=error,
        error_kind=error_kind,
    )
