"""The step registry and phases through the library API: what a `before_reflect` step changes is what the models
see, plugin data requirements are checked when the pipeline is built, a failing step fails only its sample."""

from __future__ import annotations

import asyncio
import dataclasses
from pathlib import Path
from typing import Any

import pytest
from _ace_scripts import first_prompt, make_trace, reflector_function, skill_manager_function
from pydantic import BaseModel, ConfigDict
from pydantic_ai.messages import ModelMessage, ModelResponse
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.models.test import TestModel

from ace import Skillbook
from ace.embeddings.test import TestEmbedder
from ace.pipeline import (
    NoOptions,
    PluginError,
    RegisteredStep,
    StepConfigError,
    StepContext,
    StepEnvironment,
    StepFactory,
    StepRegistry,
    StepRequest,
    build_pipeline,
    parse_step_spec,
    pipeline_differences,
    pipeline_requests,
)
from ace.redaction import Redactor
from ace.reflector.simple import SimpleReflector
from ace.skill_manager.manager import SkillManager
from ace_eval.e2e.config import resolve_settings
from ace_eval.e2e.training import RunStepError, Trainer, TrainingConfig


class Recording:
    """Wraps a scripted model function and keeps the first prompt of every request."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.prompts: list[str] = []

    def __call__(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        self.prompts.append(first_prompt(messages))
        response: ModelResponse = self.inner(messages, info)
        return response


class Rewrite:
    """A `before_reflect` step: masks the customer's order numbers in the question and the messages."""

    name = "mask_orders"
    requires = frozenset({"trace"})
    provides = frozenset({"trace", "mask_orders.masked"})

    async def __call__(self, ctx: StepContext) -> StepContext:
        trace = dict(ctx.trace)
        trace["question"] = str(trace["question"]).replace("number", "#MASKED#")
        trace["messages"] = [
            {**m, "content": str(m["content"]).replace("request", "#MASKED#")} for m in trace["messages"]
        ]
        return dataclasses.replace(ctx, trace=trace).with_extra(self.name, "masked", True)


class NeedsMasking:
    """An `after_reflect` step that requires the masker's plugin data, and fails on one trace."""

    name = "audit"
    requires = frozenset({"reflections", "mask_orders.masked"})
    provides = frozenset()

    async def __call__(self, ctx: StepContext) -> StepContext:
        assert ctx.extra("mask_orders", "masked") is True
        if ctx.trace["trace_id"] == "t01":
            raise RuntimeError("audit log unreachable")
        return ctx


def registry(*extra: tuple[str, str, Any]) -> StepRegistry:
    """The installed steps plus test steps `(name, phase, step class)`."""
    mine = [
        RegisteredStep(
            name,
            StepFactory(
                step=cls, phase=phase, description=name, options=NoOptions, build=lambda _o, _e, cls=cls: cls()
            ),
            "tests",
            "0",
        )
        for name, phase, cls in extra
    ]
    return StepRegistry([*StepRegistry.from_entry_points(), *mine])


def roles() -> tuple[Recording, Recording, StepEnvironment]:
    reflect, manage = Recording(reflector_function()), Recording(skill_manager_function())
    env = StepEnvironment(
        reflector=SimpleReflector(FunctionModel(reflect)),
        skill_manager=SkillManager(FunctionModel(manage), embedder=TestEmbedder()),
        embedder=TestEmbedder(),
    )
    return reflect, manage, env


def test_a_before_reflect_step_changes_what_the_reflector_and_the_skill_manager_see() -> None:
    reflect, manage, env = roles()
    reg = registry(("mask_orders", "before_reflect", Rewrite))
    requests = [StepRequest("mask_orders"), StepRequest("reflect"), StepRequest("update")]
    trainer = Trainer(pipeline=build_pipeline(requests, env, registry=reg), config=TrainingConfig())
    result = trainer.run([make_trace(1, "cancel"), make_trace(2, "refund")], Skillbook())
    assert [s.error for s in result.samples] == [None, None]
    assert reflect.prompts and manage.prompts
    for prompt in reflect.prompts:
        assert "customer request #MASKED# 1" in prompt or "customer request #MASKED# 2" in prompt
        assert "number" not in prompt
        assert "Please help with my cancel #MASKED# 1." in prompt or "refund #MASKED# 2." in prompt
    for prompt in manage.prompts:
        assert "#MASKED#" in prompt and "customer request number" not in prompt


