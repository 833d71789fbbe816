"""`LiteLLMModel` against a fake `litellm.acompletion`: requests and responses mapped both ways, cost, retries."""

from __future__ import annotations

import json
from collections.abc import Iterator
from decimal import Decimal
from types import ModuleType
from typing import Any

import anyio
import pytest
from _litellm_fakes import FakeCompletion, completion, install
from pydantic import BaseModel
from pydantic_ai import Agent, ModelRetry, NativeOutput
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    SystemPromptPart,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models import ModelRequestParameters, override_allow_model_requests
from pydantic_ai.settings import ModelSettings
from pydantic_ai.tools import ToolDefinition

from ace.llm import LiteLLMModel, ModelRequestError, RetryPolicy, import_litellm
from ace.reflector.recursive.config import RecursiveConfig


@pytest.fixture(scope="module")
def litellm() -> ModuleType:
    return import_litellm()


@pytest.fixture(autouse=True)
def _allow_requests() -> Iterator[None]:
    with override_allow_model_requests(True):
        yield


ADD_TOOL = ToolDefinition(
    name="add",
    description="Add two integers.",
    parameters_json_schema={
        "type": "object",
        "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
        "required": ["a", "b"],
        "additionalProperties": False,
    },
)


def request(model: LiteLLMModel, messages: list[ModelMessage], params: ModelRequestParameters) -> ModelResponse:
    async def main() -> ModelResponse:
        return await model.request(messages, None, params)

    return anyio.run(main)


def test_request_and_response_are_mapped_both_ways(monkeypatch: pytest.MonkeyPatch, litellm: ModuleType) -> None:
    usage = {
        "prompt_tokens": 1200,
        "completion_tokens": 30,
        "total_tokens": 1230,
        "prompt_tokens_details": {"cached_tokens": 1000},
    }
    fake = install(
        monkeypatch,
        litellm,
        [completion(litellm, content="Let me add.", tool_calls=[("call_9", "add", {"a": 2, "b": 3})], usage=usage)],
    )
    model = LiteLLMModel(
        "openai/gpt-4.1-mini",
        settings={"temperature": 0.1, "max_tokens": 256, "timeout": 30.0, "stop_sequences": ["END"]},
    )
    history: list[ModelMessage] = [
        ModelRequest(parts=[SystemPromptPart("You add numbers."), UserPromptPart("2+3?")], instructions="Be brief."),
        ModelResponse(parts=[ToolCallPart("add", {"a": 2, "b": "x"}, tool_call_id="call_1")]),
        ModelRequest(
            parts=[ToolReturnPart("add", "b must be an integer", tool_call_id="call_1", outcome="retried")],
            instructions="Be brief.",
        ),
    ]
    response = request(model, history, ModelRequestParameters(function_tools=[ADD_TOOL], allow_text_output=True))

    (kwargs,) = fake.calls
    assert kwargs["model"] == "openai/gpt-4.1-mini"
    assert kwargs["messages"] == [
        {"role": "system", "content": "You add numbers."},
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "2+3?"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "call_1", "type": "function", "function": {"name": "add", "arguments": '{"a":2,"b":"x"}'}}
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": '{"error":"b must be an integer"}'},
    ]
    assert kwargs["tools"] == [
        {
            "type": "function",
            "function": {
                "name": "add",
                "description": "Add two integers.",
                "parameters": ADD_TOOL.parameters_json_schema,
            },
        }
    ]
    assert kwargs["tool_choice"] == "auto"
    assert kwargs["temperature"] == 0.1
    assert kwargs["max_tokens"] == 256
    assert kwargs["timeout"] == 30.0
    assert kwargs["stop"] == ["END"]
    assert kwargs["num_retries"] == 0
    assert kwargs["max_retries"] == 0

    text, call = response.parts
    assert text == TextPart(content="Let me add.")
    assert isinstance(call, ToolCallPart)
    assert (call.tool_name, call.args_as_dict(), call.tool_call_id) == ("add", {"a": 2, "b": 3}, "call_9")
    assert response.usage.input_tokens == 1200
    assert response.usage.output_tokens == 30
    assert response.usage.cache_read_tokens == 1000
    assert response.model_name == "gpt-4.1-mini"
    assert response.provider_name == "openai"
    assert response.provider_response_id == "chatcmpl-1"
    assert response.finish_reason == "tool_call"
    expected_cost = litellm.completion_cost(
        completion_response=fake_response_of(fake, litellm), model="openai/gpt-4.1-mini"
    )
    assert response.usage.cost == Decimal(str(expected_cost))
    assert response.usage.cost is not None and response.usage.cost > 0


