"""Where session compaction applies: a `RecursiveAgent`'s agent is compacted only inside its sessions, each
session keeps its own counts, and `run_agent_with_compaction` compacts any plain pydantic-ai agent."""

from __future__ import annotations

import asyncio

from pydantic_ai import Agent, RunContext
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from ace.agents.recursive import RecursiveAgent, SessionBudget, run_agent_with_compaction

TIGHT = SessionBudget(request_limit=20, max_history_tokens=1_500, keep_last_messages=4)


def fetch_page(ctx: RunContext[list[int]], page: int) -> str:
    """Fetch one page of a long trace.

    Args:
        page: The page number, from 0.
    """
    ctx.deps.append(page)
    return f"page {page}: " + "passenger booked flight HAT170 in economy; " * 40


def reader_model(pages: int, longest: list[int]) -> FunctionModel:
    """Reads `pages` pages (the one after the last it still sees), then answers; records each history length."""

    async def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        longest.append(len(messages))
        await asyncio.sleep(0)  # let concurrent sessions interleave
        calls = [p.args_as_dict()["page"] for m in messages for p in m.parts if isinstance(p, ToolCallPart)]
        step = max(calls) + 1 if calls else 0
        if step < pages:
            return ModelResponse(parts=[ToolCallPart("fetch_page", {"page": step})])
        return ModelResponse(parts=[TextPart(f"read {pages} pages")])

    return FunctionModel(model)


def reader(pages: int, longest: list[int], budget: SessionBudget = TIGHT) -> RecursiveAgent[list[int], str]:
    return RecursiveAgent(
        reader_model(pages, longest),
        instructions="Read every page.",
        tools=[fetch_page],
        deps_type=list[int],
        output_type=str,
        span_label="rr",
        budget=budget,
    )


def test_the_agent_outside_a_session_is_not_compacted() -> None:
    longest: list[int] = []
    agent = reader(12, longest)
    fetched: list[int] = []
    result = asyncio.run(agent.agent.run("Summarise the trace.", deps=fetched))
    assert result.output == "read 12 pages" and fetched == list(range(12))
    assert len(result.all_messages()) == 26 and max(longest) == 25  # every call and return kept

    session = asyncio.run(agent.run("Summarise the trace.", deps=[]))
    assert session.completed and session.compactions >= 2 and len(session.messages) < 26


def test_concurrent_sessions_on_one_agent_keep_their_own_counts() -> None:
    longest: list[int] = []
    agent = reader(12, longest)
    roomy = reader(12, [], SessionBudget(max_history_tokens=100_000))

    async def both() -> tuple[int, int, int]:
        long_a, long_b, short = await asyncio.gather(
            agent.run("Summarise the trace.", deps=[]),
            agent.run("Summarise the trace.", deps=[]),
            roomy.run("Summarise the trace.", deps=[]),
        )
        assert long_a.completed and long_b.completed and short.completed
        return long_a.compactions, long_b.compactions, short.compactions

    alone = asyncio.run(agent.run("Summarise the trace.", deps=[])).compactions
    a, b, none = asyncio.run(both())
    assert a == b == alone >= 2  # interleaved sessions counted apart, exactly as a session run alone
    assert none == 0


def test_run_agent_with_compaction_compacts_a_plain_agent() -> None:
    longest: list[int] = []
    plain: Agent[list[int], str] = Agent(
        reader_model(12, longest), instructions="Read every page.", tools=[fetch_page], deps_type=list[int]
    )
    fetched: list[int] = []
    session = asyncio.run(
        run_agent_with_compaction(plain, "Summarise the trace.", deps=fetched, span_label="rr", budget=TIGHT)
    )
    assert session.completed and session.output == "read 12 pages" and fetched == list(range(12))
    assert session.compactions >= 2 and session.messages_dropped >= 10 and max(longest) <= 8

    again = asyncio.run(plain.run("Summarise the trace.", deps=[]))  # the run-level processor is gone afterwards
    assert len(again.all_messages()) == 26
