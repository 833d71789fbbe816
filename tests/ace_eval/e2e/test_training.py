"""The training loop with a scripted reflector and skill manager: sequential and 4 workers give the same skillbook,
provenance and counters match the samples, errors are surfaced and do not stop the run."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from _ace_scripts import first_prompt, make_trace, scripted_roles
from pydantic_ai.messages import ModelMessage, ModelResponse
from pydantic_ai.models.function import AgentInfo, FunctionModel

from ace import Skillbook
from ace.pipeline import StepConfigError
from ace.reflector.simple import SimpleReflector
from ace_eval.collection import read_collection
from ace_eval.e2e.training import SampleResult, Trainer, TrainingConfig, TrainingResult

DEMO = Path(__file__).resolve().parents[3] / "examples" / "demo-collection"
TOPICS = ["cancel", "upgrade", "baggage", "cancel", "refund", "upgrade", "cancel", "baggage"]


def seeded_book() -> Skillbook:
    book = Skillbook()
    book.add_skill("context", "Seeded: confirm before any write action.", ["confirmation"], "Ask for a yes first.")
    book.add_skill("context", "Seeded: identify the user first.", ["identity"], "Ask for the user id first.")
    return book


def collection() -> list[dict[str, Any]]:
    return [
        make_trace(
            n, topic, reward=float(n % 2), skills_in_context=["context-00001"] + (["context-00002"] * (n % 3 == 0))
        )
        for n, topic in enumerate(TOPICS)
    ]


def normalized(book: Skillbook) -> dict[str, Any]:
    """`to_dict()` without timestamps (they differ between runs) and the embedding cache's dimension."""

    def strip(value: Any) -> Any:
        if isinstance(value, dict):
            return {
                k: strip(v)
                for k, v in value.items()
                if k not in ("timestamp", "created_at", "updated_at", "embedding_dim")
            }
        if isinstance(value, list):
            return [strip(v) for v in value]
        return value

    result: dict[str, Any] = strip(book.to_dict())
    return result


def train(workers: int, *, epochs: int = 2, seed: int | None = 7, **config: Any) -> TrainingResult:
    reflector, manager = scripted_roles()
    trainer = Trainer(
        reflector=reflector,
        skill_manager=manager,
        config=TrainingConfig(epochs=epochs, max_workers=workers, seed=seed, **config),
    )
    return trainer.run(collection(), seeded_book())


def assert_provenance(result: TrainingResult) -> None:
    """Every occurrence after the seed is one operation of one sample, with that sample's trace_uid and epoch."""
    from_samples = Counter(
        (op["skill_id"], op["type"], s.trace_uid, s.epoch) for s in result.samples for op in s.operations
    )
    from_book = Counter(
        (skill.id, occ.operation_type, occ.trace_uid, occ.epoch)
        for skill in result.skillbook.skills(include_inactive=True)
        for occ in skill.occurrences
        if occ.trace_uid != "manual"
    )
    assert from_book == from_samples
    for sample in result.samples:
        for op in sample.operations:
            assert op["trace_uid"] == sample.trace_uid
        assert list(sample.changed_skill_ids) == list(dict.fromkeys(op["skill_id"] for op in sample.operations))


def assert_counters_match_tags(result: TrainingResult) -> None:
    expected: Counter[tuple[str, str]] = Counter()
    for sample in result.samples:
        assert sample.reflection is not None
        for tag in sample.reflection.skill_tags:
            expected[(tag.skill_id, tag.tag)] += 1
    for skill in result.skillbook.skills(include_inactive=True):
        assert skill.helpful_count == expected[(skill.id, "helpful")], skill.id
        assert skill.harmful_count == expected[(skill.id, "harmful")], skill.id
        assert skill.neutral_count == expected[(skill.id, "neutral")], skill.id
        assert skill.used_count == skill.helpful_count + skill.harmful_count + skill.neutral_count