def test_a_failing_per_sample_step_fails_that_sample_only() -> None:
    _, _, env = roles()
    reg = registry(("mask_orders", "before_reflect", Rewrite), ("audit", "after_reflect", NeedsMasking))
    requests = [StepRequest("reflect"), StepRequest("update"), StepRequest("audit"), StepRequest("mask_orders")]
    pipeline = build_pipeline(requests, env, registry=reg)
    assert pipeline.names == ["mask_orders", "reflect", "audit", "update"]  # by phase, whatever the request order
    result = Trainer(pipeline=pipeline, config=TrainingConfig(max_workers=2)).run(
        [make_trace(n, "cancel") for n in range(3)], Skillbook()
    )
    by_trace = {s.trace_id: s for s in result.samples}
    assert by_trace["t01"].error == "RuntimeError: audit log unreachable (in step 'audit')"
    assert by_trace["t01"].operations == ()  # failed before its skill-manager session
    assert by_trace["t01"].reflection is not None  # what the reflect step produced before it is recorded
    assert by_trace["t01"].usage["reflector"].requests == 1
    assert by_trace["t00"].error is None and by_trace["t02"].error is None and by_trace["t02"].operations


class AfterUpdate:
    """An `after_update` step: reads the session the update step produced; fails on one trace."""

    name = "after_audit"
    requires = frozenset({"sm_result"})
    provides = frozenset({"after_audit.changed"})
    seen: list[tuple[str, int]] = []  # noqa: RUF012 - the trace and the number of changed skills, per call

    async def __call__(self, ctx: StepContext) -> StepContext:
        assert ctx.sm_result is not None
        AfterUpdate.seen.append((ctx.trace["trace_id"], len(ctx.sm_result.changed_ids)))
        if ctx.trace["trace_id"] == "t01":
            raise RuntimeError("audit log unreachable")
        return ctx.with_extra(self.name, "changed", len(ctx.sm_result.changed_ids))


def test_an_after_update_step_runs_after_the_session_and_a_failure_keeps_what_it_did() -> None:
    _, _, env = roles()
    AfterUpdate.seen.clear()
    reg = registry(("after_audit", "after_update", AfterUpdate))
    pipeline = build_pipeline(
        [StepRequest("after_audit"), StepRequest("reflect"), StepRequest("update")], env, registry=reg
    )
    assert pipeline.names == ["reflect", "update", "after_audit"]  # by phase: after the session
    result = Trainer(pipeline=pipeline, config=TrainingConfig()).run(
        [make_trace(n, "cancel") for n in range(3)], Skillbook()
    )
    assert [trace for trace, _ in AfterUpdate.seen] == ["t00", "t01", "t02"]
    assert all(changed >= 1 for _, changed in AfterUpdate.seen)  # it ran after each session, on its result
    failed = {s.trace_id: s for s in result.samples}["t01"]
    assert failed.error == "RuntimeError: audit log unreachable (in step 'after_audit')"
    assert failed.operations and failed.reflection is not None  # the session's edits stand and are listed
    assert failed.usage["reflector"].requests == 1 and failed.usage["skill_manager"].requests >= 1


def test_plugin_data_requirements_are_checked_when_the_pipeline_is_built() -> None:
    _, _, env = roles()
    reg = registry(("mask_orders", "before_reflect", Rewrite), ("audit", "after_reflect", NeedsMasking))
    with pytest.raises(StepConfigError, match=r"step 'audit' \(position 1\) requires \['mask_orders.masked'\]: add a"):
        build_pipeline([StepRequest("reflect"), StepRequest("audit")], env, registry=reg)

    class Thief(NeedsMasking):
        name = "thief"
        provides = frozenset({"mask_orders.masked"})

    with pytest.raises(StepConfigError, match=r"a step provides only its own plugin data, named 'thief\.<key>'"):
        build_pipeline([StepRequest("thief")], env, registry=registry(("thief", "after_update", Thief)))


def test_a_missing_role_names_the_step_and_the_fix() -> None:
    with pytest.raises(StepConfigError, match=r"step 'reflect' needs a reflector: pass StepEnvironment\(reflector="):
        build_pipeline([StepRequest("reflect")], StepEnvironment())
    with pytest.raises(StepConfigError, match="relative and the pipeline has no output folder"):
        build_pipeline([StepRequest("persist")], StepEnvironment())


