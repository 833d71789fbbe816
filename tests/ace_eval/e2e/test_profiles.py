"""Model profiles: the embedded model's roles get the demo's small-model settings in every run, and the run's
settings override each value; injected (scripted) models and hosted ones keep the library defaults."""

from __future__ import annotations

import dataclasses

import pytest
from pydantic_ai.models.test import TestModel

from ace.llm import LocalModel
from ace.reflector.prompts import SMALL_MODEL_REFLECTOR_PROMPT
from ace.skill_manager.deps import SMSettings
from ace.skill_manager.prompts import SMALL_MODEL_SKILL_MANAGER_PROMPT
from ace_eval.commands.demo import demo_injections
from ace_eval.e2e.advice import cli_advice, conflict_note
from ace_eval.e2e.config import E2ESettings
from ace_eval.e2e.profiles import small_judge, with_profiles
from ace_eval.e2e.runner import RunInjections

HOSTED = "openai/gpt-4.1-mini"


def _local(model: object) -> LocalModel:
    assert isinstance(model, LocalModel)
    return model


def test_local_roles_get_the_demos_settings_in_every_run() -> None:
    settings, inj = with_profiles(E2ESettings(), RunInjections())
    demo = demo_injections()
    assert settings.max_workers == 2 and settings.source_of("max_workers") == "profile:small"
    assert (
        inj.reflector_options
        == demo.reflector_options
        == {
            "output_retries": 0,
            "conversation": False,
            "instructions": SMALL_MODEL_REFLECTOR_PROMPT,
        }
    )
    assert inj.sm_settings == demo.sm_settings and inj.sm_instructions == SMALL_MODEL_SKILL_MANAGER_PROMPT
    assert inj.sm_settings is not None and inj.sm_settings.budget.request_limit == 2
    reflector, manager = _local(inj.models["reflector"]), _local(inj.models["skill_manager"])
    assert reflector.settings == _local(demo.models["reflector"]).settings
    assert reflector.settings is not None and reflector.settings.get("max_tokens") == 256
    assert (reflector.slots, manager.slots) == (1, 2)


def test_flags_and_the_config_file_override_the_profile() -> None:
    given = E2ESettings(
        max_workers=1,
        max_output_tokens=100,
        reflector_retries=2,
        reflector_conversation=True,
        sm_request_limit=5,
        sm_tool_calls_limit=3,
        sources={"max_workers": "flag"},
    )
    settings, inj = with_profiles(given, RunInjections())
    assert settings.max_workers == 1
    assert inj.reflector_options["output_retries"] == 2 and inj.reflector_options["conversation"] is True
    assert inj.sm_settings is not None
    assert (inj.sm_settings.budget.request_limit, inj.sm_settings.budget.tool_calls_limit) == (5, 3)
    settings_of = _local(inj.models["reflector"]).settings
    assert settings_of is not None and settings_of.get("max_tokens") == 100
    capped = with_profiles(E2ESettings(max_output_tokens=4000), RunInjections())[1]
    capped_settings = _local(capped.models["reflector"]).settings
    assert capped_settings is not None and capped_settings.get("max_tokens") == 1024  # the embedded model's cap


def test_hosted_and_injected_models_keep_the_library_defaults() -> None:
    hosted = E2ESettings(reflector_model=HOSTED, skill_manager_model=HOSTED)
    settings, inj = with_profiles(hosted, RunInjections())
    assert settings.max_workers == 1 and inj.models == {} and inj.reflector_options == {}
    assert inj.sm_settings == SMSettings() and inj.sm_instructions is None and inj.sm_model_settings is None
    limited = with_profiles(dataclasses.replace(hosted, max_output_tokens=512), RunInjections())[1]
    assert limited.reflector_options == {"model_settings": {"max_tokens": 512}}
    assert limited.sm_model_settings == {"max_tokens": 512}
    scripted = {"reflector": TestModel(), "skill_manager": TestModel()}
    settings, inj = with_profiles(E2ESettings(), RunInjections(models=scripted))
    assert settings.max_workers == 1 and inj.reflector_options == {} and inj.sm_settings == SMSettings()
    forced = with_profiles(E2ESettings(profile="small"), RunInjections(models=scripted))[1]
    assert forced.reflector_options["conversation"] is False and forced.models == scripted


@pytest.mark.parametrize(
    ("library", "flag"),
    [
        (
            "ReflectorError: the reflector model did not return a valid reflection (x); use a stronger reflector "
            "model or raise SimpleReflector(output_retries=...)",
            "use a stronger --reflector-model, or allow more retries with --reflector-retries N",
        ),
        (
            "Model token limit (1024) exceeded before any response was generated. Increase the `max_tokens` model "
            "setting, or simplify the prompt to result in a shorter response that will fit within the limit.",
            "Raise --max-output-tokens (the embedded model 'local' writes at most 1024 tokens",
        ),
        (
            "SkillManagerStopped: loop: 4 repeated identical tool calls (last: search_skills); the session was ended",
            "--profile small",
        ),
    ],
)
def test_errors_name_flags_not_python_classes(library: str, flag: str) -> None:
    advised = cli_advice(library)
    assert flag in advised
    assert "SimpleReflector(" not in advised and "`max_tokens` model setting" not in advised


def test_a_collision_between_sessions_says_why_they_ran_at_once_and_what_became_of_the_lesson() -> None:
    stale = (
        "update_skill was not applied: another session rewrote context-00001 after you read it. Redo your edit on "
        "its current text (in skills), keeping what the other session added, or skip it if the skill already "
        "covers your lesson."
    )
    raced = "add_skill was not applied: while you worked, another session added or rewrote these skills, which ..."
    for reason in (stale, raced):
        lost = conflict_note(reason, 2, 0)
        assert lost.startswith(reason) and "[2 samples ran at once (--max-workers; the embedded model's small" in lost
        assert "this trace's lesson is not in the skillbook (lost for this epoch" in lost
        assert "--max-workers 1 or --sm-sessions ordered avoids collisions." in lost
        assert "the session redid it: 1 edit(s) of this sample are in the skillbook" in conflict_note(reason, 2, 1)
    refused = "update_skill was refused: no skill context-00009"
    assert conflict_note(refused, 2, 0) == refused  # not a collision: the reason as the model got it


def test_a_steps_judge_on_the_embedded_model_gets_the_small_profile() -> None:
    judge = small_judge(E2ESettings(), "local")
    assert judge is not None and judge.settings is not None and judge.settings.get("max_tokens") == 256
    assert small_judge(E2ESettings(), HOSTED) is None and small_judge(E2ESettings(profile="hosted"), "local") is None