def fake_response_of(fake: FakeCompletion, litellm: ModuleType) -> Any:
    outcome = fake.outcomes[0]
    assert isinstance(outcome, litellm.ModelResponse)
    return outcome


def test_anthropic_cache_tokens_and_unknown_model_cost(monkeypatch: pytest.MonkeyPatch, litellm: ModuleType) -> None:
    usage = {
        "prompt_tokens": 500,
        "completion_tokens": 10,
        "total_tokens": 510,
        "cache_creation_input_tokens": 300,
        "cache_read_input_tokens": 150,
    }
    install(monkeypatch, litellm, [completion(litellm, content="hi", usage=usage, model="my-finetune")])
    response = request(
        LiteLLMModel("hosted_vllm/my-finetune"),
        [ModelRequest(parts=[UserPromptPart("hello")])],
        ModelRequestParameters(),
    )
    assert response.parts == [TextPart(content="hi")]
    assert (response.usage.cache_write_tokens, response.usage.cache_read_tokens) == (300, 150)
    assert response.usage.input_tokens == 500
    assert response.usage.cost is None  # litellm cannot price it: unknown, not zero
    assert response.finish_reason == "stop"


def test_prompt_caching_marks_the_system_prompt_for_claude_only(
    monkeypatch: pytest.MonkeyPatch, litellm: ModuleType
) -> None:
    fake = install(monkeypatch, litellm, [completion(litellm, content="ok", model="claude-haiku-4-5")])
    messages: list[ModelMessage] = [ModelRequest(parts=[SystemPromptPart("Static rules."), UserPromptPart("go")])]
    claude = LiteLLMModel("bedrock/us.anthropic.claude-haiku-4-5-20251001-v1:0", prompt_caching=True)
    request(claude, messages, ModelRequestParameters())
    assert fake.calls[0]["messages"][0] == {
        "role": "system",
        "content": [{"type": "text", "text": "Static rules.", "cache_control": {"type": "ephemeral"}}],
    }
    request(LiteLLMModel("openai/gpt-4.1-mini", prompt_caching=True), messages, ModelRequestParameters())
    assert fake.calls[1]["messages"][0] == {"role": "system", "content": "Static rules."}
    request(LiteLLMModel("anthropic/claude-haiku-4-5", prompt_caching=False), messages, ModelRequestParameters())
    assert fake.calls[2]["messages"][0] == {"role": "system", "content": "Static rules."}


