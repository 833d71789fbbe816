"""Per-role model settings: built-in defaults, environment overrides, and refusals that name the variable."""

from __future__ import annotations

import pytest

from ace.llm import ROLES, ModelConfigError, RoleSettings, role_settings


def test_every_role_has_defaults() -> None:
    for role in ROLES:
        settings = RoleSettings.for_role(role)
        assert settings.model is None
        assert settings.max_tokens is not None
        assert settings.max_retries >= 1
    assert RoleSettings.for_role("user").temperature == 1.0
    assert RoleSettings.for_role("skill_manager").temperature == 0.0
    assert RoleSettings.for_role("user").prompt_caching is False
    assert RoleSettings.for_role("skill_manager").prompt_caching is True


def test_environment_overrides_the_role_defaults() -> None:
    env = {
        "ACE_SKILL_MANAGER_MODEL": " bedrock/us.anthropic.claude-haiku-4-5-20251001-v1:0 ",
        "ACE_SKILL_MANAGER_TEMPERATURE": "0.3",
        "ACE_SKILL_MANAGER_MAX_TOKENS": "2000",
        "ACE_SKILL_MANAGER_TIMEOUT": "45",
        "ACE_SKILL_MANAGER_MAX_RETRIES": "7",
        "ACE_SKILL_MANAGER_PROMPT_CACHING": "off",
    }
    settings = role_settings("skill_manager", env)
    assert settings == RoleSettings(
        model="bedrock/us.anthropic.claude-haiku-4-5-20251001-v1:0",
        temperature=0.3,
        max_tokens=2000,
        timeout=45.0,
        max_retries=7,
        prompt_caching=False,
    )
    # Other roles are untouched by the skill manager's variables.
    assert role_settings("reflector", env) == RoleSettings.for_role("reflector")


def test_ace_model_is_the_fallback_and_the_role_variable_wins() -> None:
    env = {"ACE_MODEL": "openai/gpt-4.1-mini", "ACE_AGENT_MODEL": "anthropic/claude-haiku-4-5"}
    assert role_settings("agent", env).model == "anthropic/claude-haiku-4-5"
    assert role_settings("dedup", env).model == "openai/gpt-4.1-mini"
    assert role_settings("dedup", {}).model is None
    assert role_settings("dedup", {"ACE_DEDUP_TEMPERATURE": "  "}).temperature == 0.0  # blank means unset


@pytest.mark.parametrize(
    ("variable", "value"),
    [
        ("ACE_REFLECTOR_TEMPERATURE", "warm"),
        ("ACE_REFLECTOR_MAX_TOKENS", "4k"),
        ("ACE_REFLECTOR_TIMEOUT", "soon"),
        ("ACE_REFLECTOR_MAX_RETRIES", "2.5"),
        ("ACE_REFLECTOR_PROMPT_CACHING", "maybe"),
    ],
)
def test_a_malformed_variable_is_refused_by_name(variable: str, value: str) -> None:
    with pytest.raises(ModelConfigError, match=variable):
        role_settings("reflector", {variable: value})


def test_out_of_range_values_are_refused() -> None:
    with pytest.raises(ModelConfigError, match="temperature"):
        role_settings("agent", {"ACE_AGENT_TEMPERATURE": "3"})
    with pytest.raises(ModelConfigError, match="max_retries"):
        RoleSettings(max_retries=-1)
    with pytest.raises(ModelConfigError, match="timeout"):
        RoleSettings(timeout=0)
    with pytest.raises(ModelConfigError, match="max_tokens"):
        RoleSettings(max_tokens=0)
    with pytest.raises(ModelConfigError, match="Unknown role"):
        RoleSettings.from_env("planner", {})  # type: ignore[arg-type]


def test_booleans_accept_the_usual_spellings() -> None:
    for raw, expected in [("1", True), ("Yes", True), ("true", True), ("0", False), ("NO", False), ("off", False)]:
        assert role_settings("agent", {"ACE_AGENT_PROMPT_CACHING": raw}).prompt_caching is expected


def test_model_settings_leave_unset_values_out() -> None:
    assert RoleSettings(timeout=30, max_retries=2).to_model_settings() == {"timeout": 30, "max_retries": 2}
    assert RoleSettings(temperature=0.5, max_tokens=100).to_model_settings() == {
        "timeout": 120.0,
        "max_retries": 4,
        "temperature": 0.5,
        "max_tokens": 100,
    }
