"""Whole episodes with scripted agent and user models (FunctionModel), scored and written as traces."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from ace.core.skillbook import Skillbook
from ace.embeddings.test import TestEmbedder
from ace_eval.benchmarks.tau_bench.data import AirlineData, load_airline_data
from ace_eval.benchmarks.tau_bench.episode import EpisodeConfig, EpisodeResult, run_episode
from ace_eval.benchmarks.tau_bench.episode_trace import episode_to_trace
from ace_eval.benchmarks.tau_bench.schemas import TOOL_SPECS
from ace_eval.collection import CollectionWriter, read_collection

Call = tuple[str, dict[str, Any]]
FunctionDef = Callable[[list[ModelMessage], AgentInfo], ModelResponse]


@pytest.fixture(scope="module")
def data(airline_data: Path) -> AirlineData:
    return load_airline_data(airline_data)


def _tool_results(messages: list[ModelMessage]) -> list[str]:
    return [
        p.model_response_str()
        for m in messages
        if isinstance(m, ModelRequest)
        for p in m.parts
        if isinstance(p, ToolReturnPart)
    ]


def scripted_agent(
    calls: list[Call] | Callable[[list[str]], list[Call]], final: str, seen: list[AgentInfo]
) -> FunctionModel:
    """An agent that makes `calls` one per request (a function of the tool results so far may choose them),
    then says `final`."""

    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        seen.append(info)
        results = _tool_results(messages)
        plan = calls(results) if callable(calls) else calls
        if len(results) < len(plan):
            name, kwargs = plan[len(results)]
            return ModelResponse(parts=[ToolCallPart(name, kwargs)])
        return ModelResponse(parts=[TextPart(final)])

    return FunctionModel(respond, model_name="scripted-agent")


def scripted_user(lines: list[str], seen: list[AgentInfo] | None = None) -> FunctionModel:
    """A user who says `lines` in order, then ###STOP###."""

    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if seen is not None:
            seen.append(info)
        said = sum(isinstance(m, ModelResponse) for m in messages)
        return ModelResponse(parts=[TextPart(lines[said] if said < len(lines) else "###STOP###")])

    return FunctionModel(respond, model_name="scripted-user")


def episode(data: AirlineData, task_id: int, **kwargs: Any) -> EpisodeResult:
    return asyncio.run(run_episode(data, task_id, **kwargs))


def _gold(data: AirlineData, task_id: int) -> list[Call]:
    return [(a.name, a.kwargs) for a in data.tasks[task_id].actions]


@pytest.mark.parametrize(
    ("task_id", "final"),
    [(0, "Your flight is booked."), (2, "All five are now economy; you saved $23,553 in total.")],
)
def test_an_agent_performing_the_gold_actions_scores_1(data: AirlineData, task_id: int, final: str) -> None:
    agent_seen: list[AgentInfo] = []
    user_seen: list[AgentInfo] = []
    result = episode(
        data,
        task_id,
        agent_model=scripted_agent(_gold(data, task_id), final, agent_seen),
        user_model=scripted_user(["Hi, I need help with my trips."], user_seen),
    )
    assert (result.reward, result.ended, result.error) == (1.0, "user_stop", None)
    assert result.reward_result is not None and result.reward_result.r_actions
    assert result.steps == len(data.tasks[task_id].actions) + 1
    assert {t.name for t in agent_seen[0].function_tools} == set(TOOL_SPECS)
    assert agent_seen[0].instructions == data.wiki.rstrip()  # the policy alone: no skillbook given
    assert data.tasks[task_id].instruction in (user_seen[0].instructions or "")
    assert "###STOP###" in (user_seen[0].instructions or "")


def test_booking_the_wrong_flight_scores_0(data: AirlineData) -> None:
    gold = data.tasks[0].actions[0].kwargs  # HAT136 + HAT039, JFK -> SEA on May 20, economy

    def book_another(results: list[str]) -> list[Call]:
        plan: list[Call] = [("search_direct_flight", {"origin": "JFK", "destination": "SEA", "date": "2024-05-20"})]
        if results:
            other = next(f for f in json.loads(results[0]) if f["available_seats"]["economy"] > 0)
            price = other["prices"]["economy"]
            booking = {
                **gold,
                "flights": [{"flight_number": other["flight_number"], "date": "2024-05-20"}],
                "payment_methods": [{"payment_id": "credit_card_4421486", "amount": price}],
            }
            plan.append(("book_reservation", booking))
        return plan

    seen: list[AgentInfo] = []
    result = episode(
        data, 0, agent_model=scripted_agent(book_another, "Booked!", seen), user_model=scripted_user(["Book JFK-SEA."])
    )
    booked = json.loads(result.messages[-2]["content"])
    assert booked["reservation_id"] == "HATHAT" and booked["flights"][0]["flight_number"] != "HAT136"
    assert result.reward == 0.0
    assert result.reward_result is not None and not result.reward_result.r_actions
    trace = episode_to_trace(result)
    assert "database differs" in (trace.feedback or "")
    # the grader says which flight differs, with both values
    assert trace.grader is not None and trace.grader.database == "differs"
    [diff] = trace.grader.actions
    assert (diff.kind, diff.tool, diff.message_index) == ("different", "book_reservation", 4)
    paths = {a.path: (a.given, a.gold) for a in diff.arguments}
    assert paths["flights"][1] == gold["flights"]  # one flight given where the gold books two
    assert f'book_reservation.flights: gave [{{"flight_number": "{booked["flights"][0]["flight_number"]}"' in (
        trace.grader.text
    )


