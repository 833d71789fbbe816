"""`ace-eval e2e --benchmark tau2-*`: tau2 runs the learn split, ACE learns from its simulations (imported with the
tau2 importer), and the evaluation split is scored without and with the skillbook; scripted models, no network."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("tau2", reason='tau2-bench is optional: pip install "ace-eval[tau2]"')

from _ace_scripts import make_trace
from _tau2_e2e import tau2_injections, tau2_models
from click.testing import CliRunner

from ace_eval.benchmarks.tau2 import check_against_tau2, trial_seeds
from ace_eval.benchmarks.tau2.limits import peak_requests
from ace_eval.benchmarks.tau2.scripted import Reply, ScriptInfo, scripted_model
from ace_eval.cli import main
from ace_eval.collection import Trace, read_collection, write_collection
from ace_eval.commands import e2e as e2e_command
from ace_eval.e2e import runner

EMAIL = "mia.li3818@example.com"
MOCK_LEARN, MOCK_EVAL = ["create_task_1", "update_task_1"], ["create_task_1", "update_task_1"]


def _run(monkeypatch: pytest.MonkeyPatch, args: list[str]) -> tuple[int, str, Path | None]:
    monkeypatch.setattr(e2e_command, "run_e2e", lambda s: runner.run_e2e(s, injections=tau2_injections()))
    result = CliRunner().invoke(main, ["e2e", *args], catch_exceptions=False)
    folders = sorted(Path(args[args.index("--output-dir") + 1]).glob("run_*"))
    return result.exit_code, result.output, folders[0] if folders else None


def test_tau2_mock_learns_on_one_split_and_is_scored_on_the_other(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _, agent, user = tau2_models("mock", MOCK_LEARN, "e2e-mock")
    code, output, folder = _run(
        monkeypatch,
        [
            "--benchmark",
            "tau2-mock",
            "--agent-model",
            agent,
            "--user-model",
            user,
            "--num-trials",
            "2",
            "--max-num-steps",
            "30",
            "--max-workers",
            "2",
            "--train-split",
            ",".join(MOCK_LEARN),
            "--eval-split",
            ",".join(MOCK_EVAL),
            "--output-dir",
            str(tmp_path / "out"),
        ],
    )
    assert code == 0, output
    assert folder is not None
    manifest, traces = read_collection(folder / "collection")
    assert manifest.benchmark == "tau2-bench-mock" and len(traces) == 4
    assert all(t.reward == 0.0 for t in traces)  # without the skill the agent skips the write
    record = json.loads((folder / "run.json").read_text())
    bench = record["benchmark"]
    assert bench["before"]["pass_hat_k"] == [0.0, 0.0]
    assert bench["after"]["pass_hat_k"] == [1.0, 1.0]
    assert bench["after"]["pass_hat_k_95"][0] == [1.0, 1.0]  # pass^1 with its 95 % interval
    assert [t["rewards"] for t in bench["before"]["task_results"]] == [[0.0, 0.0], [0.0, 0.0]]
    assert {d["task_id"]: d["delta"] for d in bench["task_deltas"]} == {"create_task_1": 1.0, "update_task_1": 1.0}
    assert record["usage"]["agent"]["input_tokens"] > 0 and record["usage"]["user"]["requests"] > 0
    for phase, expected in (("baseline", {1: 0.0, 2: 0.0}), ("evaluation", {1: 1.0, 2: 1.0})):
        assert check_against_tau2(folder / phase / "results.json") == expected  # tau2.metrics on the same file
    assert "pass^1     0.0 [  0.0,   0.0]  100.0 [100.0, 100.0]  +100.0" in output.splitlines()
    assert "pass^2     0.0 [  0.0,   0.0]  100.0 [100.0, 100.0]  +100.0" in output.splitlines()
    verified = CliRunner().invoke(main, ["verify", str(folder)])
    assert verified.exit_code == 0, verified.output


def test_run_json_records_the_step_cap_the_episodes_used_when_none_is_given(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With the embedded model in a role, tau2 plays 20 messages an episode unless told: `config.max_num_steps`
    records that (it said tau2's default 200 beside `resolved_benchmark`'s 20), and `inspect` shows the same."""
    from ace_eval.benchmarks import load_benchmark, tau2_plugin

    plugin = type(load_benchmark("tau2-mock", {}))  # the class the registry builds (its module may be another copy)
    monkeypatch.setitem(plugin.__dict__["_max_steps"].__globals__, "_plays_locally", lambda env: True)  # as `local`
    _, agent, user = tau2_models("mock", MOCK_LEARN[:1], "e2e-mock-cap")
    args = ["--benchmark", "tau2-mock", "--agent-model", agent, "--user-model", user, "--num-trials", "1"]
    args += ["--train-split", MOCK_LEARN[0], "--no-benchmark", "--output-dir", str(tmp_path / "out")]
    code, output, folder = _run(monkeypatch, args)
    assert code == 0, output
    assert folder is not None
    record = json.loads((folder / "run.json").read_text())
    assert record["resolved_benchmark"]["options"]["max_num_steps"] == tau2_plugin.LOCAL_MAX_STEPS
    assert record["config"]["max_num_steps"] == tau2_plugin.LOCAL_MAX_STEPS
    assert record["config"]["sources"]["max_num_steps"] == "default: the benchmark's"
    inspected = CliRunner().invoke(main, ["inspect", str(folder)])
    assert f"max_num_steps={tau2_plugin.LOCAL_MAX_STEPS}" in inspected.output
    resumed = CliRunner().invoke(main, ["e2e", "--resume", str(folder), "--max-num-steps", "200"])
    assert resumed.exit_code == 2  # 200 is not what the run used: a different setting
    assert "different settings (max_num_steps: 20 in the run, 200 now)" in resumed.output


