"""Model-string routing: every example string gets the right model class, and nothing is called or imported."""

from __future__ import annotations

import subprocess
import sys

import pytest
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.models.test import TestModel

from ace.llm import (
    LiteLLMModel,
    LocalModel,
    ModelConfigError,
    RoleSettings,
    infer_model,
    to_litellm_string,
)
from ace.llm.routing import suggest_model

HOSTED = [
    ("bedrock/us.anthropic.claude-haiku-4-5-20251001-v1:0", "bedrock"),
    ("openai/gpt-4.1-mini", "openai"),
    ("anthropic/claude-sonnet-4-5-20250929", "anthropic"),
    ("ollama/llama3", "ollama"),
    ("ollama/llama3:8b", "ollama"),
    ("hosted_vllm/meta-llama/Llama-3.1-8B-Instruct", "hosted_vllm"),
    ("gpt-4.1-mini", "litellm"),
]


@pytest.mark.parametrize(("name", "system"), HOSTED)
def test_hosted_strings_become_litellm_models_untouched(name: str, system: str) -> None:
    model = infer_model(name)
    assert isinstance(model, LiteLLMModel)
    assert model.model_name == name
    assert model.system == system


@pytest.mark.parametrize("name", [None, "local", "default", "smollm2", " Local "])
def test_local_aliases_and_none_are_the_embedded_model(name: str | None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ACE_MODEL", raising=False)
    model = infer_model(name)
    assert isinstance(model, LocalModel)
    assert model.model_name == "SmolLM2-135M-Instruct"
    assert model.system == "llama_cpp"


def test_test_string_is_pydantic_ai_test_model() -> None:
    assert isinstance(infer_model("test"), TestModel)


def test_a_model_instance_is_returned_as_it_is() -> None:
    def reply(messages: object, info: AgentInfo) -> object:
        raise AssertionError("not called")

    model = FunctionModel(reply)  # type: ignore[arg-type]
    assert infer_model(model, role="agent") is model


def test_pydantic_ai_colon_spelling_is_translated_only_for_known_providers() -> None:
    assert to_litellm_string("openai:gpt-4.1-mini") == "openai/gpt-4.1-mini"
    assert to_litellm_string("bedrock:us.anthropic.claude-haiku-4-5-20251001-v1:0") == (
        "bedrock/us.anthropic.claude-haiku-4-5-20251001-v1:0"
    )
    assert to_litellm_string("bedrock/us.anthropic.claude-haiku-4-5-20251001-v1:0") == (
        "bedrock/us.anthropic.claude-haiku-4-5-20251001-v1:0"
    )
    assert to_litellm_string("llama3:8b") == "llama3:8b"
    model = infer_model("anthropic:claude-haiku-4-5")
    assert isinstance(model, LiteLLMModel)
    assert model.model_name == "anthropic/claude-haiku-4-5"


@pytest.mark.parametrize("name", ["", "   ", "function:my_fn"])
def test_unusable_strings_are_refused_with_the_fix(name: str) -> None:
    with pytest.raises(ModelConfigError, match="pass"):
        infer_model(name)


def test_role_settings_are_applied(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ACE_SKILL_MANAGER_MODEL", "bedrock/us.anthropic.claude-haiku-4-5-20251001-v1:0")
    monkeypatch.setenv("ACE_SKILL_MANAGER_MAX_RETRIES", "6")
    model = infer_model(None, role="skill_manager")
    assert isinstance(model, LiteLLMModel)
    assert model.model_name == "bedrock/us.anthropic.claude-haiku-4-5-20251001-v1:0"
    assert model.retry_policy.max_retries == 6
    assert model.prompt_caching is True
    assert model.settings == {"timeout": 300.0, "max_retries": 6, "temperature": 0.0, "max_tokens": 4096}
    # An explicit string beats the environment; caching is only switched on where litellm turns it into caching.
    explicit = infer_model("openai/gpt-4.1-mini", role="skill_manager")
    assert isinstance(explicit, LiteLLMModel)
    assert explicit.model_name == "openai/gpt-4.1-mini"
    assert explicit.prompt_caching is False


def test_explicit_settings_win_over_the_role(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ACE_AGENT_MODEL", "openai/gpt-4.1-mini")
    model = infer_model(None, role="agent", settings=RoleSettings(model="ollama/llama3", temperature=0.7))
    assert isinstance(model, LiteLLMModel)
    assert model.model_name == "ollama/llama3"
    assert model.settings is not None
    assert model.settings.get("temperature") == 0.7


def test_local_model_gets_a_small_token_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ACE_MODEL", raising=False)
    monkeypatch.delenv("ACE_USER_MODEL", raising=False)
    model = infer_model(None, role="user")
    assert isinstance(model, LocalModel)
    assert model.settings == {"max_tokens": 1024, "temperature": 1.0, "framing_announcement": "never"}


def test_constructing_models_imports_neither_litellm_nor_llama_cpp() -> None:
    code = (
        "import sys\n"
        "from ace.llm import infer_model\n"
        "for name in ['bedrock/us.anthropic.claude-haiku-4-5-20251001-v1:0', 'ollama/llama3', 'local', None]:\n"
        "    infer_model(name, role='skill_manager')\n"
        "print(sorted(m for m in ('litellm', 'llama_cpp') if m in sys.modules))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert done.stdout.strip() == "[]"


@pytest.mark.parametrize(
    ("model", "guess"),
    [
        ("lcoal", "local"),
        ("locl", "local"),
        ("defualt", "default"),
        ("smollm", "smollm2"),
        ("opnai/gpt-4o", "openai/gpt-4o"),
    ],
)
def test_a_model_string_one_edit_from_a_known_one_gets_a_suggestion(model: str, guess: str) -> None:
    assert suggest_model(model) == guess
    if "/" not in model:
        with pytest.raises(ModelConfigError, match=f"unknown model '{model}': did you mean '{guess}'"):
            infer_model(model)


@pytest.mark.parametrize("model", ["local", "openai/gpt-4o", "xai/grok-4", "gpt-4o", "lcl"])
def test_no_suggestion_for_known_or_distant_strings(model: str) -> None:
    assert suggest_model(model) is None