@pytest.mark.parametrize(
    ("cache", "expected_system", "expected_last"),
    [
        (True, {"type": "ephemeral"}, {"type": "ephemeral"}),
        ("1h", {"type": "ephemeral", "ttl": "1h"}, {"type": "ephemeral", "ttl": "1h"}),
        ("30m", {"type": "ephemeral", "ttl": "5m"}, {"type": "ephemeral", "ttl": "5m"}),  # snapped down
        ({"retention": "12h", "messages": False}, {"type": "ephemeral", "ttl": "1h"}, None),
        (False, None, None),  # off, even though the model caches its system prompt by default
    ],
)
def test_the_unified_cache_setting_places_markers_on_prefix_and_conversation(
    monkeypatch: pytest.MonkeyPatch, litellm: ModuleType, cache: Any, expected_system: Any, expected_last: Any
) -> None:
    """`ModelSettings["cache"]` (what `RecursiveConfig.cache_prompts` / `cache_ttl` set) reaches the wire."""
    fake = install(monkeypatch, litellm, [completion(litellm, content="ok", model="claude-haiku-4-5")])
    messages: list[ModelMessage] = [
        ModelRequest(parts=[SystemPromptPart("Static rules."), UserPromptPart("go")]),
        ModelResponse(parts=[TextPart("first answer")]),
        ModelRequest(parts=[UserPromptPart("and now?")]),
    ]
    claude = LiteLLMModel("bedrock/us.anthropic.claude-haiku-4-5-20251001-v1:0", prompt_caching=True)

    async def main() -> None:
        await claude.request(messages, ModelSettings(cache=cache), ModelRequestParameters())

    anyio.run(main)
    sent = fake.calls[0]["messages"]
    system, last = sent[0]["content"], sent[-1]["content"]
    if expected_system is None:
        assert system == "Static rules."
    else:
        assert system == [{"type": "text", "text": "Static rules.", "cache_control": expected_system}]
    if expected_last is None:
        assert last == "and now?"
    else:
        assert last == [{"type": "text", "text": "and now?", "cache_control": expected_last}]
    assert sent[1]["content"] == "go" and sent[2]["content"] == "first answer"  # markers only where asked


def test_recursive_reflector_cache_config_is_what_the_model_receives() -> None:
    model = LiteLLMModel("anthropic/claude-haiku-4-5")

    def marks(cache: Any) -> Any:
        _, params = model.prepare_request(ModelSettings(cache=cache), ModelRequestParameters())
        return model.cache_marks(params.cache)

    on = marks(RecursiveConfig(cache_ttl=3600).cache_setting)
    assert on is not None and (on.prefix, on.conversation, on.ttl) == (True, True, "1h")
    assert marks(RecursiveConfig(cache_ttl="12h").cache_setting).ttl == "1h"  # snapped down to Anthropic's tier
    assert marks(RecursiveConfig(cache_prompts=False).cache_setting) is None
    openai = LiteLLMModel("openai/gpt-4.1-mini")  # caches implicitly: nothing to mark
    assert (
        openai.cache_marks(openai.prepare_request(ModelSettings(cache=True), ModelRequestParameters())[1].cache) is None
    )


class Answer(BaseModel):
    value: int


def test_agent_runs_a_tool_call_then_a_final_answer(monkeypatch: pytest.MonkeyPatch, litellm: ModuleType) -> None:
    fake = install(
        monkeypatch,
        litellm,
        [
            completion(litellm, tool_calls=[("call_a", "add", {"a": 5, "b": 2})]),
            completion(litellm, tool_calls=[("call_b", "add", {"a": 2, "b": 3})]),
            completion(litellm, tool_calls=[("call_c", "final_result", {"value": 5})]),
        ],
    )
    agent = Agent(LiteLLMModel("openai/gpt-4.1-mini"), output_type=Answer, instructions="Use the tool.")

    @agent.tool_plain
    def add(a: int, b: int) -> int:
        """Add two integers."""
        if a == 5:
            raise ModelRetry("a must not be 5")
        return a + b

    result = agent.run_sync("2+3?")
    assert result.output == Answer(value=5)
    assert len(fake.calls) == 3
    assert [tool["function"]["name"] for tool in fake.calls[0]["tools"]] == ["add", "final_result"]
    assert fake.calls[0]["tool_choice"] == "required"  # structured output: the run must end in a tool call
    # The refused call goes back as a tool message with the reason; the successful one with its result.
    assert fake.calls[1]["messages"][-1] == {
        "role": "tool",
        "tool_call_id": "call_a",
        "content": '{"error":"a must not be 5"}',
    }
    assert fake.calls[2]["messages"][-1] == {"role": "tool", "tool_call_id": "call_b", "content": "5"}
    usage = result.usage
    assert (usage.requests, usage.input_tokens, usage.output_tokens) == (3, 300, 60)
    assert usage.cost is not None and usage.cost > 0


