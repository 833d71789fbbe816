"""The trace boundary between `ace` and its callers: a typed trace (`ace.TraceLike`, e.g. ace-eval's `Trace`) goes
through the pipeline as it is, plain dicts keep working, and a trace's identity is read once, not per step."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import pytest
from _ace_scripts import make_trace, scripted_roles

from ace import Skillbook, TraceIdentity, TraceLike
from ace.pipeline import StepContext, trace_identity
from ace.redaction import id_placeholder
from ace.steps import RedactStep, ReflectStep
from ace_eval.collection import Trace
from ace_eval.e2e.training import Trainer, TrainingConfig, TrainingResult

TOPICS = ["cancel", "upgrade", "cancel"]


def typed_traces() -> list[Trace]:
    return [Trace.model_validate(make_trace(n, topic, reward=float(n % 2))) for n, topic in enumerate(TOPICS)]


def train(traces: list[Any], *, epochs: int = 2, redact: bool = True) -> TrainingResult:
    reflector, manager = scripted_roles()
    config = TrainingConfig(epochs=epochs, redact=redact)
    return Trainer(reflector=reflector, skill_manager=manager, config=config).run(traces, Skillbook())


def summary(result: TrainingResult) -> list[tuple[str, int, tuple[str, ...], str | None]]:
    return [(s.trace_uid, s.epoch, tuple(op["type"] for op in s.operations), s.error) for s in result.samples]


@dataclass(frozen=True)
class OwnTrace:
    """A caller's own trace type: neither a mapping nor a pydantic model."""

    trace_uid: str
    source_system: str
    trace_id: str
    body: dict[str, Any] = field(default_factory=dict[str, Any])

    def as_mapping(self) -> Mapping[str, Any]:
        ids = {"trace_uid": self.trace_uid, "source_system": self.source_system, "trace_id": self.trace_id}
        return {**ids, **self.body}


def test_the_collection_trace_is_a_trace_like() -> None:
    trace = typed_traces()[0]
    assert isinstance(trace, TraceLike)
    assert trace.as_mapping() == trace.model_dump()
    assert trace_identity(trace) == ("demo-test:t00", "demo-test", "t00")


def test_typed_traces_train_like_their_dicts_without_being_dumped_by_the_caller(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    traces = typed_traces()
    expected = summary(train([t.model_dump() for t in traces]))
    viewed: list[str] = []
    as_mapping = Trace.as_mapping

    def counting(self: Trace) -> dict[str, Any]:
        viewed.append(self.trace_uid)
        return as_mapping(self)

    monkeypatch.setattr(Trace, "as_mapping", counting)
    result = train(traces)
    assert summary(result) == expected
    assert [s.error for s in result.samples] == [None] * 6
    # the trainer took the objects themselves: each sample's context got the mapping view of its own trace
    assert sorted(viewed) == sorted([t.trace_uid for t in traces] * 2)
    [*skills] = result.skillbook.skills()
    assert {o.trace_uid for s in skills for o in s.occurrences} == {t.trace_uid for t in traces}


def test_identity_is_read_once_per_trace_not_per_step(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []
    of, find = TraceIdentity.of.__func__, TraceIdentity.find.__func__

    def counting_of(cls: type[TraceIdentity], trace: Any) -> TraceIdentity:
        calls.append("of")
        result: TraceIdentity = of(cls, trace)
        return result

    def counting_find(cls: type[TraceIdentity], trace: Any) -> TraceIdentity | None:
        calls.append("find")
        result: TraceIdentity | None = find(cls, trace)
        return result

    monkeypatch.setattr(TraceIdentity, "of", classmethod(counting_of))
    monkeypatch.setattr(TraceIdentity, "find", classmethod(counting_find))
    result = train(typed_traces(), epochs=2)  # redact -> reflect -> update -> quarantine, 6 samples
    assert [s.error for s in result.samples] == [None] * 6
    assert calls == ["of"] * len(TOPICS)  # by the plan, once per trace; no step re-reads it
    assert all(o.trace_uid.startswith("demo-test:") for s in result.skillbook.skills() for o in s.occurrences)


def test_a_callers_own_trace_type_goes_through_the_steps() -> None:
    body = make_trace(4, "refund", reward=1.0)
    own = OwnTrace(body["trace_uid"], body["source_system"], body["trace_id"], body)
    result = train([own], epochs=1, redact=False)
    assert summary(result) == summary(train([body], epochs=1, redact=False))
    [skill] = result.skillbook.skills()
    assert [o.trace_id for o in skill.occurrences] == ["t04"]


def test_a_plain_dict_context_reads_its_identity_at_construction() -> None:
    ctx = StepContext(trace=make_trace(1, "cancel"), skillbook=Skillbook())
    assert ctx.identity == TraceIdentity("demo-test:t01", "demo-test", "t01")
    assert dataclasses.replace(ctx, epoch=3).identity is ctx.identity
    assert StepContext(trace={}, skillbook=Skillbook()).identity is None


def test_a_typed_trace_in_a_context_becomes_its_mapping_view() -> None:
    trace, book = typed_traces()[1], Skillbook()
    ctx = StepContext(trace=trace, skillbook=book)  # what an untyped caller may do
    assert isinstance(ctx.trace, Mapping) and ctx.trace == trace.model_dump()
    assert ctx.identity == TraceIdentity.of(trace)
    assert StepContext.for_trace(trace, book) == ctx


def test_a_trace_without_ids_is_refused_naming_the_id() -> None:
    with pytest.raises(ValueError, match="the trace has no 'trace_id'"):
        StepContext.for_trace({"trace_uid": "a:b", "source_system": "a", "question": "q"}, Skillbook())
    ctx = StepContext(trace={"trace_uid": "a:b", "source_system": "a", "question": "q"}, skillbook=Skillbook())
    assert ctx.identity is None
    reflector, _ = scripted_roles()
    with pytest.raises(ValueError, match="the trace has no 'trace_id'"):  # before any model call
        asyncio.run(ReflectStep(reflector)(ctx))


def test_redaction_replaces_an_id_holding_a_secret_in_the_identity_too() -> None:
    email = "jane.doe@example.com"
    body = make_trace(2, "cancel")
    body |= {"trace_id": email, "trace_uid": f"demo-test:{email}", "question": f"[cancel] from {email}"}
    ctx = StepContext.for_trace(body, Skillbook())
    out = asyncio.run(RedactStep()(ctx))
    placeholder = id_placeholder("email", email)
    assert out.identity == TraceIdentity(f"demo-test:{placeholder}", "demo-test", placeholder)
    assert (out.trace["trace_uid"], out.trace["trace_id"]) == (out.identity.trace_uid, out.identity.trace_id)
    assert email not in str(out.trace)
    clean = StepContext.for_trace(make_trace(3, "cancel"), Skillbook())
    assert asyncio.run(RedactStep()(clean)).identity is clean.identity  # nothing to redact in the ids: kept as is