WORKER = Path(__file__).parents[2] / "_tau2_worker.py"


def _worker(log: Path, runs: Path, args: list[str], **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(WORKER), str(log), str(runs), "--", *args],
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, **env},
    )


def test_kill_9_in_the_evaluation_then_resume_runs_no_episode_twice(tmp_path: Path) -> None:
    seed = str(trial_seeds(300, 2)[1])  # the agent refuses on the second trial: pass^1 0.5, pass^2 0.0 with ACE
    args = [
        "--benchmark",
        "tau2-mock",
        "--agent-model",
        "ace-scripted/kill-agent",
        "--user-model",
        "ace-scripted/kill-user",
        "--num-trials",
        "2",
        "--max-num-steps",
        "30",
        "--train-split",
        ",".join(MOCK_LEARN),
        "--eval-split",
        ",".join(MOCK_EVAL),
    ]
    whole = _worker(
        tmp_path / "whole.log",
        tmp_path / "whole",
        [*args, "--output-dir", str(tmp_path / "whole")],
        ACE_TEST_FAIL_SEED=seed,
    )
    assert whole.returncode == 0, whole.stderr
    [uninterrupted] = (tmp_path / "whole").glob("run_*")

    log, runs = tmp_path / "killed.log", tmp_path / "killed"
    killed = _worker(log, runs, [*args, "--output-dir", str(runs)], ACE_TEST_FAIL_SEED=seed, ACE_TEST_KILL_AFTER="2")
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    [folder] = runs.glob("run_*")
    journal = folder / "evaluation" / "episodes.jsonl"
    before = {(e["task_id"], e["trial"]) for e in map(json.loads, journal.read_text().splitlines())}
    assert len(before) == 2 and not (folder / "evaluation" / "results.json").exists()
    first_pid = log.read_text().split()[0]

    resumed = _worker(log, runs, ["--resume", str(folder)], ACE_TEST_FAIL_SEED=seed)
    assert resumed.returncode == 0, resumed.stderr
    episodes = [json.loads(line) for line in journal.read_text().splitlines()]
    keys = [(e["task_id"], e["trial"]) for e in episodes]
    assert len(keys) == len(set(keys)) == 4
    seeds = dict(zip(trial_seeds(300, 2), (0, 1), strict=True))
    rerun = [
        (task, seeds[int(seed_)])
        for pid, phase, task, seed_ in (line.split() for line in log.read_text().splitlines())
        if pid != first_pid and phase == "evaluate"
    ]
    assert sorted(rerun) == sorted(set(keys) - before)  # only the unfinished episodes ran in the resume
    record, expected = (json.loads((f / "run.json").read_text()) for f in (folder, uninterrupted))
    for phase in ("before", "after"):
        assert record["benchmark"][phase]["pass_hat_k"] == expected["benchmark"][phase]["pass_hat_k"]
    assert record["benchmark"]["after"]["pass_hat_k"] == [0.5, 0.0]
    assert check_against_tau2(folder / "evaluation" / "results.json") == {1: 0.5, 2: 0.0}
    assert record["status"] == "completed" and len(record["segments"]) == 2