def test_the_trace_lands_in_the_collection_with_gold_actions_and_reward_info(data: AirlineData, tmp_path: Path) -> None:
    result = episode(
        data,
        0,
        trial=3,
        agent_model=scripted_agent(_gold(data, 0), "Done.", []),
        user_model=scripted_user(["I want to fly to Seattle."]),
    )
    with CollectionWriter(tmp_path / "collection", source_system="tau-bench-airline") as writer:
        writer.append(episode_to_trace(result))
    manifest, (trace,) = read_collection(tmp_path / "collection")
    assert manifest.counts.successes == 1
    assert (trace.trace_uid, trace.task_id, trace.reward) == ("tau-bench-airline:task-0-trial-3", "0", 1.0)
    assert trace.question == data.tasks[0].instruction
    assert trace.ground_truth == {"actions": [a.model_dump() for a in data.tasks[0].actions], "outputs": []}
    assert trace.metadata["reward_info"]["info"]["r_actions"] == 1.0
    assert trace.grader is not None and (trace.grader.database, trace.grader.matched_actions) == ("matches", 1)
    assert trace.grader.actions == []
    assert trace.metadata["trial"] == 3
    assert trace.metadata["models"] == {"agent": "function:scripted-agent", "user": "function:scripted-user"}
    roles = [m["role"] for m in trace.messages]
    assert roles == ["system", "user", "assistant", "tool", "assistant"]
    assert trace.messages[0]["content"] == data.wiki
    call = trace.messages[2]["tool_calls"][0]
    assert call["function"]["name"] == "book_reservation"
    assert json.loads(call["function"]["arguments"]) == data.tasks[0].actions[0].kwargs
    assert trace.messages[3]["tool_call_id"] == call["id"] and '"HATHAT"' in trace.messages[3]["content"]


def test_a_transfer_ends_the_episode_and_is_scored(data: AirlineData) -> None:
    user_seen: list[AgentInfo] = []
    result = episode(
        data,
        13,  # the gold outcome is a transfer with no change to the database
        agent_model=scripted_agent([("transfer_to_human_agents", {"summary": "partially used trip"})], "x", []),
        user_model=scripted_user(["Change my flight."], user_seen),
    )
    assert (result.ended, result.reward, result.steps) == ("transfer", 1.0, 1)
    assert len(user_seen) == 1  # the user never heard from the agent again
    assert result.messages[-1] == {
        "role": "tool",
        "tool_call_id": result.messages[-2]["tool_calls"][0]["id"],
        "name": "transfer_to_human_agents",
        "content": "Transfer successful",
    }


@pytest.mark.parametrize("budget", [4, 55])  # 55: beyond pydantic-ai's default limit of 50 requests per run
def test_the_step_budget_ends_the_episode_unscored(data: AirlineData, budget: int) -> None:
    thinking: list[Call] = [("think", {"thought": f"step {i}"}) for i in range(100)]
    config = EpisodeConfig(max_num_steps=budget)
    result = episode(
        data, 0, agent_model=scripted_agent(thinking, "x", []), user_model=scripted_user(["Hi."]), config=config
    )
    assert (result.ended, result.steps, result.reward, result.reward_result) == ("max_steps", budget, 0.0, None)
    assert [m["role"] for m in result.messages].count("tool") == budget
    trace = episode_to_trace(result)
    assert trace.reward == 0.0 and f"all {budget} steps" in (trace.feedback or "")


def test_a_failing_model_ends_the_episode_with_an_error_and_an_unjudged_trace(data: AirlineData) -> None:
    def broken(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        raise RuntimeError("provider is down")

    result = episode(data, 0, agent_model=FunctionModel(broken), user_model=scripted_user(["Hi."]))
    assert (result.ended, result.reward, result.error) == ("error", 0.0, "RuntimeError: provider is down")
    trace = episode_to_trace(result)
    assert trace.reward is None and "provider is down" in (trace.feedback or "")
    assert trace.grader is None  # nothing was graded


def _skillbook() -> Skillbook:
    book = Skillbook()
    book.add_skill(
        "context",
        "Agents forget that gold members get 3 free bags per economy passenger.",
        ["airline", "baggage"],
        "Count free bags from the membership tier before charging.",
    )
    book.add_skill(
        "context",
        "Agents cancel basic economy trips without insurance after 24 hours.",
        ["airline", "cancellation"],
        "Refuse such cancellations and explain the policy.",
    )
    return book


@pytest.mark.parametrize(
    ("injection", "expected_ids"),
    [("prompt", ["context-00001", "context-00002"]), ("top-k", ["context-00001"]), ("none", [])],
)
def test_the_skillbook_reaches_the_agent_as_configured(
    data: AirlineData, injection: Any, expected_ids: list[str]
) -> None:
    seen: list[AgentInfo] = []
    config = EpisodeConfig(skill_injection=injection, top_k=1, embedder=TestEmbedder())
    result = episode(
        data,
        0,
        agent_model=scripted_agent([], "Sure.", seen),
        user_model=scripted_user(["How many free bags do I get as a gold member in economy?"]),
        skillbook=_skillbook(),
        config=config,
    )
    instructions = seen[0].instructions or ""
    assert list(result.skills_in_context) == expected_ids
    assert instructions.startswith(data.wiki.rstrip())
    assert ("3 free bags" in instructions) == bool(expected_ids)
    assert ("basic economy trips without insurance" in instructions) == (injection == "prompt")
    assert episode_to_trace(result).skills_in_context == expected_ids