def test_streamed_runs_replay_the_complete_response(monkeypatch: pytest.MonkeyPatch, litellm: ModuleType) -> None:
    install(monkeypatch, litellm, [completion(litellm, content="four")])
    agent = Agent(LiteLLMModel("openai/gpt-4.1-mini"))

    async def main() -> list[str]:
        async with agent.run_stream("2+2?") as stream:
            return [chunk async for chunk in stream.stream_output(debounce_by=None)]

    assert anyio.run(main)[-1] == "four"


def test_native_output_asks_for_a_json_schema_response(monkeypatch: pytest.MonkeyPatch, litellm: ModuleType) -> None:
    fake = install(monkeypatch, litellm, [completion(litellm, content='{"value": 4}')])
    agent = Agent(LiteLLMModel("openai/gpt-4.1-mini"), output_type=NativeOutput(Answer))
    assert agent.run_sync("2+2?").output == Answer(value=4)
    response_format = fake.calls[0]["response_format"]
    assert response_format["type"] == "json_schema"
    assert response_format["json_schema"]["schema"]["properties"] == {"value": {"type": "integer"}}
    assert "tools" not in fake.calls[0]


def test_rate_limits_are_retried_through_the_model(monkeypatch: pytest.MonkeyPatch, litellm: ModuleType) -> None:
    slept: list[float] = []

    async def sleep(seconds: float) -> None:
        slept.append(seconds)

    limited = litellm.RateLimitError(message="slow down", llm_provider="openai", model="gpt-4.1-mini")
    waited = litellm.RateLimitError(
        message="slow down", llm_provider="openai", model="gpt-4.1-mini", headers={"retry-after": "3"}
    )
    fake = install(monkeypatch, litellm, [limited, waited, completion(litellm, content="done")])
    model = LiteLLMModel("openai/gpt-4.1-mini", retry=RetryPolicy(jitter=0.0, sleep=sleep))
    assert Agent(model).run_sync("go").output == "done"
    assert len(fake.calls) == 3
    assert slept == [1.0, 3.0]  # backoff, then the provider's Retry-After


def test_bad_requests_are_not_retried(monkeypatch: pytest.MonkeyPatch, litellm: ModuleType) -> None:
    slept: list[float] = []

    async def sleep(seconds: float) -> None:
        slept.append(seconds)

    for error in [
        litellm.AuthenticationError(message="invalid x-api-key", llm_provider="anthropic", model="claude"),
        litellm.BadRequestError(message="max_tokens too large", llm_provider="anthropic", model="claude"),
    ]:
        fake = install(monkeypatch, litellm, [error, completion(litellm, content="never")])
        model = LiteLLMModel("anthropic/claude-haiku-4-5", retry=RetryPolicy(sleep=sleep))
        with pytest.raises(ModelRequestError, match="anthropic/claude-haiku-4-5") as caught:
            Agent(model).run_sync("go")
        assert len(fake.calls) == 1
        assert caught.value.__cause__ is error
    assert slept == []


def test_after_max_retries_the_error_names_model_and_fix(monkeypatch: pytest.MonkeyPatch, litellm: ModuleType) -> None:
    slept: list[float] = []

    async def sleep(seconds: float) -> None:
        slept.append(seconds)

    limited = litellm.RateLimitError(message="slow down", llm_provider="bedrock", model="claude")
    fake = install(monkeypatch, litellm, [limited])
    model = LiteLLMModel(
        "bedrock/us.anthropic.claude-haiku-4-5-20251001-v1:0",
        settings={"max_retries": 2},
        retry=RetryPolicy(max_retries=9, sleep=sleep),
    )
    with pytest.raises(ModelRequestError) as caught:
        Agent(model).run_sync("go")
    assert len(fake.calls) == 3  # the request's max_retries setting wins over the policy's
    assert len(slept) == 2
    message = str(caught.value)
    assert "bedrock/us.anthropic.claude-haiku-4-5-20251001-v1:0" in message
    assert "MAX_RETRIES" in message
    assert "--max-workers" in message
    assert caught.value.attempts == 3


