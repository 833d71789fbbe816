"""Steps on an immutable context: pipeline order checks, reflect, update (provenance), persist."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Callable
from pathlib import Path
from typing import IO

import pytest
from _ace_scripts import make_trace, scripted_roles
from pydantic_ai.usage import RunUsage

import ace.core.serialization as skillbook_module
from ace import Skillbook
from ace.pipeline.context import StepContext, insight_source
from ace.pipeline.pipeline import Pipeline, PipelineError
from ace.reflector.reflection import Reflection
from ace.steps.persist import PersistStep
from ace.steps.reflect import ReflectStep
from ace.steps.update import UpdateStep


class _Stub:
    """A step that only declares fields (for order checks)."""

    def __init__(self, name: str, requires: set[str], provides: set[str]) -> None:
        self.name = name
        self.requires = frozenset(requires)
        self.provides = frozenset(provides)

    async def __call__(self, ctx: StepContext) -> StepContext:
        return ctx


def test_pipeline_accepts_steps_whose_requirements_come_earlier() -> None:
    reflector, manager = scripted_roles()
    pipeline = Pipeline([ReflectStep(reflector), UpdateStep(manager), PersistStep("unused.json")])
    assert [s.name for s in pipeline.steps] == ["reflect", "update", "persist"]
    assert pipeline.provides == {"reflections", "sm_result"}


def test_pipeline_rejects_a_requirement_provided_only_later() -> None:
    reflector, manager = scripted_roles()
    with pytest.raises(
        PipelineError, match=r"'update' \(position 0\) requires \['reflections'\]: move it after 'reflect'"
    ):
        Pipeline([UpdateStep(manager), ReflectStep(reflector)])


def test_pipeline_rejects_a_requirement_nobody_provides() -> None:
    with pytest.raises(PipelineError, match="add a step that provides it"):
        Pipeline([_Stub("late", {"sm_result"}, set())])


def test_pipeline_rejects_unknown_field_names() -> None:
    with pytest.raises(PipelineError, match=r"provides \['reflection'\], which are not StepContext fields"):
        Pipeline([_Stub("typo", {"trace"}, {"reflection"})])


def test_context_is_immutable_and_usage_accumulates() -> None:
    ctx = StepContext(trace=make_trace(1, "cancel"), skillbook=Skillbook())
    with pytest.raises(dataclasses.FrozenInstanceError):
        ctx.epoch = 3  # type: ignore[misc]
    once = ctx.with_usage("reflector", RunUsage(requests=1, input_tokens=10))
    twice = once.with_usage("reflector", RunUsage(requests=2, input_tokens=5))
    assert ctx.usage == {}
    assert once.usage["reflector"].requests == 1
    assert (twice.usage["reflector"].requests, twice.usage["reflector"].input_tokens) == (3, 15)


def test_plugin_data_and_the_other_mappings_stay_read_only() -> None:
    ctx = StepContext(trace=make_trace(1, "cancel"), skillbook=Skillbook()).with_extra("mine", "n", 1)
    with pytest.raises(TypeError):
        ctx.extras["mine"]["n"] = 2  # type: ignore[index]
    with pytest.raises(TypeError):
        ctx.extras["other"] = {}  # type: ignore[index]
    replaced = dataclasses.replace(ctx, extras={"mine": {"n": 2}}, usage={}, redactions={"email": 1})
    for mapping in (replaced.extras, replaced.extras["mine"], replaced.usage, replaced.redactions):
        with pytest.raises(TypeError):
            mapping["x"] = 0  # type: ignore[index]
    given = {"mine": {"n": 3}}
    copied = StepContext(trace={}, skillbook=Skillbook(), extras=given)
    given["mine"]["n"] = 4  # the caller's dict changing later does not change the context
    assert copied.extra("mine", "n") == 3 and ctx.extra("mine", "n") == 1


def test_reflect_step_stores_the_reflection_and_its_usage() -> None:
    reflected: list[str] = []
    reflector, _ = scripted_roles(reflected=reflected)
    ctx = StepContext(trace=make_trace(1, "cancel"), skillbook=Skillbook(), epoch=2)
    out = asyncio.run(ReflectStep(reflector)(ctx))
    [reflection] = out.reflections
    assert reflection.key_insight == "Check the cancel policy before acting."
    assert out.usage["reflector"].requests == 1
    assert reflected == ["[cancel] customer request number 1 about cancel"]
    assert ctx.reflections == ()  # the input context is untouched


def test_reflect_step_refuses_a_trace_without_identity_before_calling_the_model() -> None:
    reflected: list[str] = []
    reflector, _ = scripted_roles(reflected=reflected)
    trace = {k: v for k, v in make_trace(1, "cancel").items() if k != "trace_uid"}
    with pytest.raises(ValueError, match="the trace has no 'trace_uid'"):
        asyncio.run(ReflectStep(reflector)(StepContext(trace=trace, skillbook=Skillbook())))
    assert reflected == []


def test_insight_source_comes_from_trace_epoch_and_first_reflection() -> None:
    trace = make_trace(4, "refund")
    reflection = Reflection(
        error_identification="  Refunded to the wrong card. ",
        root_cause_analysis="r",
        correct_approach="c",
        key_insight="Refund to the original payment method.",
    )
    source = insight_source(trace, 3, reflection)
    assert (source.trace_uid, source.source_system, source.trace_id) == ("demo-test:t04", "demo-test", "t04")
    assert source.sample_question == "[refund] customer request number 4 about refund"
    assert source.epoch == 3
    assert source.error_identification == "Refunded to the wrong card."
    assert source.learning_text == "Refund to the original payment method."
    blank = insight_source(trace, 0, reflection.model_copy(update={"error_identification": "  "}))
    assert blank.error_identification is None


def test_update_step_threads_the_trace_provenance_into_every_mutation() -> None:
    book = Skillbook()
    seeded = book.add_skill("context", "Seeded cancel skill.", ["seeded"], "Do the seeded thing.")
    reflector, manager = scripted_roles()
    trace = make_trace(7, "cancel", reward=1.0, skills_in_context=[seeded.id])
    ctx = asyncio.run(
        Pipeline([ReflectStep(reflector), UpdateStep(manager)]).run(StepContext(trace=trace, skillbook=book, epoch=1))
    )
    assert ctx.sm_result is not None and ctx.sm_result.completed
    assert ctx.sm_result.counts == {"ADD": 1, "UPDATE": 0, "TAG": 1, "REMOVE": 0}
    assert set(ctx.usage) == {"reflector", "skill_manager"}
    for skill_id in ctx.sm_result.changed_ids:
        occ = book.require_skill(skill_id).occurrences[-1]
        assert (occ.trace_uid, occ.source_system, occ.trace_id, occ.epoch) == ("demo-test:t07", "demo-test", "t07", 1)
        assert occ.sample_question == trace["question"]
        assert occ.error_identification is None  # a successful trace: the reflection found nothing wrong
    assert book.require_skill(seeded.id).helpful_count == 1
    added = book.require_skill(ctx.sm_result.ids("ADD")[0])
    assert added.occurrences[0].learning_text == "Check the cancel policy before acting."


def test_update_step_needs_a_reflection() -> None:
    _, manager = scripted_roles()
    ctx = StepContext(trace=make_trace(1, "cancel"), skillbook=Skillbook())
    with pytest.raises(ValueError, match="run ReflectStep before it"):
        asyncio.run(UpdateStep(manager)(ctx))


def test_persist_step_saves_a_loadable_skillbook(tmp_path: Path) -> None:
    book = Skillbook()
    book.add_skill("harness", "The runner times out after 60 s.", ["runner"])
    path = tmp_path / "run" / "skillbook.json"
    ctx = StepContext(trace=make_trace(1, "cancel"), skillbook=book)
    assert asyncio.run(PersistStep(path)(ctx)) is ctx
    assert Skillbook.load_from_file(path).to_dict() == book.to_dict()
    assert [p.name for p in path.parent.iterdir()] == ["skillbook.json"]  # no temporary file left behind


def test_persist_step_failure_keeps_the_previous_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    book = Skillbook()
    book.add_skill("harness", "First version.", ["runner"])
    path = tmp_path / "skillbook.json"
    ctx = StepContext(trace=make_trace(1, "cancel"), skillbook=book)
    asyncio.run(PersistStep(path)(ctx))
    before = path.read_bytes()
    book.add_skill("harness", "Second version.", ["runner"])

    def failing_writer(data: bytes) -> Callable[[IO[bytes]], None]:
        def write(f: IO[bytes]) -> None:
            f.write(b'{"schema_version": "2", "skills": [')
            raise OSError("disk full")

        return write

    monkeypatch.setattr(skillbook_module, "bytes_writer", failing_writer)
    with pytest.raises(OSError, match="disk full"):
        asyncio.run(PersistStep(path)(ctx))
    assert path.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["skillbook.json"]
