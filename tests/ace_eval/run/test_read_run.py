"""`read_run`: a scripted run's folder read into a typed `Run` (record, samples, skillbook and its source, spans and
sessions), the skillbook's fallback to the checkpoint (and the commands naming it), and the folders it refuses,
each without writing anything."""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path

import pytest
from _e2e_support import scripted_injections
from click.testing import CliRunner

import ace_eval.run
from ace import Skillbook
from ace_eval.cli import main
from ace_eval.e2e import runner
from ace_eval.e2e.config import E2ESettings
from ace_eval.run import Run, RunSkillbookError, read_run
from ace_eval.run.checkpoint import read_checkpoint
from ace_eval.run.folder import RunFolderError
from ace_eval.run.record import RunRecordError
from ace_eval.run.samples import SamplesJournalError, load_samples

DEMO = Path(__file__).resolve().parents[3] / "examples" / "demo-collection"


@pytest.fixture(scope="module")
def demo_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("runs")
    settings = E2ESettings(traces=DEMO, no_benchmark=True, output_dir=out, max_workers=2, sm_sessions="ordered")
    return runner.run_e2e(settings, injections=scripted_injections()).folder.path


@pytest.fixture
def copy(demo_run: Path, tmp_path: Path) -> Path:
    return Path(shutil.copytree(demo_run, tmp_path / demo_run.name))


def files(folder: Path) -> dict[str, bytes]:
    """Every file of a folder with its bytes, to show that reading wrote nothing."""
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_a_finished_run_reads_into_a_typed_run(demo_run: Path) -> None:
    before = files(demo_run)
    run = read_run(demo_run)
    assert ace_eval.run.read_run is read_run and ace_eval.run.Run is Run
    assert (run.path, run.record.run_id, run.record.status) == (demo_run, demo_run.name, "completed")
    assert run.record.training is not None and run.record.training.samples == len(run.samples) == 10
    assert list(run.samples) == load_samples(demo_run / "samples.jsonl")
    assert [n for n, _ in run.sample_lines()] == list(range(1, 11))

    loaded = run.skillbook
    assert (loaded.source, loaded.journal, loaded.passed_over) == (demo_run / "skillbook.json", None, None)
    assert loaded.describe() == str(demo_run / "skillbook.json")
    assert loaded.book.to_dict() == Skillbook.load_from_file(demo_run / "skillbook.json").to_dict()
    assert run.skillbook is loaded  # loaded once

    view = run.view()
    assert view.has_spans and len(view.samples) == 10 and run.spans()
    assert all([s.kind for s in v.sessions] == ["reflect", "sm"] for v in view.samples)
    with pytest.raises(dataclasses.FrozenInstanceError):
        run.record = run.record  # type: ignore[misc]
    assert files(demo_run) == before


def test_a_damaged_skillbook_is_read_from_the_snapshot_which_the_commands_name(copy: Path) -> None:
    (copy / "skillbook.json").write_text('{"schema_version": "2", "skills": [', encoding="utf-8")
    before = files(copy)
    loaded = read_run(copy).skillbook
    snapshot = copy / "skillbook.snapshot.json"
    assert (loaded.source, loaded.journal) == (snapshot, copy / "samples.jsonl")
    assert loaded.published == copy / "skillbook.json"
    assert loaded.published_error is not None and "malformed JSON" in loaded.published_error
    assert loaded.book.to_dict() == read_checkpoint(copy).to_dict() and len(loaded.book) > 0

    inspect = CliRunner().invoke(main, ["inspect", str(copy)])
    assert inspect.exit_code == 0, inspect.output
    skillbook_line = inspect.output.splitlines()[1]
    assert skillbook_line.startswith(f"Skillbook: {len(loaded.book)} active skills from {snapshot} + samples.jsonl")
    assert "(skillbook.json cannot be read: " in skillbook_line
    payload = json.loads(CliRunner().invoke(main, ["inspect", str(copy), "--json"]).output)
    assert payload["skillbook"]["source"] == str(snapshot) and payload["skillbook"]["published_error"]

    stats = CliRunner().invoke(main, ["skills", "stats", str(copy)])
    assert stats.exit_code == 0, stats.output
    last = stats.output.splitlines()[-1]
    assert f"quarantined ({snapshot} + samples.jsonl (skillbook.json cannot be read: " in last

    verify = CliRunner().invoke(main, ["verify", str(copy)])  # checks what the run publishes, not a stand-in
    assert verify.exit_code == 2 and "PASS" not in verify.output and "FAIL" not in verify.output, verify.output
    assert verify.output.startswith(f"Error: {copy}/skillbook.json cannot be read (line 1, column ")
    assert (
        ": malformed JSON: " in verify.output
        and "skillbook.snapshot.json and samples.jsonl still hold" in verify.output
    )
    assert files(copy) == before


def test_a_skillbook_not_published_yet_or_older_than_the_journal_is_read_from_the_checkpoint(copy: Path) -> None:
    (copy / "skillbook.json").unlink()
    loaded = read_run(copy).skillbook
    assert loaded.source.name == "skillbook.snapshot.json" and "not there yet" in (loaded.passed_over or "")
    assert loaded.published_error is None

    Skillbook().save_to_file(copy / "skillbook.json")  # as a resumed run leaves it: the journal has gone further
    loaded = read_run(copy).skillbook
    assert loaded.source.name == "skillbook.snapshot.json" and "older than the journal" in (loaded.passed_over or "")
    assert loaded.book.to_dict() == read_checkpoint(copy).to_dict()