def test_unknown_steps_and_options_are_refused_by_name() -> None:
    with pytest.raises(StepConfigError, match=r"unknown step 'dedupe'\. Did you mean 'deduplicate'\? Available steps"):
        build_pipeline([StepRequest("dedupe")], StepEnvironment())
    with pytest.raises(StepConfigError, match="step 'deduplicate': option 'threshold': Input should be a valid number"):
        build_pipeline([StepRequest("deduplicate", {"threshold": "high"})], StepEnvironment())


class _ListOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")
    only: list[str] = []
    limit: int = 3


def test_step_specs_parse_into_options() -> None:
    name, options = parse_step_spec("domain_filter:only=cancellation,only=booking,limit=5")
    assert (name, options) == ("domain_filter", {"only": ["cancellation", "booking"], "limit": "5"})
    factory = StepFactory(
        step=Rewrite, phase="after_update", description="x", options=_ListOptions, build=lambda o, e: Rewrite()
    )
    assert factory.parse_options("x", {"only": "one", "limit": "5"}) == _ListOptions(only=["one"], limit=5)
    assert parse_step_spec("persist") == ("persist", {})
    with pytest.raises(StepConfigError, match="'threshold' is not key=value"):
        parse_step_spec("deduplicate:threshold")
    with pytest.raises(StepConfigError, match="give a step name"):
        parse_step_spec(":x=1")


def test_requests_start_from_the_defaults() -> None:
    got = pipeline_requests(
        [StepRequest("deduplicate"), StepRequest("persist", {"path": "x.json"})], without={"export_markdown"}
    )
    assert [(r.name, dict(r.options)) for r in got] == [
        ("redact", {}),
        ("reflect", {}),
        ("update", {}),
        ("quarantine", {}),
        ("persist", {"path": "x.json"}),
        ("deduplicate", {}),
    ]


def test_leaving_out_an_unknown_step_is_refused() -> None:
    with pytest.raises(StepConfigError, match=r"cannot leave out the step 'reflct'.*Did you mean 'reflect'\?"):
        pipeline_requests(without={"reflct"})
    assert [r.name for r in pipeline_requests(without={"deduplicate"})] == [  # known, not in the pipeline: fine
        "redact",
        "reflect",
        "update",
        "quarantine",
        "export_markdown",
        "persist",
    ]


def test_pipeline_differences_name_each_step() -> None:
    stored = [{"name": "reflect", "phase": "reflect", "options": {}, "distribution": "a", "version": "1"}]
    assert pipeline_differences(stored, stored) == []
    newer = [{**stored[0], "version": "2"}, {"name": "x", "phase": "end_of_run", "options": {}}]
    assert pipeline_differences(stored, newer) == [
        "step 'reflect' version: '1' in the run, '2' now",
        "step 'x': not in the run, added now",
    ]


def test_config_file_steps_and_flags_merge(tmp_path: Path) -> None:
    config = tmp_path / "ace-eval.toml"
    config.write_text(
        "[e2e.steps]\ndeduplicate = { threshold = 0.9, max_pairs = 10 }\nexport_markdown = false\npersist = true\n"
    )
    settings = resolve_settings({}, config=config, environ={})
    assert settings.steps == {"deduplicate": {"threshold": 0.9, "max_pairs": 10}, "persist": {}}
    assert settings.no_steps == ("export_markdown",)
    flags = {"steps": {"deduplicate": {"threshold": "0.8"}, "export_markdown": {}}, "no_steps": ("persist",)}
    merged = resolve_settings(flags, config=config, environ={})
    assert merged.steps == {"deduplicate": {"threshold": "0.8", "max_pairs": 10}, "export_markdown": {}}
    assert merged.no_steps == ("persist",) and merged.source_of("steps") == "flag"


class FailsOnce:
    """An `end_of_epoch` step that raises the first time it runs, and records every epoch it ran for."""

    name = "epoch_audit"
    requires = frozenset({"skillbook"})
    provides: frozenset[str] = frozenset()
    ran: list[int] = []  # noqa: RUF012 - shared by the instances the two Trainers build
    failed = False

    async def __call__(self, ctx: StepContext) -> StepContext:
        if not FailsOnce.failed:
            FailsOnce.failed = True
            raise OSError("audit store offline")
        FailsOnce.ran.append(ctx.epoch)
        return ctx


