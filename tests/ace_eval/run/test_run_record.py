"""`run.json` through `RunRecord`: the runner's record is checked where it is written, and read typed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pydantic import ValidationError

from ace_eval.run.folder import RunFolder, RunFolderError
from ace_eval.run.record import RunRecord, read_run_record

RECORD = {
    "run_id": "run_0123456789ab",
    "status": "completed",
    "config": {"epochs": 2, "limit": 3},
    "training": {"samples": 6, "errors": 1, "resumed_samples": None, "skillbook": {"active": 2}},
    "errors": [{"trace_uid": "demo:t-1", "epoch": 1, "error": "ReflectorError: no reflection"}],
    "benchmark": {"before": {"episodes": 4, "scored": 3, "errors": 1, "pass_hat_k": {"1": 0.5, "2": None}}},
    "usage": {"reflector": {"requests": 7, "input_tokens": 100, "output_tokens": 20, "cost_usd": None}},
    "step_timings": {"reflect": {"calls": 6, "seconds": 1.5}},
    "segments": [{"status": "completed"}],
}


def test_the_record_reads_typed_and_keeps_every_field(tmp_path: Path) -> None:
    (tmp_path / "run.json").write_text(json.dumps(RECORD), encoding="utf-8")
    record = read_run_record(tmp_path / "run.json")
    assert record is not None and record.config.epochs == 2 and record.training is not None
    assert (record.training.samples, record.training.errors) == (6, 1)
    assert record.errors[0].trace_uid == "demo:t-1" and record.usage["reflector"].requests == 7
    assert record.benchmark is not None and record.benchmark.before is not None
    assert record.benchmark.before.pass_hat_k == {1: 0.5, 2: None} and record.benchmark.after is None
    assert record.step_timings["reflect"].seconds == 1.5
    assert record.model_dump()["segments"] == [{"status": "completed"}]  # a field it does not type is kept


def test_a_missing_or_damaged_run_json_reads_as_none(tmp_path: Path) -> None:
    assert read_run_record(tmp_path / "run.json") is None
    (tmp_path / "run.json").write_text('{"status": ', encoding="utf-8")
    assert read_run_record(tmp_path / "run.json") is None
    (tmp_path / "run.json").write_text('{"training": {"samples": "many"}}', encoding="utf-8")
    assert read_run_record(tmp_path / "run.json") is None


def test_a_record_its_readers_could_not_read_is_refused_before_it_is_written(tmp_path: Path) -> None:
    folder = RunFolder(tmp_path)
    folder.write_run_json(RECORD)
    with pytest.raises(ValidationError, match=r"training\.errors"):
        folder.write_run_json({**RECORD, "training": {"samples": 6, "errors": "one"}})
    assert json.loads(folder.run_json.read_text(encoding="utf-8")) == RECORD  # the previous version stays
    assert RunRecord.of(RECORD).status == "completed"


def test_a_resume_reads_run_json_through_the_model_and_names_a_bad_field(tmp_path: Path) -> None:
    folder = RunFolder(tmp_path)
    folder.write_run_json(RECORD)
    assert folder.read_run_json() == RECORD  # every field as written, the untyped ones too
    (tmp_path / "run.json").write_text(json.dumps({**RECORD, "errors": [{"trace_uid": "x"}]}), encoding="utf-8")
    with pytest.raises(RunFolderError, match=r"run\.json: field 'errors\.0\.epoch': Field required: the run folder"):
        folder.read_run_json()