def test_a_folder_from_before_the_snapshot_had_its_own_name_replays_the_journal_over_its_skillbook(copy: Path) -> None:
    learned = Skillbook.load_from_file(copy / "skillbook.json")
    for name in ("skillbook.snapshot.json", "skillbook.snapshot.embeddings.npz"):
        (copy / name).unlink()
    Skillbook().save_to_file(copy / "skillbook.json")  # the checkpoint's file then, older than the journal
    loaded = read_run(copy).skillbook
    assert (loaded.source, loaded.journal) == (copy / "skillbook.json", copy / "samples.jsonl")
    assert "older than the journal" in (loaded.passed_over or "") and loaded.published_error is None
    assert loaded.book.operations_count == learned.operations_count > 0
    assert [s.to_dict() for s in loaded.book.skills()] == [s.to_dict() for s in learned.skills()]


def test_no_readable_skillbook_is_a_user_error_naming_the_file_and_the_fix(copy: Path) -> None:
    (copy / "skillbook.json").write_text("[", encoding="utf-8")
    (copy / "skillbook.snapshot.json").unlink()
    before = files(copy)
    run = read_run(copy)  # the run itself still reads: only its skillbook cannot
    with pytest.raises(RunSkillbookError, match=r"skillbook\.json cannot be read \(.*restore skillbook\.json from a"):
        _ = run.skillbook
    stats = CliRunner().invoke(main, ["skills", "stats", str(copy)])
    assert stats.exit_code == 2 and "no checkpoint snapshot (skillbook.snapshot.json)" in stats.output
    inspect = CliRunner().invoke(main, ["inspect", str(copy)])
    assert inspect.exit_code == 0
    assert inspect.output.splitlines()[1].startswith(f"Skillbook: {copy}/skillbook.json cannot be read (")
    assert files(copy) == before


def test_a_missing_or_damaged_run_json_is_refused(copy: Path) -> None:
    (copy / "run.json").unlink()
    with pytest.raises(RunFolderError, match=r"is not a run folder \(it has no run\.json\): pass a folder written by"):
        read_run(copy)
    for command in (["inspect"], ["verify"], ["skills", "stats"]):
        result = CliRunner().invoke(main, [*command, str(copy)])
        assert result.exit_code == 2 and "it has no run.json" in result.output, (command, result.output)

    (copy / "run.json").write_text("[" * 50_000 + "]" * 50_000, encoding="utf-8")
    with pytest.raises(
        RunRecordError, match=r"run\.json, line 1, column 101: .*nested more than 100 levels deep.*the run folder is"
    ):
        read_run(copy)
    (copy / "run.json").write_text(json.dumps({"config": {}, "training": {"samples": "many"}}), encoding="utf-8")
    with pytest.raises(RunRecordError, match=r"run\.json: field 'training\.samples'"):
        read_run(copy)
    for command in (["inspect"], ["verify"]):
        result = CliRunner().invoke(main, [*command, str(copy)])
        assert result.exit_code == 2 and "run.json: field 'training.samples'" in result.output, result.output


def test_a_folder_that_is_not_a_run(tmp_path: Path) -> None:
    with pytest.raises(RunFolderError, match=r"it has no run\.json"):
        read_run(tmp_path)
    (tmp_path / "notes.txt").write_text("hello", encoding="utf-8")
    with pytest.raises(RunFolderError, match=r"is not a run folder \(it is a file\)"):
        read_run(tmp_path / "notes.txt")
    with pytest.raises(RunFolderError, match=r"is not a run folder \(the folder does not exist\)"):
        read_run(tmp_path / "gone")
    assert [p.name for p in tmp_path.iterdir()] == ["notes.txt"]


def test_a_damaged_journal_line_is_refused_by_every_reader_and_a_torn_last_one_left_alone(copy: Path) -> None:
    journal = copy / "samples.jsonl"
    lines = journal.read_text(encoding="utf-8").splitlines()
    journal.write_text("\n".join(lines) + '\n{"trace_uid": "a line still being wri', encoding="utf-8")
    before = files(copy)
    run = read_run(copy)
    assert len(run.samples) == 10 and len(run.sample_lines()) == 10
    assert files(copy) == before  # the torn line is left for --resume to cut
    lines[4] = "not json"
    journal.write_text("\n".join(lines) + "\n", encoding="utf-8")
    damaged = r"samples\.jsonl, line 5: not a sample record \(not valid JSON .*\): the journal is damaged"
    for read in (read_run, lambda folder: load_samples(folder / "samples.jsonl")):  # no reader skips it silently
        with pytest.raises(SamplesJournalError, match=damaged):
            read(copy)
    assert files(copy) == before | {"samples.jsonl": journal.read_bytes()}  # nothing else written


def test_a_decision_on_a_run_with_a_damaged_skillbook_rewrites_it_from_the_checkpoint(copy: Path) -> None:
    (copy / "skillbook.json").write_text("[", encoding="utf-8")
    skill_id = read_run(copy).skillbook.book.skills()[0].id
    result = CliRunner().invoke(main, ["skills", "quarantine", str(copy), skill_id, "--reason", "misleading"])
    assert result.exit_code == 0, result.output
    assert f"({copy / 'skillbook.json'}, {copy / 'skillbook.snapshot.json'}; logged" in result.output
    loaded = read_run(copy).skillbook
    assert loaded.source == copy / "skillbook.json" and loaded.passed_over is None
    assert loaded.book.require_skill(skill_id).quarantine is not None
    assert read_checkpoint(copy).require_skill(skill_id).quarantine is not None
