"""Kill tests: a run aborted in sample k+1 and resumed ends with the same skillbook as an uninterrupted run, without
redoing the k committed samples; plus the checkpoint's journal, snapshots and refusals."""

from __future__ import annotations

import asyncio
import functools
import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from _ace_scripts import make_trace, scripted_roles
from pydantic_ai.messages import ModelMessage, ModelResponse, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from test_training import assert_no_widening_lost, collection, normalized, seeded_book

from ace import Skillbook
from ace.embeddings.test import TestEmbedder
from ace.pipeline import StepEnvironment, StepRequest, build_pipeline
from ace_eval.e2e.training import CheckpointError, Trainer, TrainingConfig, TrainingResult, plan_samples
from ace_eval.run.checkpoint import SAMPLES_FILE, SNAPSHOT_FILE, Checkpoint, load_checkpoint

EPOCHS, SEED = 2, 5


class Abort(BaseException):
    """Stands for the process being stopped (not an ordinary sample error)."""


def run(
    folder: Path | None,
    *,
    workers: int,
    abort_at: int | None = None,
    reflected: list[str] | None = None,
    **config: Any,
) -> TrainingResult:
    """Train on the test collection; with `abort_at`, abort inside that sample's skill-manager session."""
    traces = collection()
    target = None
    if abort_at is not None:
        planned = plan_samples(traces, epochs=EPOCHS, seed=SEED)[abort_at]
        target = (planned.trace_id, planned.epoch)

    def hook(trace_id: str, epoch: int, request: int) -> None:
        if (trace_id, epoch) == target and request == 3:  # its add/update is already applied in memory
            raise Abort

    reflector, manager = scripted_roles(hook=hook, reflected=reflected)
    trainer = Trainer(
        reflector=reflector,
        skill_manager=manager,
        config=TrainingConfig(epochs=EPOCHS, seed=SEED, max_workers=workers, checkpoint_dir=folder, **config),
    )
    return trainer.run(traces, seeded_book())


@functools.cache
def uninterrupted() -> dict[str, Any]:
    """The skillbook (normalised) of the same run without interruption or checkpoint, computed once."""
    return normalized(run(None, workers=1).skillbook)


def journal_lines(folder: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (folder / SAMPLES_FILE).read_text().splitlines()]


@pytest.mark.parametrize(("workers", "k", "snapshot_every"), [(1, 5, None), (1, 9, 4), (4, 6, None), (4, 11, 1)])
def test_resume_after_abort_gives_the_uninterrupted_skillbook(
    tmp_path: Path, workers: int, k: int, snapshot_every: int | None
) -> None:
    with pytest.raises(Abort):
        run(tmp_path, workers=workers, abort_at=k, snapshot_every=snapshot_every, sm_sessions="ordered")
    assert [line["index"] for line in journal_lines(tmp_path)] == list(range(k))  # exactly the committed samples

    reflected: list[str] = []
    resumed = run(tmp_path, workers=workers, reflected=reflected, snapshot_every=snapshot_every, sm_sessions="ordered")
    assert resumed.resumed_samples == k
    assert normalized(resumed.skillbook) == uninterrupted()
    assert len(reflected) == 16 - k  # the committed samples were not reflected again
    planned = plan_samples(collection(), epochs=EPOCHS, seed=SEED)
    assert [(s.index, s.trace_uid, s.epoch) for s in resumed.samples] == [
        (p.index, p.trace_uid, p.epoch) for p in planned
    ]
    assert Skillbook.load_from_file(tmp_path / SNAPSHOT_FILE).to_dict() == resumed.skillbook.to_dict()