def test_sequential_run_learns_with_full_provenance() -> None:
    result = train(1)
    assert len(result.samples) == 16 and result.errors == [] and result.resumed_samples == 0
    assert [s.index for s in result.samples] == list(range(16))
    assert Counter((s.trace_uid, s.epoch) for s in result.samples) == Counter(
        (f"demo-test:t{n:02d}", e) for n in range(8) for e in range(2)
    )
    topics = sorted({s.keywords[0] for s in result.skillbook.skills() if "policy" in s.keywords})
    assert topics == ["baggage", "cancel", "refund", "upgrade"]  # one skill per topic: later traces widened it
    ops = Counter(op["type"] for s in result.samples for op in s.operations)
    assert (
        ops["ADD"] == 4
        and ops["UPDATE"] == 12
        and ops["TAG"] == sum(len(s.reflection.skill_tags) for s in result.samples if s.reflection)
    )
    assert_provenance(result)
    assert_counters_match_tags(result)
    usage = result.samples[0].usage
    assert set(usage) == {"reflector", "skill_manager"}
    assert usage["reflector"].requests == 1 and usage["skill_manager"].requests >= 3
    assert usage["reflector"].cost_usd is None  # FunctionModel responses are not priced


def test_four_ordered_workers_reproduce_the_sequential_run() -> None:
    sequential, parallel = train(1), train(4, sm_sessions="ordered")
    assert normalized(parallel.skillbook) == normalized(sequential.skillbook)
    assert [(s.trace_uid, s.epoch, s.index) for s in parallel.samples] == [
        (s.trace_uid, s.epoch, s.index) for s in sequential.samples
    ]
    strip = [{k: v for k, v in op.items() if k != "timestamp"} for s in parallel.samples for op in s.operations]
    assert strip == [
        {k: v for k, v in op.items() if k != "timestamp"} for s in sequential.samples for op in s.operations
    ]
    assert_provenance(parallel)
    assert_counters_match_tags(parallel)


def assert_no_widening_lost(result: TrainingResult) -> None:
    """The scripted skill manager appends "Seen again in <trace>" to the text it read: a widening written over a
    stale copy would drop an earlier one."""
    for skill in result.skillbook.skills():
        updates = [o for o in skill.occurrences if o.operation_type == "UPDATE"]
        for o in updates:
            assert f"Seen again in {o.trace_id} (epoch {o.epoch})." in skill.issue, (skill.id, o.trace_uid)
        assert skill.issue.count("Seen again") == len(updates)


@pytest.mark.parametrize("workers", [4, 8])
def test_concurrent_sessions_lose_no_update_and_add_no_duplicate(workers: int) -> None:
    sequential = train(1)
    for _ in range(3):  # timing differs between runs; every run must hold the invariants
        result = train(workers)
        assert result.errors == [] and [s.index for s in result.samples] == list(range(16))
        topics = sorted(s.keywords[0] for s in result.skillbook.skills() if "policy" in s.keywords)
        assert topics == ["baggage", "cancel", "refund", "upgrade"]  # one skill per topic, never a race duplicate
        assert_no_widening_lost(result)
        assert_provenance(result)
        assert_counters_match_tags(result)
        ops = Counter(op["type"] for s in result.samples for op in s.operations)
        assert (ops["ADD"], ops["UPDATE"]) == (4, 12)  # every sample's lesson landed exactly once
        refused = [r for s in result.samples for r in s.operations if r.get("type") == "REFUSED"]
        assert refused == []
    assert_no_widening_lost(sequential)


def test_epoch_order_follows_the_seed() -> None:
    shuffled = [s.trace_id for s in train(1, epochs=2, seed=3).samples]
    again = [s.trace_id for s in train(1, epochs=2, seed=3).samples]
    assert shuffled == again
    assert shuffled[:8] != shuffled[8:] and sorted(shuffled[:8]) == sorted(shuffled[8:])
    assert [s.trace_id for s in train(1, epochs=1, seed=None).samples] == [f"t{n:02d}" for n in range(8)]


