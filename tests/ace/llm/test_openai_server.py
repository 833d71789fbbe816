"""`OpenAIServer`: litellm's `openai/` provider talks to a scripted pydantic-ai model on 127.0.0.1, tools included.

The wire format is checked on both sides: what the model sees (pydantic-ai messages, tools, settings) for what
litellm sent, and what litellm returns for what the model answered. Each test makes a fixed number of requests.
"""

from __future__ import annotations

import json
import socket
import urllib.error
import urllib.request
from typing import Any

import litellm
import pytest
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
from pydantic_ai.models.function import AgentInfo, FunctionModel

from ace.llm.openai_server import LOOPBACK, PLACEHOLDER_KEY, OpenAIServer

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_user",
            "description": "Look up a user.",
            "parameters": {"type": "object", "properties": {"user_id": {"type": "string"}}, "required": ["user_id"]},
        },
    },
    {"type": "function", "function": {"name": "list_tasks", "parameters": {"type": "object", "properties": {}}}},
]
CONVERSATION: list[dict[str, Any]] = [
    {"role": "system", "content": "You help users."},
    {"role": "user", "content": "I am user_7."},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "get_user", "arguments": '{"user_id": "user_7"}'}}
        ],
    },
    {"role": "tool", "tool_call_id": "call_1", "content": '{"name": "Mia"}'},
]


