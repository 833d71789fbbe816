"""`ace.integrations.pydantic_ai`: skills into an agent within a token budget, runs out into a collection."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from pydantic_ai import Agent
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    RetryFeedbackPart,
    RetryInfo,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel

from ace.core.skillbook import Skillbook
from ace.embeddings import TestEmbedder
from ace.exceptions import SkillbookError, UserError
from ace.integrations.pydantic_ai import DEFAULT_HEADER, RunCapture, SkillInstructions, chat_messages
from ace.retrieval.budget import count_tokens, render_skill, render_skill_list, retrieve_within_budget
from ace.retrieval.top_k import retrieve_top_k
from ace_eval.collection import read_collection

SKILLS = [
    ("Weather questions about a city need the get_weather tool", ["weather", "city"], "Call get_weather with the city"),
    ("Weather answers must give the temperature in Celsius", ["weather", "units"], "State the temperature in C"),
    ("Refund requests need the order number", ["refund", "orders"], "Ask for the order number first"),
    ("Flight changes cost a fee on basic economy", ["airline", "fees"], "Tell the user the change fee"),
    ("Snow in the forecast calls for a travel warning", ["weather", "snow"], "Warn about travel when it snows"),
    ("Password resets go through the identity tool", ["account", "password"], "Use reset_password, never email"),
]


def _skillbook() -> Skillbook:
    book = Skillbook()
    for issue, keywords, insight in SKILLS:
        book.add_skill("context", issue, keywords, insight)
    return book


def _recording_model(seen: list[str]) -> FunctionModel:
    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        last = messages[-1].parts[-1]
        if isinstance(last, ToolReturnPart):
            return ModelResponse(parts=[TextPart(f"It is {last.content}.")])
        seen.append(info.instructions or "")
        return ModelResponse(parts=[ToolCallPart("get_weather", {"city": "Oslo"}, tool_call_id="c1")])

    return FunctionModel(model)


def _agent(seen: list[str], skills: SkillInstructions) -> Agent[None, str]:
    agent: Agent[None, str] = Agent(_recording_model(seen), instructions=["You answer weather questions.", skills])

    @agent.tool_plain
    def get_weather(city: str) -> str:
        return "snow, -3C"

    return agent


def test_the_instructions_carry_at_most_the_budget_most_relevant_first() -> None:
    book, embedder = _skillbook(), TestEmbedder()
    prompt = "What is the weather in Oslo, any snow?"
    ranked = retrieve_top_k(book, prompt, top_k=6, embedder=embedder)
    frame = count_tokens(f"{DEFAULT_HEADER}\n") + count_tokens(render_skill_list([]))
    one_skill = frame + count_tokens(render_skill(ranked[0])) + 1
    budget = one_skill + count_tokens(render_skill(ranked[1])) + 1
    skills = SkillInstructions(book, max_tokens=budget, embedder=embedder)
    seen: list[str] = []
    _agent(seen, skills).run_sync(prompt)
    (instructions,) = seen
    assert instructions.startswith("You answer weather questions.")
    block = instructions.split(skills.header + "\n", 1)[1]
    assert count_tokens(f"{skills.header}\n{block}") <= budget
    assert skills.last_skill_ids == tuple(s.id for s in ranked[:2])  # the two most relevant, in that order
    assert block == render_skill_list(ranked[:2])
    small = SkillInstructions(book, max_tokens=one_skill, embedder=embedder)
    assert small.for_prompt(prompt).endswith(render_skill_list(ranked[:1])) and small.last_skill_ids == (ranked[0].id,)
    assert SkillInstructions(book, max_tokens=3, embedder=embedder).for_prompt(prompt) == ""


def test_skills_the_evidence_says_hurt_are_left_out() -> None:
    book, embedder = _skillbook(), TestEmbedder()
    prompt = "Weather in Oslo?"
    best = retrieve_top_k(book, prompt, top_k=1, embedder=embedder)[0]
    book.tag_skill(best.id, -1)
    chosen = retrieve_within_budget(book, prompt, max_tokens=10_000, embedder=embedder)
    assert best.id not in {s.id for s in chosen} and chosen
    book.tag_skill(best.id, 1)
    book.tag_skill(best.id, 1)
    assert retrieve_within_budget(book, prompt, max_tokens=10_000, embedder=embedder)[0].id == best.id
    with pytest.raises(SkillbookError, match="max_tokens must be a positive integer"):
        retrieve_within_budget(book, prompt, max_tokens=0)
    assert retrieve_within_budget(Skillbook(), prompt, max_tokens=10) == []


def test_runs_are_captured_into_a_collection_ace_eval_reads(tmp_path: Path) -> None:
    book, embedder = _skillbook(), TestEmbedder()
    skills = SkillInstructions(book, max_tokens=200, embedder=embedder)
    capture = RunCapture(tmp_path / "traces", source_system="weather-bot", skills=skills)
    agent = _agent([], skills)
    asyncio.run(capture.run(agent, "Weather in Oslo?"))
    result = agent.run_sync("And tomorrow in Oslo?")
    capture.capture(result, reward=1.0, feedback="correct", task_id="oslo")
    manifest, traces = read_collection(tmp_path / "traces")
    assert manifest.source_system == "weather-bot" and manifest.counts.traces == 2 and manifest.counts.successes == 1
    first = traces[0]
    assert first.question == "Weather in Oslo?" and first.num_tool_calls == 1
    assert [m["role"] for m in first.messages] == ["system", "user", "assistant", "tool", "assistant"]
    assert first.skills_in_context and first.metadata["output"] == "It is snow, -3C."
    again = RunCapture(tmp_path / "traces", source_system="weather-bot")
    again.capture(result)
    assert read_collection(tmp_path / "traces")[0].counts.traces == 3
    with pytest.raises(UserError, match="holds traces of source_system 'weather-bot'"):
        RunCapture(tmp_path / "traces", source_system="other")
    assert json.loads((tmp_path / "traces" / "manifest.json").read_text())["counts"]["tasks"] == 1
    with (tmp_path / "traces" / "traces.jsonl").open("ab") as f:
        f.write(b'{"trace_id": "cut')  # a process killed mid-write
    with pytest.raises(UserError, match="its last line was cut off\\): run `ace-eval collection repair"):
        RunCapture(tmp_path / "traces", source_system="weather-bot")


def test_retries_become_tool_results_or_user_turns() -> None:
    history: list[ModelMessage] = [
        ModelRequest(parts=[UserPromptPart("Weather?")], instructions="Be brief."),
        ModelResponse(parts=[ToolCallPart("get_weather", {"town": "Oslo"}, tool_call_id="c1")]),
        ModelRequest(
            parts=[
                ToolReturnPart(
                    "get_weather",
                    "city is required",
                    tool_call_id="c1",
                    outcome="retried",
                    retry=RetryInfo("validation_error"),
                )
            ]
        ),
        ModelRequest(parts=[RetryFeedbackPart("Answer in text", retry=RetryInfo("no_output"))]),
    ]
    out = chat_messages(history)
    assert out[0] == {"role": "system", "content": "Be brief."}
    assert out[3]["role"] == "tool" and "city is required" in out[3]["content"]
    assert out[4]["role"] == "user" and "Answer in text" in out[4]["content"]