@pytest.mark.parametrize(("k", "snapshot_every"), [(3, None), (7, 1), (12, 2)])
def test_concurrent_run_resumes_losing_and_repeating_nothing(
    tmp_path: Path, k: int, snapshot_every: int | None
) -> None:
    """Concurrent sessions: lines come in finishing order and carry the edits of sessions still running. After an
    abort, every sample ends up recorded exactly once, every lesson lands exactly once, no widening is lost."""
    with pytest.raises(Abort):
        run(tmp_path, workers=4, abort_at=k, snapshot_every=snapshot_every)
    committed = {line["index"] for line in journal_lines(tmp_path)}
    assert k not in committed

    reflected: list[str] = []
    resumed = run(tmp_path, workers=4, reflected=reflected, snapshot_every=snapshot_every)
    planned = plan_samples(collection(), epochs=EPOCHS, seed=SEED)
    assert [(s.index, s.trace_uid, s.epoch) for s in resumed.samples] == [
        (p.index, p.trace_uid, p.epoch) for p in planned
    ]
    interrupted = [s for s in resumed.samples if s.error is not None]
    assert all(s.error.startswith("InterruptedSession") and s.operations for s in interrupted if s.error)
    assert len(reflected) == 16 - len(committed) - len(interrupted)  # neither kind is run again
    book = resumed.skillbook
    lessons = Counter(
        (o.trace_uid, o.epoch)
        for s in book.skills()
        for o in s.occurrences
        if o.operation_type in ("ADD", "UPDATE") and o.trace_uid.startswith("demo-test:")
    )
    assert set(lessons.values()) == {1} and len(lessons) == 16  # every sample's add/widen exactly once
    assert sorted(s.keywords[0] for s in book.skills() if "policy" in s.keywords) == [
        "baggage",
        "cancel",
        "refund",
        "upgrade",
    ]
    assert_no_widening_lost(resumed)
    assert sum(len(s.operations) for s in resumed.samples) == len(book.operations) - len(seeded_book().operations)
    assert Skillbook.load_from_file(tmp_path / SNAPSHOT_FILE).to_dict() == book.to_dict()


def test_keyboard_interrupt_aborts_a_sequential_run_and_it_resumes(tmp_path: Path) -> None:
    traces = collection()
    target = plan_samples(traces, epochs=EPOCHS, seed=SEED)[3]

    def hook(trace_id: str, epoch: int, request: int) -> None:
        if (trace_id, epoch) == (target.trace_id, target.epoch) and request == 2:
            raise KeyboardInterrupt

    reflector, manager = scripted_roles(hook=hook)
    config = TrainingConfig(epochs=EPOCHS, seed=SEED, checkpoint_dir=tmp_path)
    with pytest.raises(KeyboardInterrupt):
        Trainer(reflector=reflector, skill_manager=manager, config=config).run(traces, seeded_book())
    assert len(journal_lines(tmp_path)) == 3
    resumed = run(tmp_path, workers=1)
    assert resumed.resumed_samples == 3
    assert normalized(resumed.skillbook) == uninterrupted()


def test_a_finished_run_resumes_to_itself(tmp_path: Path) -> None:
    first = run(tmp_path, workers=2)
    reflected: list[str] = []
    again = run(tmp_path, workers=2, reflected=reflected)
    assert reflected == [] and again.resumed_samples == 16
    assert again.samples == first.samples
    assert normalized(again.skillbook) == normalized(first.skillbook)


def test_torn_last_line_is_dropped_and_that_sample_is_redone(tmp_path: Path) -> None:
    with pytest.raises(Abort):
        run(tmp_path, workers=1, abort_at=4)
    journal = tmp_path / SAMPLES_FILE
    with journal.open("ab") as f:
        f.write(b'{"trace_uid": "demo-test:t0')  # the process died in the middle of a write
    reflected: list[str] = []
    resumed = run(tmp_path, workers=1, reflected=reflected)
    assert resumed.resumed_samples == 4 and len(reflected) == 12
    assert normalized(resumed.skillbook) == uninterrupted()
    assert all(line.endswith("}") for line in journal.read_text().splitlines())


def test_a_corrupt_line_in_the_middle_is_refused(tmp_path: Path) -> None:
    run(tmp_path, workers=1)
    journal = tmp_path / SAMPLES_FILE
    lines = journal.read_text().splitlines()
    lines[2] = lines[2][:40]
    journal.write_text("\n".join(lines) + "\n")
    with pytest.raises(CheckpointError, match=r"samples\.jsonl, line 3: not a checkpoint line"):
        run(tmp_path, workers=1)


def test_resume_with_another_seed_is_refused(tmp_path: Path) -> None:
    with pytest.raises(Abort):
        run(tmp_path, workers=1, abort_at=3)
    reflector, manager = scripted_roles()
    config = TrainingConfig(epochs=EPOCHS, seed=SEED + 1, checkpoint_dir=tmp_path)
    with pytest.raises(CheckpointError, match="resume with the same traces, epochs and seed"):
        Trainer(reflector=reflector, skill_manager=manager, config=config).run(collection(), seeded_book())