def test_demo_collection_with_four_workers() -> None:
    _, traces = read_collection(DEMO)
    reflector, manager = scripted_roles()
    seen: list[SampleResult] = []
    config = TrainingConfig(max_workers=4, sm_sessions="ordered")
    result = Trainer(reflector=reflector, skill_manager=manager, config=config).run(
        [t.model_dump() for t in traces], Skillbook(), on_sample=seen.append
    )
    assert [s.index for s in seen] == list(range(len(traces)))  # committed in order despite 4 workers
    assert result.errors == []
    [skill] = result.skillbook.skills()
    assert skill.keywords == ["general", "policy"]
    assert [o.trace_uid for o in skill.occurrences] == [t.trace_uid for t in traces]
    assert all(o.epoch == 0 for o in skill.occurrences)
    assert_provenance(result)


def test_failing_samples_are_reported_and_the_run_goes_on() -> None:
    def hook(trace_id: str, epoch: int, request: int) -> None:
        if trace_id == "t02" and request == 3:  # after its add_skill was applied
            raise RuntimeError("skill-manager backend went away")

    reflector, manager = scripted_roles(hook=hook)
    base = reflector.agent.model
    assert isinstance(base, FunctionModel)
    inner = base.function
    assert inner is not None

    def broken_for_refund(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if "[refund]" in first_prompt(messages):
            raise ValueError("reflector cannot parse this trace")
        return inner(messages, info)  # type: ignore[return-value]

    trainer = Trainer(
        reflector=SimpleReflector(FunctionModel(broken_for_refund)),
        skill_manager=manager,
        config=TrainingConfig(max_workers=2, sm_sessions="ordered"),  # t02's add never meets a concurrent one
    )
    result = trainer.run(collection(), seeded_book())
    assert len(result.samples) == 8
    by_trace = {s.trace_id: s for s in result.samples}
    assert by_trace["t04"].error == "ValueError: reflector cannot parse this trace (in step 'reflect')"
    assert by_trace["t04"].reflection is None and by_trace["t04"].operations == ()
    failed_sm = by_trace["t02"]
    assert failed_sm.error == "RuntimeError: skill-manager backend went away (in step 'update')"
    assert [op["type"] for op in failed_sm.operations] == ["ADD"]  # applied before the failure: listed, kept
    assert {s.trace_id for s in result.errors} == {"t02", "t04"}
    summary = result.summary()
    assert summary["failed"] == 2 and summary["succeeded"] == 6
    assert {e["trace_uid"] for e in summary["errors"]} == {"demo-test:t02", "demo-test:t04"}
    text = result.summary_text()
    assert "error in demo-test:t04 (epoch 0): ValueError: reflector cannot parse this trace (in step 'reflect')" in text
    assert_provenance(result)


def test_sample_result_round_trips_and_rejects_unknown_fields() -> None:
    sample = train(1, epochs=1).samples[3]
    data = sample.to_dict()
    assert SampleResult.from_dict(data) == sample
    with pytest.raises(ValueError, match="not a SampleResult"):
        SampleResult.from_dict({**data, "surprise": 1})
    with pytest.raises(ValueError, match="not a SampleResult"):
        SampleResult.from_dict({k: v for k, v in data.items() if k != "epoch"})


def test_config_is_checked() -> None:
    with pytest.raises(ValueError, match="max_workers must be at least 1"):
        TrainingConfig(max_workers=0)
    with pytest.raises(ValueError, match="snapshot_every must be at least 1"):
        TrainingConfig(snapshot_every=0)
    reflector, manager = scripted_roles()
    with pytest.raises(StepConfigError, match="step 'update' needs a skill_manager"):
        Trainer(reflector=reflector, config=TrainingConfig())
    twice = [make_trace(1, "cancel"), make_trace(1, "cancel")]
    with pytest.raises(ValueError, match="appears twice"):
        Trainer(reflector=reflector, skill_manager=manager, config=TrainingConfig()).run(twice, Skillbook())