def test_tau2_airline_two_learn_two_eval_tasks_two_trials(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    learn, evaluate = ["11", "15"], ["16", "19"]
    seed = trial_seeds(300, 2)[1]
    gold, agent, _ = tau2_models("airline", learn + evaluate, "e2e-airline", fail_seeds=frozenset({seed}))

    def user_with_email(messages: list[dict[str, Any]], info: ScriptInfo) -> Reply:
        reply = gold.user(messages, info)
        return Reply(content=f"{reply.content} Write to {EMAIL}.") if "ticket" in str(reply.content) else reply

    user = scripted_model("e2e-airline-user-email", user_with_email)
    code, output, folder = _run(
        monkeypatch,
        [
            "--benchmark",
            "tau2-airline",
            "--agent-model",
            agent,
            "--user-model",
            user,
            "--num-trials",
            "2",
            "--max-workers",
            "4",
            "--provider-limit",
            "1",
            "--train-split",
            ",".join(learn),
            "--eval-split",
            ",".join(evaluate),
            "--output-dir",
            str(tmp_path / "out"),
        ],
    )
    assert code == 0, output
    assert folder is not None
    manifest, traces = read_collection(folder / "collection")
    assert manifest.benchmark == "tau2-bench-airline" and {t.task_id for t in traces} == set(learn)
    assert peak_requests() == {"ace-scripted": 1}  # four workers, one request at a time to the provider
    record = json.loads((folder / "run.json").read_text())
    assert record["config"]["max_num_steps"] == 200  # tau2's default when not given
    assert record["benchmark"]["before"]["pass_hat_k"] == [0.0, 0.0]
    assert record["benchmark"]["after"]["pass_hat_k"] == [0.5, 0.0]
    for phase, expected in (("baseline", {1: 0.0, 2: 0.0}), ("evaluation", {1: 0.5, 2: 0.0})):
        results = folder / phase / "results.json"
        assert {s["task_id"] for s in json.loads(results.read_text())["simulations"]} == set(evaluate)
        assert check_against_tau2(results) == expected
    assert "pass^1     0.0 [  0.0,   0.0]   50.0 [ 50.0,  50.0]  +50.0" in output.splitlines()
    assert "pass^2     0.0 [  0.0,   0.0]    0.0 [  0.0,   0.0]   +0.0" in output.splitlines()
    for name in ("learn/results.json", "learn/episodes.jsonl", "baseline/results.json", "evaluation/episodes.jsonl"):
        text = (folder / name).read_text()
        assert EMAIL not in text and "[REDACTED:email]" in text  # tau2's files are redacted too
    verified = CliRunner().invoke(main, ["verify", str(folder)])
    assert verified.exit_code == 0, verified.output


@pytest.mark.parametrize(("injection", "after"), [("top-k", 1.0), ("none", 0.0)])
def test_a_replayed_collection_is_learned_from_and_the_eval_split_scored(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, injection: str, after: float
) -> None:
    traces = [Trace.model_validate(make_trace(i, "change")) for i in range(2)]
    write_collection(tmp_path / "c", traces, source_system="demo-test")
    _, agent, user = tau2_models("mock", ["create_task_1"], "e2e-replay")
    base = [
        "--benchmark",
        "tau2-mock",
        "--agent-model",
        agent,
        "--user-model",
        user,
        "--traces",
        str(tmp_path / "c"),
        "--eval-split",
        "create_task_1",
        "--skill-injection",
        injection,
        "--output-dir",
        str(tmp_path / "out"),
    ]
    # --train-split has no effect with --traces: a note, and the run goes on (run what the user wrote)
    noted_args = [*base[: base.index("--output-dir")], "--output-dir", str(tmp_path / "noted"), "--train-split", "base"]
    noted_code, noted_output, noted = _run(monkeypatch, noted_args)
    assert noted_code == 0 and noted is not None, noted_output
    assert "--train-split" in noted_output and "the traces given with --traces are learned from" in noted_output
    code, output, folder = _run(monkeypatch, base)
    assert code == 0, output
    assert folder is not None and not (folder / "learn").exists()
    record = json.loads((folder / "run.json").read_text())
    assert record["collection"]["traces_used"] == 2
    assert record["benchmark"]["before"]["pass_hat_k"] == [0.0]
    assert record["benchmark"]["after"]["pass_hat_k"] == [after]  # none: the agent never sees the skill