class Recorder:
    """A scripted model that records what it was asked and answers with the next of `replies`."""

    def __init__(self, *replies: ModelResponse) -> None:
        self.replies = list(replies)
        self.seen: list[tuple[list[ModelMessage], AgentInfo]] = []

    def __call__(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        self.seen.append((messages, info))
        return self.replies.pop(0)


def complete(server: OpenAIServer, model: str, **kwargs: Any) -> Any:
    return litellm.completion(
        model=f"openai/{model}", api_base=server.base_url, api_key=PLACEHOLDER_KEY, num_retries=0, **kwargs
    )


def post(server: OpenAIServer, body: bytes, path: str = "/v1/chat/completions") -> tuple[int, dict[str, Any]]:
    host, port = server.address
    request = urllib.request.Request(f"http://{host}:{port}{path}", data=body, method="POST")
    request.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def test_a_tool_call_round_trip_through_litellm() -> None:
    script = Recorder(ModelResponse(parts=[ToolCallPart("list_tasks", {"status": "open"}, "call_2")]))
    with OpenAIServer({"agent": FunctionModel(script, model_name="scripted")}) as server:
        assert server.address[0] == LOOPBACK
        reply = complete(server, "agent", messages=CONVERSATION, tools=TOOLS, temperature=0.0, max_tokens=64)
        assert server.requests == 1
    # What the model saw: the conversation as pydantic-ai messages, the tools, the settings.
    ((messages, info),) = script.seen
    request, response, returned = messages
    assert isinstance(request, ModelRequest) and isinstance(returned, ModelRequest)
    assert [type(p) for p in request.parts] == [SystemPromptPart, UserPromptPart]
    assert request.parts[1].content == "I am user_7."
    call = response.parts[0]
    assert isinstance(response, ModelResponse) and isinstance(call, ToolCallPart)
    assert (call.tool_name, call.args_as_dict(), call.tool_call_id) == ("get_user", {"user_id": "user_7"}, "call_1")
    tool_return = returned.parts[0]
    assert isinstance(tool_return, ToolReturnPart)
    assert (tool_return.tool_name, tool_return.tool_call_id, tool_return.content) == (
        "get_user",
        "call_1",
        '{"name": "Mia"}',
    )
    assert [t.name for t in info.function_tools] == ["get_user", "list_tasks"]
    assert info.function_tools[0].parameters_json_schema["required"] == ["user_id"]
    assert info.function_tools[0].description == "Look up a user."
    assert info.allow_text_output  # tool_choice unset: auto
    assert info.model_settings is not None
    assert (info.model_settings.get("temperature"), info.model_settings.get("max_tokens")) == (0.0, 64)
    # What litellm returned: an OpenAI tool call with JSON arguments.
    choice = reply.choices[0]
    assert choice.finish_reason == "tool_calls" and choice.message.content is None
    (tool_call,) = choice.message.tool_calls
    assert (tool_call.id, tool_call.function.name) == ("call_2", "list_tasks")
    assert json.loads(tool_call.function.arguments) == {"status": "open"}
    assert reply.model == "scripted" and reply.usage.prompt_tokens > 0


def test_text_answers_tool_choice_and_stop() -> None:
    script = Recorder(ModelResponse(parts=[TextPart("Hello Mia.")]), ModelResponse(parts=[TextPart("Bye.")]))
    with OpenAIServer({"user": FunctionModel(script)}) as server:
        first = complete(server, "user", messages=CONVERSATION, tools=TOOLS, tool_choice="required", stop=["###"])
        second = complete(server, "user", messages=CONVERSATION[:2], tools=TOOLS, tool_choice="none")
    assert first.choices[0].message.content == "Hello Mia." and first.choices[0].finish_reason == "stop"
    assert second.choices[0].message.tool_calls is None
    (_, required), (_, none) = script.seen
    assert not required.allow_text_output and len(required.function_tools) == 2
    assert required.model_settings is not None and required.model_settings.get("stop_sequences") == ["###"]
    assert none.allow_text_output and none.function_tools == []


def test_a_call_with_arguments_that_are_no_json_object_arrives_as_text() -> None:
    """A client never receives arguments it cannot decode: tau2 would crash on them instead of failing the turn."""
    script = Recorder(
        ModelResponse(parts=[ToolCallPart("get_user", '{"user_id": "12345')]),
        ModelResponse(parts=[ToolCallPart("get_user", "[1, 2]")]),
    )
    with OpenAIServer({"agent": FunctionModel(script)}) as server:
        cut = complete(server, "agent", messages=CONVERSATION[:2], tools=TOOLS)
        listed = complete(server, "agent", messages=CONVERSATION[:2], tools=TOOLS)
    assert cut.choices[0].message.tool_calls is None
    assert cut.choices[0].message.content == 'get_user({"user_id": "12345)'
    assert listed.choices[0].message.content == "get_user([1, 2])"


def test_bad_requests_get_openai_errors_and_the_server_goes_on() -> None:
    def broken(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        raise RuntimeError("the runtime fell over")

    script = Recorder(ModelResponse(parts=[TextPart("still here")]))
    with OpenAIServer({"agent": FunctionModel(script), "broken": FunctionModel(broken)}, max_body=4096) as server:
        base = {"messages": [{"role": "user", "content": "hi"}]}
        cases = {
            "unknown": post(server, json.dumps({**base, "model": "gpt-9"}).encode()),
            "stream": post(server, json.dumps({**base, "model": "agent", "stream": True}).encode()),
            "role": post(server, json.dumps({"model": "agent", "messages": [{"role": "robot"}]}).encode()),
            "image": post(
                server,
                json.dumps(
                    {"model": "agent", "messages": [{"role": "user", "content": [{"type": "image_url"}]}]}
                ).encode(),
            ),
            "no messages": post(server, json.dumps({"model": "agent", "messages": []}).encode()),
            "not json": post(server, b"{model"),
            "too large": post(server, json.dumps({**base, "model": "agent", "pad": "x" * 5000}).encode()),
            "route": post(server, b"{}", path="/v1/embeddings"),
            "failing model": post(server, json.dumps({**base, "model": "broken"}).encode()),
        }
        status, answer = post(server, json.dumps({**base, "model": "agent"}).encode())
    assert {name: status for name, (status, _) in cases.items()} == {
        "unknown": 404,
        "stream": 400,
        "role": 400,
        "image": 400,
        "no messages": 400,
        "not json": 400,
        "too large": 413,
        "route": 404,
        "failing model": 500,
    }
    assert cases["unknown"][1]["error"]["message"] == "model 'gpt-9' is not served here; served: agent, broken"
    assert "messages[0].role" in cases["role"][1]["error"]["message"]
    assert "messages[0].content[0]: only text parts" in cases["image"][1]["error"]["message"]
    assert cases["failing model"][1]["error"]["message"] == "RuntimeError: the runtime fell over"
    assert status == 200 and answer["choices"][0]["message"]["content"] == "still here"


def test_it_listens_on_loopback_only_and_closes_its_port_when_stopped() -> None:
    server = OpenAIServer({"agent": FunctionModel(Recorder())})
    server.start()
    host, port = server.address
    assert host == "127.0.0.1" and server.base_url == f"http://127.0.0.1:{port}/v1"
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/v1/models", timeout=10) as response:
        assert [m["id"] for m in json.loads(response.read())["data"]] == ["agent"]
    server.stop()
    with pytest.raises(ConnectionRefusedError), socket.create_connection((host, port), timeout=2):
        pass
    with pytest.raises(RuntimeError, match="not running"):
        _ = server.address