def test_a_failing_end_of_epoch_step_stops_the_run_and_the_resume_runs_it_again(tmp_path: Path) -> None:
    FailsOnce.ran, FailsOnce.failed = [], False
    reflected: list[str] = []
    reg = registry(("epoch_audit", "end_of_epoch", FailsOnce))

    def trainer() -> Trainer:
        env = StepEnvironment(
            reflector=SimpleReflector(FunctionModel(reflector_function(reflected))),
            skill_manager=SkillManager(FunctionModel(skill_manager_function()), embedder=TestEmbedder()),
        )
        requests = [StepRequest("reflect"), StepRequest("update"), StepRequest("epoch_audit")]
        return Trainer(
            pipeline=build_pipeline(requests, env, registry=reg),
            config=TrainingConfig(epochs=2, checkpoint_dir=tmp_path),
        )

    traces = [make_trace(n, topic) for n, topic in enumerate(["cancel", "refund"])]
    with pytest.raises(RunStepError, match=r"step 'epoch_audit' \(end_of_epoch, epoch 0\) failed: OSError: audit"):
        trainer().run(traces, Skillbook())
    assert len(reflected) == 2  # epoch 0 committed, epoch 1 never started
    result = trainer().run(traces, Skillbook())
    assert FailsOnce.ran == [0, 1]  # epoch 0's end again, then epoch 1's
    assert len(reflected) == 4 and len(result.samples) == 4 and result.resumed_samples == 2


def test_the_redact_step_uses_the_environments_redactor_and_the_trainer_redacts_with_it() -> None:
    redactor = Redactor(extra_patterns={"employee_id": r"EMP-\d{6}"}, allow=["ops@air.example"])
    env = StepEnvironment(redactor=redactor)
    pipeline = build_pipeline([StepRequest("redact")], env)
    assert pipeline.names == ["redact"] and pipeline.record()[0]["phase"] == "before_reflect"
    trace = {"trace_uid": "t:1", "question": "EMP-123456 wrote from ops@air.example and ann@mail.example"}
    ctx = asyncio.run(pipeline.run_sample(StepContext(trace=trace, skillbook=Skillbook(), epoch=0)))
    assert ctx.trace["question"] == "[REDACTED:employee_id#1] wrote from ops@air.example and [REDACTED:email#1]"
    assert dict(ctx.redactions) == {"employee_id": 1, "email": 1} and ctx.trace["trace_uid"] == "t:1"

    roles = dataclasses.replace(
        env,
        reflector=SimpleReflector(FunctionModel(reflector_function())),
        skill_manager=SkillManager(FunctionModel(skill_manager_function())),
    )
    requests = [StepRequest("reflect"), StepRequest("update"), StepRequest("redact")]
    trainer = Trainer(pipeline=build_pipeline(requests, roles), config=TrainingConfig())
    assert trainer.pipeline.names[:2] == ["redact", "reflect"]  # its phase puts it first, whatever the request order
    assert trainer.redactor is redactor  # the skillbook and the journal redact with the step's redactor
    assert Trainer(pipeline=build_pipeline(requests[:2], roles), config=TrainingConfig()).redactor is None
    with pytest.raises(ValueError, match="either a pipeline or reflector"):
        Trainer(pipeline=pipeline, config=TrainingConfig(), redactor=redactor)


class _JudgeOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")
    model: str | None = None


def test_a_plugins_declared_model_is_preflighted(monkeypatch: pytest.MonkeyPatch) -> None:
    from _e2e_support import scripted_models

    from ace.pipeline import plan_pipeline
    from ace_eval.e2e.preflight import PreflightError, StepModel, preflight, step_models

    class Judging:
        name = "judging"
        requires: frozenset[str] = frozenset({"skillbook"})
        provides: frozenset[str] = frozenset()

    judge = StepFactory(
        step=Judging,
        phase="end_of_epoch",
        description="x",
        options=_JudgeOptions,
        build=lambda o, e: Rewrite(),
        models=lambda o: {"judge": o.model},
    )
    registry = StepRegistry([*StepRegistry.from_entry_points(), RegisteredStep("judging", judge, "tests", "0")])
    settings = resolve_settings({"skill_manager_model": "anthropic/claude-x"}, environ={})
    plan = plan_pipeline([StepRequest("judging"), StepRequest("deduplicate")], registry=registry)
    assert step_models(settings, plan) == {  # no model named: the skill manager's
        "judge": StepModel("judging", "anthropic/claude-x", default=True),
        "dedup": StepModel("deduplicate", "anthropic/claude-x", default=True),
    }
    plan = plan_pipeline([StepRequest("judging", {"model": "openai/gpt-4.1-mini"})], registry=registry)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(PreflightError) as raised:
        preflight(settings, scripted_models(), TestEmbedder(), live=False, steps=step_models(settings, plan))
    assert (
        "judge model 'openai/gpt-4.1-mini' (the step 'judging'; change it with the options of --step judging "
        "(`ace-eval steps list`)): the provider's credentials are not in the environment: set OPENAI_API_KEY"
    ) in str(raised.value)


