"""`run.json` is one strict model, `RunRecord`: written and read by it, no field it does not declare, changed
through its methods, and written by it alone."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from pydantic import ValidationError

from ace.redaction import Redactor
from ace_eval.run.folder import RunFolder, RunFolderError
from ace_eval.run.phases import BenchmarkRecord, PhaseRecord, TaskResult
from ace_eval.run.record import (
    ReportsReview,
    ReviewRecord,
    RoleUsage,
    RunRecord,
    load_run_record,
    read_run_record,
)
from ace_eval.run.segments import Segment

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
SOURCE = Path(__file__).parents[3] / "ace-eval" / "src" / "ace_eval"


def test_the_record_reads_typed_and_an_old_pass_hat_k_keyed_by_k_as_the_list(tmp_path: Path) -> None:
    (tmp_path / "run.json").write_text(json.dumps(RECORD), encoding="utf-8")
    record = read_run_record(tmp_path / "run.json")
    assert record is not None and record.config.epochs == 2 and record.training is not None
    assert (record.training.samples, record.training.errors) == (6, 1)
    assert record.errors[0].trace_uid == "demo:t-1" and record.usage["reflector"].requests == 7
    assert record.benchmark is not None and record.benchmark.before is not None
    assert record.benchmark.before.pass_hat_k == [0.5, None] and record.benchmark.after is None
    assert record.benchmark.before.pass_hat_k_at(1) == 0.5 and record.benchmark.before.pass_hat_k_at(3) is None
    assert record.step_timings["reflect"].seconds == 1.5
    assert record.segments[0].status == "completed"


@pytest.mark.parametrize(
    ("where", "data"),
    [
        ("the top level", {**RECORD, "notes": "x"}),
        ("config", {**RECORD, "config": {"epochs": 1, "colour": "red"}}),
        ("segments", {**RECORD, "segments": [{"status": "completed", "extra": 1}]}),
        ("benchmark.before", {**RECORD, "benchmark": {"before": {"episodes": 1, "score": 1.0}}}),
        ("usage", {**RECORD, "usage": {"agent": {"requests": 1, "tokens": 5}}}),
        ("step_timings", {**RECORD, "step_timings": {"reflect": {"calls": 1, "seconds": 1.0, "mean": 1.0}}}),
    ],
)
def test_no_part_of_the_record_takes_a_field_it_does_not_declare(where: str, data: dict[str, object]) -> None:
    with pytest.raises(ValidationError, match=r"Extra inputs are not permitted|Unexpected keyword argument") as e:
        RunRecord.of(data)
    assert where == "the top level" or where in str(e.value)


def test_written_and_read_by_the_same_model(tmp_path: Path) -> None:
    record = RunRecord.of(RECORD)
    record.start_segment(Segment(resumed=True))
    record.resolve_model("reflector", "function:scripted")
    record.set_benchmark(
        BenchmarkRecord(
            before=PhaseRecord(
                name="baseline",
                benchmark="toy",
                task_ids=["a", "b"],
                num_trials=2,
                pass_hat_k=[0.5, 0.0],
                task_results=[
                    TaskResult(task_id="a", rewards=[1.0, 0.0]),
                    TaskResult(task_id="b", rewards=[0.0, None]),
                ],
                usage={"agent": RoleUsage(requests=4, cost_usd=0.25)},
            )
        )
    )
    record.write(tmp_path / "run.json")
    again = load_run_record(tmp_path / "run.json")
    assert again == record
    assert again.status == "running" and len(again.segments) == 2 and again.segments[1].resumed
    assert again.usage["agent"].requests == 4 and again.cost_usd == 0.25  # the benchmark's usage joins the run's
    assert json.loads((tmp_path / "run.json").read_text(encoding="utf-8"))["benchmark"]["before"]["pass_hat_k"] == [
        0.5,
        0.0,
    ]


def test_a_field_set_to_a_wrong_type_is_refused_where_it_is_set() -> None:
    record = RunRecord.of(RECORD)
    with pytest.raises(ValidationError, match="status"):
        record.status = 3  # type: ignore[assignment]


def test_the_written_record_is_redacted_and_still_reads(tmp_path: Path) -> None:
    record = RunRecord.of({**RECORD, "error": "auth failed for key sk-proj-abcdefghijklmnopqrstuvwxyz0123456789"})
    record.write(tmp_path / "run.json", redactor=Redactor())
    text = (tmp_path / "run.json").read_text(encoding="utf-8")
    assert "sk-proj-abcdefghijklmnopqrstuvwxyz0123456789" not in text and "[REDACTED" in text
    assert load_run_record(tmp_path / "run.json").run_id == "run_0123456789ab"


def test_a_missing_or_damaged_run_json_reads_as_none(tmp_path: Path) -> None:
    assert read_run_record(tmp_path / "run.json") is None
    (tmp_path / "run.json").write_text('{"status": ', encoding="utf-8")
    assert read_run_record(tmp_path / "run.json") is None
    (tmp_path / "run.json").write_text('{"training": {"samples": "many"}}', encoding="utf-8")
    assert read_run_record(tmp_path / "run.json") is None


def test_a_resume_reads_run_json_through_the_model_and_names_a_bad_field(tmp_path: Path) -> None:
    folder = RunFolder(tmp_path)
    record = RunRecord.of(RECORD)
    record.write(folder.run_json)
    assert folder.read_record() == record
    (tmp_path / "run.json").write_text(json.dumps({**RECORD, "errors": [{"trace_uid": "x"}]}), encoding="utf-8")
    with pytest.raises(RunFolderError, match=r"run\.json: field 'errors\.0\.epoch': Field required: the run folder"):
        folder.read_record()


_WRITES = re.compile(r"\b(write_text|write_bytes|atomic_write|json\.dump|open)\(")


def test_run_record_is_the_only_writer_of_run_json() -> None:
    """No module but `run/record.py` writes `run.json`: a line that names it (`run_json`, `RUN_JSON`, "run.json")
    never writes, and no module writes a record's JSON beside the record's own `write`."""
    offenders = []
    for path in sorted(SOURCE.rglob("*.py")):
        if path == SOURCE / "run" / "record.py":
            continue
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            names_it = "run_json" in line or "RUN_JSON" in line or "run.json" in line
            if names_it and _WRITES.search(line) and not line.lstrip().startswith(('"', "#")):
                offenders.append(f"{path.relative_to(SOURCE)}:{number}: {line.strip()}")
    assert offenders == []
    assert not [p for p in SOURCE.rglob("*.py") if "def write_run_json" in p.read_text(encoding="utf-8")]


def test_the_runner_knows_a_review_step_by_what_it_declares_not_by_its_class() -> None:
    from ace_eval.review.step import ReviewStep

    class PluginStaging:  # a third party's step that stages edits elsewhere
        def review_record(self) -> ReviewRecord:
            return ReviewRecord(skillbook="book.json", queue="book.review.json", queued=2)

    assert isinstance(PluginStaging(), ReportsReview) and issubclass(ReviewStep, ReportsReview)
    assert not isinstance(object(), ReportsReview)
    record = RunRecord()
    record.set_review(PluginStaging().review_record())
    assert record.to_json()["review"]["queued"] == 2
