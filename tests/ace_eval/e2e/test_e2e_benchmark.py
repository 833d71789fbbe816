"""Without --traces the agent runs the tau-bench tasks to collect traces; without --no-benchmark it is evaluated
again with the learned skillbook and pass^k before / after lands in run.json."""

from __future__ import annotations

import functools
import json
import signal
import threading
from collections import Counter
from pathlib import Path

import pytest
from _ace_scripts import reflector_function, skill_manager_function
from _e2e_support import import_trajectories, responses, scripted_injections, scripted_models, scripted_user
from click.testing import CliRunner
from pydantic_ai.messages import ModelMessage, ModelResponse
from pydantic_ai.models.function import AgentInfo, FunctionModel

from ace.embeddings.test import TestEmbedder
from ace_eval.cli import main
from ace_eval.collection import read_collection, write_collection
from ace_eval.commands.e2e import format_summary
from ace_eval.e2e import runner
from ace_eval.e2e.config import E2ESettings
from ace_eval.e2e.runner import RunInjections
from ace_eval.e2e.training import SampleResult


class CountingUser:
    """The scripted user, counting the episodes it starts (its first reply of each conversation)."""

    def __init__(self) -> None:
        self.episodes = 0
        self._lock = threading.Lock()

    def __call__(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if responses(messages) == 0:
            with self._lock:
                self.episodes += 1
        return scripted_user(messages, info)


def test_collect_train_evaluate(airline_data: Path, tmp_path: Path) -> None:
    settings = E2ESettings(
        data_dir=airline_data, limit=2, num_trials=2, max_workers=2, max_num_steps=5, output_dir=tmp_path
    )
    result = runner.run_e2e(settings, injections=scripted_injections())
    folder = result.folder
    collected = read_collection(folder.collection)
    evaluated = read_collection(folder.evaluation)
    uids = [f"tau-bench-airline:task-{t}-trial-{k}" for t in (0, 1) for k in (0, 1)]
    assert sorted(t.trace_uid for t in collected[1]) == uids and sorted(t.trace_uid for t in evaluated[1]) == uids
    assert collected[0].models == {"agent": "function:scripted-agent", "user": "function:scripted-user"}
    assert all(t.metadata["ended"] == "user_stop" and t.reward is not None for t in collected[1])
    assert all(t.skills_in_context == [] for t in collected[1])
    assert all(t.skills_in_context for t in evaluated[1])  # the learned skillbook was in the agent's prompt
    assert not folder.baseline.exists()  # the collected episodes are the baseline

    record = result.record.to_json()
    assert record["training"]["samples"] == 4 and record["training"]["errors"] == 0
    before, after = record["benchmark"]["before"], record["benchmark"]["after"]
    assert len(before["pass_hat_k"]) == len(after["pass_hat_k"]) == 2  # pass^1, pass^2
    assert (before["episodes"], after["episodes"], before["tasks"]) == (4, 4, 2)
    assert 0.0 <= before["pass_hat_k"][0] <= 1.0 and before["errors"] == 0
    assert (before["name"], after["name"], after["benchmark"], after["num_trials"]) == (
        "collect",
        "evaluate",
        "tau-bench-airline",
        2,
    )
    assert [t["task_id"] for t in after["task_results"]] == after["task_ids"] == ["0", "1"]
    assert all(len(t["rewards"]) == 2 for t in after["task_results"])
    assert [d["task_id"] for d in record["benchmark"]["task_deltas"]] == ["0", "1"]
    usage = record["usage"]
    assert usage["agent"]["requests"] == 16 and usage["user"]["requests"] == 16  # 8 episodes x 2 each
    assert usage["reflector"]["requests"] == 4
    # 3 per session, plus one per conflict with a concurrent session (the scripted model then widens that skill)
    assert 12 <= usage["skill_manager"]["requests"] <= 16
    assert set(record["timings"]) == {"collect", "train", "evaluate", "total"}
    assert not (folder.path / "baseline").exists()
    summary = format_summary(result)
    assert "pass^1: " in summary and "pass^2: " in summary and "  agent: 16 requests" in summary


def test_killed_during_training_resumes_without_rerunning_episodes(airline_data: Path, tmp_path: Path) -> None:
    user = CountingUser()

    def injections(**kwargs: object) -> runner.RunInjections:
        inj = scripted_injections(**kwargs)  # type: ignore[arg-type]
        models = {**inj.models, "user": FunctionModel(user, model_name="scripted-user")}
        return runner.RunInjections(models=models, embedder=inj.embedder, on_sample=inj.on_sample, show_progress=False)

    def die(sample: SampleResult) -> None:
        signal.raise_signal(signal.SIGINT)  # Ctrl-C after the first training sample

    settings = E2ESettings(data_dir=airline_data, limit=3, max_num_steps=5, output_dir=tmp_path)
    with pytest.raises(KeyboardInterrupt):
        runner.run_e2e(settings, injections=injections(on_sample=die))
    assert user.episodes == 3  # collected; training died after its first sample
    [folder] = list(tmp_path.iterdir())
    done = runner.resume_e2e(folder, injections=injections())
    assert user.episodes == 6  # the 3 evaluation episodes only: nothing collected twice
    assert done.record.training.samples == 3 and done.record.training.resumed_samples == 1
    again = runner.resume_e2e(folder, injections=injections())
    assert user.episodes == 6 and again.record.benchmark == done.record.benchmark


def test_replayed_traces_are_evaluated_against_a_baseline(
    airline_data: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    traces = import_trajectories(airline_data, tmp_path / "collection")
    monkeypatch.setattr(
        "ace_eval.commands.e2e.run_e2e", functools.partial(runner.run_e2e, injections=scripted_injections())
    )
    args = ["e2e", "--traces", str(traces), "--benchmark", "--limit", "3", "--data-dir", str(airline_data)]
    result = CliRunner().invoke(main, [*args, "--output-dir", str(tmp_path / "out"), "--max-num-steps", "4"])
    assert result.exit_code == 0, result.output
    assert "pass^1: " in result.stdout and " before -> " in result.stdout
    [folder] = list((tmp_path / "out").iterdir())
    record = json.loads((folder / "run.json").read_text(encoding="utf-8"))
    tasks = Counter(t.task_id for t in read_collection(folder / "baseline")[1])
    assert tasks == Counter({"0": 1, "1": 1, "2": 1})  # the replayed traces' tasks, once each (1 trial)
    assert record["benchmark"]["before"]["episodes"] == record["benchmark"]["after"]["episodes"] == 3
    assert set(record["timings"]) == {"train", "baseline", "evaluate", "total"}


@pytest.mark.parametrize(("injection", "shown"), [("top-k", True), ("none", False)])
def test_evaluation_injects_the_skillbook_as_configured(
    airline_data: Path, tmp_path: Path, injection: str, shown: bool
) -> None:
    settings = E2ESettings(
        data_dir=airline_data,
        limit=1,
        max_num_steps=5,
        output_dir=tmp_path,
        skill_injection=injection,  # type: ignore[arg-type]
        top_k=2,
    )
    result = runner.run_e2e(settings, injections=scripted_injections())
    evaluated = read_collection(result.folder.evaluation)[1]
    learned = {s.id for s in result.skillbook.skills()}
    assert learned, "the scripted skill manager learns at least one skill"
    for trace in evaluated:
        assert bool(trace.skills_in_context) is shown
        assert len(trace.skills_in_context) <= 2
        assert set(trace.skills_in_context) <= learned


def test_a_run_with_quarantined_skills_reports_pass_k_with_and_without_them(
    airline_data: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first replayed trace teaches a skill; the next two failed with it in context, so the reflector tags it
    harmful on two traces and the default pipeline quarantines it; the evaluation runs twice."""
    imported = read_collection(import_trajectories(airline_data, tmp_path / "all"))[1][:3]
    traces = [
        imported[0],
        *(t.model_copy(update={"reward": 0.0, "skills_in_context": ["context-00001"]}) for t in imported[1:]),
    ]
    write_collection(tmp_path / "collection", traces, source_system=imported[0].source_system)
    models = {
        **scripted_models(),
        "reflector": FunctionModel(reflector_function(), model_name="scripted-reflector"),
        "skill_manager": FunctionModel(skill_manager_function(), model_name="scripted-sm"),
    }
    injections = RunInjections(models=models, embedder=TestEmbedder(), show_progress=False)
    monkeypatch.setattr("ace_eval.commands.e2e.run_e2e", functools.partial(runner.run_e2e, injections=injections))
    args = ["e2e", "--traces", str(tmp_path / "collection"), "--benchmark", "--data-dir", str(airline_data)]
    args += ["--max-num-steps", "4"]
    result = CliRunner().invoke(main, [*args, "--output-dir", str(tmp_path / "out"), "--no-preflight"])
    assert result.exit_code == 0, result.output
    [folder] = list((tmp_path / "out").iterdir())
    record = json.loads((folder / "run.json").read_text(encoding="utf-8"))
    assert record["training"]["skillbook"]["quarantined"] == 1
    bench = record["benchmark"]
    assert bench["after"]["episodes"] == bench["after_with_quarantined"]["episodes"] == 3
    assert len(bench["after_with_quarantined"]["pass_hat_k"]) == 1
    without = read_collection(folder / "evaluation")[1]
    with_them = read_collection(folder / "evaluation_with_quarantined")[1]
    assert all("context-00001" not in t.skills_in_context for t in without)
    assert all("context-00001" in t.skills_in_context for t in with_them)
    assert "with the 1 quarantined skill back in the agent's context" in result.stdout
    assert "evaluate_with_quarantined" in record["timings"]
    saved = json.loads((folder / "skillbook.json").read_text(encoding="utf-8"))
    assert "quarantine" in saved["skills"][0]  # the copy evaluated with it released was never saved


def test_the_data_folder_from_the_environment_is_recorded_and_kept_on_resume(
    airline_data: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A run given its data folder only through $ACE_TAU_BENCH_DATA records it (the benchmark's resolved options);
    a resume after the variable changed keeps the run's folder and says so."""
    monkeypatch.chdir(airline_data.parent)
    monkeypatch.setenv("ACE_TAU_BENCH_DATA", airline_data.name)  # relative: recorded absolute

    def die(sample: SampleResult) -> None:
        signal.raise_signal(signal.SIGINT)

    settings = E2ESettings(limit=2, max_num_steps=4, output_dir=tmp_path)
    with pytest.raises(KeyboardInterrupt):
        runner.run_e2e(settings, injections=scripted_injections(on_sample=die))
    [folder] = list(tmp_path.iterdir())
    recorded = json.loads((folder / "run.json").read_text(encoding="utf-8"))
    assert recorded["config"]["data_dir"] is None  # not a setting of the run: the benchmark read it
    assert recorded["resolved_benchmark"]["name"] == "tau-bench-airline"
    options = recorded["resolved_benchmark"]["options"]
    assert options["data_dir"] == str(airline_data.absolute()) and options["max_num_steps"] == 4
    assert options["limit"] == 2 and options["skill_injection"] == "prompt"

    monkeypatch.setenv("ACE_TAU_BENCH_DATA", str(tmp_path / "moved"))  # no data there: the resume must not use it
    capsys.readouterr()
    done = runner.resume_e2e(folder, injections=scripted_injections())
    assert done.record.status == "completed" and done.record.benchmark is not None
    assert done.record.benchmark.after is not None and done.record.benchmark.after.episodes == 2
    assert done.record.resolved_benchmark is not None
    assert done.record.resolved_benchmark.options["data_dir"] == str(airline_data.absolute())
    err = capsys.readouterr().err
    assert f"would now resolve it to '{tmp_path / 'moved'}'" in err and "the resume keeps the run's value" in err


def test_a_resume_whose_data_folder_is_gone_stops_with_the_fix(airline_data: Path, tmp_path: Path) -> None:
    """The run's data folder moved away: `e2e --resume` exits 2 with the folder and the fix (--data-dir, which a
    resume accepts), no traceback, and the run folder as it was."""
    import shutil

    data = tmp_path / "data"
    shutil.copytree(airline_data, data)

    def die(sample: SampleResult) -> None:
        signal.raise_signal(signal.SIGINT)

    settings = E2ESettings(data_dir=data, limit=2, max_num_steps=4, output_dir=tmp_path / "out")
    with pytest.raises(KeyboardInterrupt):
        runner.run_e2e(settings, injections=scripted_injections(on_sample=die))
    [folder] = list((tmp_path / "out").iterdir())
    shutil.rmtree(data)
    before = {p: p.read_bytes() for p in folder.rglob("*") if p.is_file()}

    result = CliRunner().invoke(main, ["e2e", "--resume", str(folder), "--no-preflight"])
    assert result.exit_code == 2, result.output
    assert f"Error: {data} is not a folder" in result.output and "--data-dir" in result.output
    assert "Traceback" not in result.output and "DataFolderError" not in result.output
    assert {p: p.read_bytes() for p in folder.rglob("*") if p.is_file()} == before
