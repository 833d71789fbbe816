"""A run killed halfway and continued with `--resume` finishes with nothing lost and nothing done twice."""

from __future__ import annotations

import functools
import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from _e2e_support import ScriptedReflector, import_trajectories, kill_after, scripted_injections
from click.testing import CliRunner, Result

from ace import Skillbook
from ace_eval.cli import main
from ace_eval.e2e import runner
from ace_eval.e2e.config import E2ESettings
from ace_eval.run.folder import RunFolderError

LIMIT, KILL_AFTER = 20, 7


class Killed(Exception):
    """A failure that ends the run: raised from the per-sample hook after `KILL_AFTER` committed samples."""


@pytest.fixture(scope="module")
def tau_collection(airline_data: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return import_trajectories(airline_data, tmp_path_factory.mktemp("tau") / "collection")


def learned(folder: Path) -> dict[str, tuple[str, list[str], int]]:
    book = Skillbook.load_from_file(folder / "skillbook.json")
    return {s.id: (s.issue, s.keywords, len(s.occurrences)) for s in book.skills(include_inactive=True)}


def assert_each_sample_once(folder: Path) -> None:
    """Every (trace, epoch) recorded exactly once, and the skillbook holds exactly the operations recorded."""
    lines = [json.loads(line) for line in (folder / "samples.jsonl").read_text(encoding="utf-8").splitlines()]
    keys = [(line["trace_uid"], line["epoch"]) for line in lines]
    assert len(keys) == LIMIT and len(set(keys)) == LIMIT
    assert sorted(line["index"] for line in lines) == list(range(LIMIT))
    book = Skillbook.load_from_file(folder / "skillbook.json")
    occurrences = Counter(o.trace_uid for s in book.skills(include_inactive=True) for o in s.occurrences)
    recorded = Counter({line["trace_uid"]: len(line["operations"]) for line in lines})
    assert occurrences == recorded  # no operation lost, none applied twice
    assert len(book.operations) == sum(recorded.values())


def interrupted_run(cli: CliRunner, args: list[str], out: Path, reflector: ScriptedReflector) -> Path:
    """`ace-eval e2e` with `args`, stopped by Ctrl-C after `KILL_AFTER` samples; its run folder."""
    killing = scripted_injections(reflector, on_sample=kill_after(KILL_AFTER))
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr("ace_eval.commands.e2e.run_e2e", functools.partial(runner.run_e2e, injections=killing))
        first = cli.invoke(main, args)
    assert first.exit_code == 130, first.output
    [folder] = list(out.iterdir())
    assert f"continue it with: ace-eval e2e --resume {folder}" in first.stderr
    return folder


def resumed_run(cli: CliRunner, folder: Path, reflector: ScriptedReflector, *options: str) -> Result:
    """`ace-eval e2e --resume folder`, with the same scripted roles; it must succeed."""
    resuming = scripted_injections(reflector)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr("ace_eval.commands.e2e.resume_e2e", functools.partial(runner.resume_e2e, injections=resuming))
        second = cli.invoke(main, ["e2e", "--resume", str(folder), *options])
    assert second.exit_code == 0, second.output
    return second


@pytest.mark.parametrize("workers", [1, 4])
def test_killed_run_resumes_with_nothing_lost_or_done_twice(
    tau_collection: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, workers: int
) -> None:
    monkeypatch.delenv("LOGFIRE_TOKEN", raising=False)
    args = ["e2e", "--traces", str(tau_collection), "--no-benchmark", "--limit", str(LIMIT)]
    # Ordered sessions, so that the run equals the reference exactly (concurrent resume: tests/test_training_resume.py).
    args += ["--max-workers", str(workers), "--sm-sessions", "ordered", "--output-dir", str(tmp_path / "out")]
    cli = CliRunner()

    # the reference: the same run, never interrupted
    settings = E2ESettings(
        traces=tau_collection,
        no_benchmark=True,
        limit=LIMIT,
        max_workers=workers,
        sm_sessions="ordered",
        output_dir=tmp_path,
    )
    reference = runner.run_e2e(settings, injections=scripted_injections())

    reflector = ScriptedReflector()
    folder = interrupted_run(cli, args, tmp_path / "out", reflector)
    record = json.loads((folder / "run.json").read_text(encoding="utf-8"))
    committed = record["training"]["samples"]  # the samples in flight when Ctrl-C landed may still have committed
    assert record["status"] == "interrupted" and KILL_AFTER <= committed <= KILL_AFTER + 2 * workers < LIMIT
    assert not (folder / "skillbook.md").exists()

    second = resumed_run(cli, folder, reflector, "--verbose")
    assert f"Run folder: {folder}" in second.stdout
    verbose = [line for line in second.stderr.splitlines() if line.startswith("[")]
    assert len(verbose) == LIMIT - committed and verbose[0].startswith(f"[{committed + 1}/{LIMIT}]")

    record = json.loads((folder / "run.json").read_text(encoding="utf-8"))
    assert record["status"] == "completed"
    assert record["training"]["samples"] == LIMIT and record["training"]["resumed_samples"] == committed
    assert [s["status"] for s in record["segments"]] == ["interrupted", "completed"]
    assert [s["resumed"] for s in record["segments"]] == [False, True]
    assert len(record["samples"]) == LIMIT
    assert_each_sample_once(folder)
    assert learned(folder) == learned(reference.folder.path)
    if workers == 1:
        assert sum(reflector.calls.values()) == LIMIT  # no reflection was redone
    else:  # reflections in flight when the run died are redone, but never recorded twice
        assert LIMIT <= sum(reflector.calls.values()) <= LIMIT + 2 * workers
    assert cli.invoke(main, ["verify", str(folder)]).exit_code == 0


def test_killed_concurrent_run_resumes_with_nothing_lost_or_done_twice(
    tau_collection: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The default concurrent sessions through the CLI: Ctrl-C while sessions edit the skillbook at once, then
    `--resume`. A session whose edits reached the checkpoint on another sample's line is recorded as interrupted
    (its edits kept, not re-run); every sample is recorded once and every edit applied once."""
    monkeypatch.delenv("LOGFIRE_TOKEN", raising=False)
    workers = 4
    args = ["e2e", "--traces", str(tau_collection), "--no-benchmark", "--limit", str(LIMIT)]
    args += ["--max-workers", str(workers), "--sm-sessions", "concurrent", "--output-dir", str(tmp_path / "out")]
    cli = CliRunner()
    reflector = ScriptedReflector()
    folder = interrupted_run(cli, args, tmp_path / "out", reflector)
    committed = json.loads((folder / "run.json").read_text(encoding="utf-8"))["training"]["samples"]
    assert KILL_AFTER <= committed <= KILL_AFTER + 2 * workers < LIMIT

    resumed_run(cli, folder, reflector)
    record = json.loads((folder / "run.json").read_text(encoding="utf-8"))
    assert record["status"] == "completed" and record["training"]["samples"] == LIMIT
    interrupted = [s for s in record["samples"] if (s.get("error") or "").startswith("InterruptedSession")]
    assert all(s["operations"] for s in interrupted)
    assert_each_sample_once(folder)
    # Reflections in flight when the run died are redone; interrupted sessions are not.
    assert LIMIT - len(interrupted) <= sum(reflector.calls.values()) <= LIMIT + 2 * workers
    assert cli.invoke(main, ["verify", str(folder)]).exit_code == 0


def test_resume_after_an_exception_in_the_runner(tau_collection: Path, tmp_path: Path) -> None:
    settings = E2ESettings(traces=tau_collection, no_benchmark=True, limit=LIMIT, output_dir=tmp_path, max_workers=3)
    with pytest.raises(Killed) as info:
        runner.run_e2e(settings, injections=scripted_injections(on_sample=kill_after(KILL_AFTER, Killed("boom"))))
    [folder] = list(tmp_path.iterdir())
    assert any("--resume" in note for note in info.value.__notes__)
    assert json.loads((folder / "run.json").read_text(encoding="utf-8"))["error"] == "Killed: boom"
    done = runner.resume_e2e(folder, injections=scripted_injections())
    assert done.record.status == "completed" and done.record.error is None
    assert_each_sample_once(folder)
    again = runner.resume_e2e(folder, injections=scripted_injections())  # a finished run: nothing left to do
    assert again.record.training.resumed_samples == LIMIT
    assert_each_sample_once(folder)


def test_resume_refuses_settings_that_change_the_results(tau_collection: Path, tmp_path: Path) -> None:
    settings = E2ESettings(traces=tau_collection, no_benchmark=True, limit=3, output_dir=tmp_path)
    folder = runner.run_e2e(settings, injections=scripted_injections()).folder.path
    cli = CliRunner()
    refused = cli.invoke(main, ["e2e", "--resume", str(folder), "--reflector-model", "openai/gpt-4.1", "--epochs", "2"])
    assert refused.exit_code == 2
    assert "reflector_model: 'local' in the run, 'openai/gpt-4.1' now" in refused.output
    assert "epochs: 1 in the run, 2 now" in refused.output
    with pytest.raises(RunFolderError, match="traces_sha256"):
        runner.resume_e2e(folder, {"traces": folder / "collection"}, injections=scripted_injections())
    with pytest.raises(RunFolderError, match="is not a run folder"):
        runner.resume_e2e(tmp_path, injections=scripted_injections())
    # settings that do not change what is learned may differ
    ok = runner.resume_e2e(folder, {"max_workers": 2, "verbose": True}, injections=scripted_injections())
    assert ok.record.config.max_workers == 1  # the run's settings stay; the resume's changes are recorded
    assert ok.record.segments[-1].overrides == {"max_workers": 2, "verbose": True}


def test_a_resume_that_waited_in_preflight_keeps_the_segment_of_the_one_that_finished_meanwhile(
    tau_collection: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Audit 13 #6: resume A reads run.json, then checks its models; resume B runs to the end meanwhile. A must
    # take the record as B left it (under the folder lock), not write its stale copy over B's segment.
    settings = E2ESettings(traces=tau_collection, no_benchmark=True, limit=LIMIT, output_dir=tmp_path, max_workers=3)
    with pytest.raises(Killed):
        runner.run_e2e(settings, injections=scripted_injections(on_sample=kill_after(KILL_AFTER, Killed("boom"))))
    [folder] = list(tmp_path.iterdir())
    preflight = runner._preflight
    calls: list[int] = []

    def slow_preflight(*args: Any) -> Any:
        calls.append(1)
        if len(calls) == 1:  # the first resume, still in its preflight: another one runs to the end
            runner.resume_e2e(folder, injections=scripted_injections())
        return preflight(*args)

    monkeypatch.setattr(runner, "_preflight", slow_preflight)
    runner.resume_e2e(folder, injections=scripted_injections())
    record = json.loads((folder / "run.json").read_text(encoding="utf-8"))
    assert [s["status"] for s in record["segments"]] == ["failed", "completed", "completed"]
    assert record["status"] == "completed"
    assert_each_sample_once(folder)


def test_a_resume_of_a_completed_run_says_there_is_nothing_left(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    demo = Path(__file__).resolve().parents[3] / "examples" / "demo-collection"
    settings = E2ESettings(traces=demo, no_benchmark=True, output_dir=tmp_path, limit=2)
    folder = runner.run_e2e(settings, injections=scripted_injections()).folder.path
    capsys.readouterr()
    runner.resume_e2e(folder, injections=scripted_injections())
    assert f"note: {folder} completed with no failed sample: there is nothing left to resume" in capsys.readouterr().err