def test_journal_without_snapshot_is_refused(tmp_path: Path) -> None:
    (tmp_path / SAMPLES_FILE).write_text('{"index": 0}\n')
    with pytest.raises(CheckpointError, match="the checkpoint is incomplete"):
        run(tmp_path, workers=1)


def test_empty_journal_without_snapshot_is_a_fresh_start(tmp_path: Path) -> None:
    """A fresh start killed before its first snapshot (the journal is created first) starts afresh."""
    (tmp_path / SAMPLES_FILE).write_text("")
    assert normalized(run(tmp_path, workers=1).skillbook) == normalized(run(None, workers=1).skillbook)


def test_snapshot_policy(tmp_path: Path) -> None:
    every = run(tmp_path / "every", workers=1, snapshot_every=1)
    rare = run(tmp_path / "rare", workers=1, snapshot_every=1000)
    assert normalized(every.skillbook) == normalized(rare.skillbook)
    for folder, result in ((tmp_path / "every", every), (tmp_path / "rare", rare)):
        loaded = load_checkpoint(folder)
        assert loaded is not None
        assert normalized(loaded[0]) == normalized(result.skillbook)
        assert len(loaded[1]) == 16
    # every journal line carries only what its sample changed, never the whole skillbook
    for line in journal_lines(tmp_path / "rare"):
        delta = line["checkpoint"]
        assert [s["id"] for s in delta["skills"]] == line["changed_skill_ids"]
        assert len(delta["ops"]) == len(line["operations"])


def test_keep_decisions_survive_resume(tmp_path: Path) -> None:
    """Dedup KEEP pairs live in the skillbook and travel through the journal."""
    asked: list[str] = []

    def keep(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        asked.append("x")
        return ModelResponse(parts=[ToolCallPart("final_result_KeepDecision", {"reason": "distinct topics"})])

    reflector, manager = scripted_roles()
    env = StepEnvironment(
        reflector=reflector, skill_manager=manager, embedder=TestEmbedder(), models={"dedup": FunctionModel(keep)}
    )
    requests = [StepRequest("reflect"), StepRequest("update"), StepRequest("deduplicate", {"threshold": "0.5"})]
    traces = [make_trace(n, topic) for n, topic in enumerate(["cancel", "refund", "upgrade"])]
    config = TrainingConfig(checkpoint_dir=tmp_path, snapshot_every=1000)
    result = Trainer(pipeline=build_pipeline(requests, env), config=config).run(traces, Skillbook())
    assert result.skillbook.keep_pairs and len(asked) == len(result.skillbook.keep_pairs)
    assert result.phase_usage["dedup"].requests == len(asked)
    loaded = load_checkpoint(tmp_path)
    assert loaded is not None and loaded[0].keep_pairs == result.skillbook.keep_pairs


def test_adaptive_snapshots_wait_twenty_times_their_cost(tmp_path: Path) -> None:
    ticks = iter([0.0, 1.0, 10.0, 21.0, 21.0, 23.0, 40.0])  # save 0->1 (cost 1), commit at 10, at 21, save 21->23, ...
    checkpoint = Checkpoint(tmp_path, clock=lambda: next(ticks))
    book = Skillbook()
    checkpoint.open(book, fresh=True)
    book.add_skill("harness", "Runner times out.", ["runner"])

    async def commits() -> list[bool]:
        saved = []
        for n in range(3):
            before = (tmp_path / SNAPSHOT_FILE).read_text()
            await checkpoint.commit({"n": n, "checkpoint": {}}, book)
            saved.append((tmp_path / SNAPSHOT_FILE).read_text() != before)
        await checkpoint.close(None)
        return saved

    # at 10 s the last snapshot (cost 1 s) is 9 s old: not due; at 21 s it is 20 s old: due; the next one cost 2 s,
    # so at 40 s (17 s later) it is not due again
    assert asyncio.run(commits()) == [False, True, False]
    assert len((tmp_path / SAMPLES_FILE).read_text().splitlines()) == 3
