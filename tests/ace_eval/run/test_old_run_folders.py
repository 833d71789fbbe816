"""Run folders written by main e5bcddd (before `run.json` was the strict `RunRecord`) still read: `read_run`, and
`inspect`, `verify`, `report` and `runs` on them (see `old_runs_e5bcddd/README.md`)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from _e2e_support import scripted_injections
from click.testing import CliRunner

from ace_eval.cli import main
from ace_eval.e2e import runner
from ace_eval.run import read_run
from ace_eval.run.record import load_run_record

OLD = Path(__file__).parent / "old_runs_e5bcddd"
KINDS = ("replay", "taubench", "tau2")


@pytest.fixture(params=KINDS)
def old_run(request: pytest.FixtureRequest, tmp_path: Path) -> Path:
    """A copy of the folder (the readers write nothing, but a copy keeps the fixture safe from a bug)."""
    [source] = (OLD / request.param).glob("run_*")
    return Path(shutil.copytree(source, tmp_path / request.param / source.name))


def test_read_run_reads_an_old_folder_typed(old_run: Path) -> None:
    run = read_run(old_run)
    record = run.record
    assert record.run_id == old_run.name and record.status == "completed" and record.error is None
    assert record.training is not None and record.training.samples == len(run.samples) > 0
    assert record.training.errors == 0 and record.errors == []
    assert record.config.epochs == 1 and record.pipeline is not None
    assert run.skillbook.book.stats()["active"] > 0 and run.skillbook.source.name == "skillbook.json"
    assert record.usage["reflector"].requests == len(run.samples)


def test_the_benchmark_phases_of_an_old_folder_read(old_run: Path) -> None:
    record = read_run(old_run).record
    kind = old_run.parent.name
    if kind == "replay":
        assert record.benchmark is None
        return
    bench = record.benchmark
    assert bench is not None and bench.before is not None and bench.after is not None
    assert (bench.before.episodes, bench.after.episodes, bench.before.tasks) == (4, 4, 2)
    if kind == "tau2":  # the scripted agent fails without the learned skill and passes with it
        assert (bench.before.pass_hat_k_at(1), bench.after.pass_hat_k_at(2)) == (0.0, 1.0)
        assert record.usage["agent"].requests > 0
    else:
        assert bench.before.pass_hat_k_at(1) is not None


@pytest.mark.parametrize("kind", KINDS)
def test_the_commands_read_an_old_folder(kind: str, tmp_path: Path) -> None:
    [folder] = (OLD / kind).glob("run_*")
    runner = CliRunner()
    verified = runner.invoke(main, ["verify", str(folder)])
    assert verified.exit_code == 0, verified.output
    inspected = runner.invoke(main, ["inspect", str(folder)])
    assert inspected.exit_code == 0, inspected.output
    assert inspected.output.startswith(f"Run {folder.name} (completed): ")
    page = tmp_path / "report.html"
    reported = runner.invoke(main, ["report", str(folder), "-o", str(page)])
    assert reported.exit_code == 0, reported.output
    assert folder.name in page.read_text(encoding="utf-8")
    listed = runner.invoke(main, ["runs", str(OLD / kind)])
    assert listed.exit_code == 0 and folder.name in listed.output, listed.output


def test_an_old_folder_resumes_and_is_rewritten_as_the_strict_record(tmp_path: Path) -> None:
    """A resume reads the old `run.json` into `RunRecord` and writes it back in today's shape; nothing is redone."""
    [source] = (OLD / "replay").glob("run_*")
    folder = Path(shutil.copytree(source, tmp_path / source.name))
    before = read_run(folder).record
    result = runner.resume_e2e(folder, injections=scripted_injections())
    after = load_run_record(folder / "run.json")
    assert after.to_json() == result.record.to_json() and after.status == "completed"
    assert [s.resumed for s in after.segments] == [False, True] and after.segments[0] == before.segments[0]
    assert after.training is not None and after.training.resumed_samples == before.training.samples  # type: ignore[union-attr]
    assert after.config == before.config and after.samples == before.samples
    assert CliRunner().invoke(main, ["verify", str(folder)]).exit_code == 0
