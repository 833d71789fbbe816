"""The simulated user: an LLM playing the task's instruction, who ends the conversation with `###STOP###`."""

from __future__ import annotations

from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage
from pydantic_ai.models import Model
from pydantic_ai.settings import ModelSettings

from ace_eval.benchmarks.tau_bench.env import STOP_TOKEN

__all__ = ["AGENT_GREETING", "UserSimulator", "user_instructions"]

AGENT_GREETING = "Hi! How can I help you today?"
"""What the simulated user hears first, before the agent has said anything."""


def user_instructions(instruction: str) -> str:
    """The simulator's system prompt for one task instruction."""
    return (
        "You are role-playing a customer who is talking to an airline's customer-service agent.\n\n"
        f"Your situation and goal (the agent cannot see this):\n{instruction}\n\n"
        "How to play the customer:\n"
        "- Write one short message per turn, the way a customer would type it.\n"
        "- Give only the information the current step needs; never reveal the whole situation at once.\n"
        "- Never make up facts your situation does not give you (ids, numbers, dates). If the agent asks for "
        "something you do not have, say you do not know or do not remember it.\n"
        "- Say things in your own words instead of repeating the text above.\n"
        "- Keep the personality your situation describes, and keep the conversation natural.\n"
        f"- Once your goal is achieved, reply with {STOP_TOKEN} alone, nothing else, to end the conversation."
    )


class UserSimulator:
    """One simulated user for one episode; keeps its own side of the conversation."""

    def __init__(self, model: Model, instruction: str, *, settings: ModelSettings | None = None) -> None:
        self._agent: Agent[None, str] = Agent(
            model,
            output_type=str,
            instructions=user_instructions(instruction),
            model_settings=settings,
            name="tau-bench-user-simulator",
        )
        self._history: list[ModelMessage] = []

    @property
    def history(self) -> list[ModelMessage]:
        """The simulator's conversation (the agent's messages are its prompts)."""
        return list(self._history)

    async def start(self) -> str:
        """The user's opening message, in answer to `AGENT_GREETING`."""
        return await self.reply(AGENT_GREETING)

    async def reply(self, agent_message: str) -> str:
        """The user's answer to the agent's message."""
        result = await self._agent.run(agent_message, message_history=self._history)
        self._history = result.all_messages()
        return result.output