def test_requests_are_refused_when_model_requests_are_disallowed(
    monkeypatch: pytest.MonkeyPatch, litellm: ModuleType
) -> None:
    fake = install(monkeypatch, litellm, [completion(litellm, content="never")])
    with override_allow_model_requests(False), pytest.raises(RuntimeError, match="ALLOW_MODEL_REQUESTS"):
        Agent(LiteLLMModel("openai/gpt-4.1-mini")).run_sync("go")
    assert fake.calls == []


def test_endpoint_and_context_window(monkeypatch: pytest.MonkeyPatch, litellm: ModuleType) -> None:
    fake = install(monkeypatch, litellm, [completion(litellm, content="hi", model="llama3")])
    model = LiteLLMModel("ollama/llama3", api_base="http://localhost:11434", api_key="secret")
    request(model, [ModelRequest(parts=[UserPromptPart("hello")])], ModelRequestParameters())
    assert fake.calls[0]["api_base"] == "http://localhost:11434"
    assert fake.calls[0]["api_key"] == "secret"
    assert "tools" not in fake.calls[0] and "tool_choice" not in fake.calls[0]
    known = LiteLLMModel("openai/gpt-4.1-mini").context_window
    assert known == litellm.get_model_info("openai/gpt-4.1-mini")["max_input_tokens"]
    assert known is not None and known > 100_000
    assert LiteLLMModel("hosted_vllm/my-finetune").context_window is None


def test_local_decoding_hints_are_not_sent_to_providers() -> None:
    from ace.llm import DECODE_REQUIRED
    from ace.llm._litellm_mapping import map_tools

    schema = {
        "type": "object",
        "properties": {
            "issue": {"type": "string"},
            "insight": {"anyOf": [{"type": "string"}, {"type": "null"}], "default": None, DECODE_REQUIRED: True},
        },
        "required": ["issue"],
    }
    tool = ToolDefinition(name="add_skill", parameters_json_schema=schema)
    tools, _ = map_tools(ModelRequestParameters(function_tools=[tool]))
    sent = tools[0]["function"]["parameters"]
    assert DECODE_REQUIRED not in json.dumps(sent)
    assert sent["properties"]["insight"] == {"anyOf": [{"type": "string"}, {"type": "null"}], "default": None}
    assert DECODE_REQUIRED in schema["properties"]["insight"]  # the tool's own schema is untouched


def test_text_hints_are_not_sent_to_providers_at_any_depth() -> None:
    from ace.llm import TEXT_HINT
    from ace.llm._litellm_mapping import map_tools
    from ace.reflector.reflection import Reflection
    from ace.skill_manager.tools import SM_TOOLS

    add_skill = next(tool for tool in SM_TOOLS if tool.name == "add_skill")
    output = ToolDefinition(name="final_result", parameters_json_schema=Reflection.model_json_schema(), kind="output")
    assert TEXT_HINT in json.dumps(add_skill.tool_def.parameters_json_schema)  # issue, insight, keyword items
    tools, _ = map_tools(ModelRequestParameters(function_tools=[add_skill.tool_def], output_tools=[output]))
    sent = json.dumps(tools)
    assert TEXT_HINT not in sent and "x-ace" not in sent
    assert [t["function"]["name"] for t in tools] == ["add_skill", "final_result"]
    keywords = tools[0]["function"]["parameters"]["properties"]["keywords"]
    assert keywords["items"] == {"type": "string"} and keywords["minItems"] == 1