def test_registry_error_paths_name_the_distribution_and_the_fix(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from _plugins import install_distribution

    from ace.pipeline import PluginError

    site = tmp_path / "site"
    site.mkdir()
    (site / "ace_twin_steps.py").write_text(
        "from ace.pipeline import NoOptions, StepFactory\n"
        "from ace.steps import PersistStep\n"
        "persist = StepFactory(step=PersistStep, phase='end_of_run', description='x', options=NoOptions,\n"
        "                      build=lambda o, e: None)\n"
        "not_a_factory = object()\n",
        encoding="utf-8",
    )
    with monkeypatch.context() as m:
        install_distribution(site, m, "ace-twin-steps", "2.0", {"persist": "ace_twin_steps:persist"})
        with pytest.raises(PluginError, match=r"two distributions register the step 'persist': ") as raised:
            StepRegistry.from_entry_points()
        assert "ace-twin-steps 2.0" in str(raised.value) and "agentic-context-engine" in str(raised.value)
        assert str(raised.value).endswith("uninstall one of them")
    with monkeypatch.context() as m:
        install_distribution(tmp_path / "bad", m, "ace-bad-steps", "0.1", {"bad": "ace_twin_steps:not_a_factory"})
        m.syspath_prepend(str(site))
        with pytest.raises(PluginError, match=r"ace-bad-steps 0.1 names ace_twin_steps:not_a_factory, a object"):
            StepRegistry.from_entry_points()
    assert "persist" in StepRegistry.from_entry_points()  # uninstalled again: the built-ins alone load

    factory = StepFactory(
        step=Rewrite, phase="end_of_run", description="x", options=NoOptions, build=lambda o, e: Rewrite()
    )
    with pytest.raises(StepConfigError, match=r"the factory of step 'renamed' built a step named 'mask_orders'"):
        factory("renamed", {}, StepEnvironment())


def test_every_registered_factory_states_the_contract_of_the_step_it_builds(tmp_path: Path) -> None:
    """One contract per step: a factory's requires / provides are its step class's, and what it builds agrees."""
    _, _, roles_env = roles()
    env = dataclasses.replace(roles_env, output_dir=tmp_path, models={"dedup": TestModel()}, redactor=Redactor())
    installed = StepRegistry.from_entry_points()
    names = [step.name for step in installed]
    assert {"redact", "reflect", "update", "quarantine", "deduplicate", "export_markdown", "persist"} <= set(names)
    assert {"checkpoint", "review"} <= set(names)  # ace-eval's steps register the same way
    for registered in installed:
        factory = registered.factory
        assert (factory.requires, factory.provides) == (factory.step.requires, factory.step.provides), registered.name
        if registered.name in ("checkpoint", "review"):
            continue  # built by ace-eval's run, which hands them its run folder
        built = factory(registered.name, {}, env)
        assert isinstance(built, factory.step)
        assert (built.requires, built.provides) == (factory.requires, factory.provides), registered.name


def test_a_factory_refuses_a_step_class_without_a_contract_and_a_build_of_another_class() -> None:
    class NoContract:
        name = "bare"

    bare = StepFactory(step=NoContract, phase="end_of_run", description="x", options=NoOptions, build=lambda o, e: 1)
    with pytest.raises(PluginError, match="must declare `requires` as a frozenset"):
        _ = bare.requires
    other = StepFactory(
        step=Rewrite, phase="end_of_run", description="x", options=NoOptions, build=lambda o, e: Judge()
    )
    with pytest.raises(StepConfigError, match="built a Judge, not its Rewrite"):
        other("mask_orders", {}, StepEnvironment())


class Judge:
    name = "mask_orders"
    requires: frozenset[str] = frozenset()
    provides: frozenset[str] = frozenset()
