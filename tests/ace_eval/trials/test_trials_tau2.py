"""`ace-eval trials --benchmark tau2-mock`, scripted end to end through tau2's own orchestrator and evaluator (no
network): three candidates whose skill managers learn a helpful, a harmful and a useless skill from the learn split
collected once; the helpful one wins, passes the gate against the empty incumbent, is published, and only it meets
the test task; the other two are `lost` with their skillbooks and dev evidence on record."""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

pytest.importorskip("tau2", reason='tau2-bench is optional: pip install "ace-eval[tau2]"')

from _trials_support import comparable, script_candidates
from _trials_tau2 import DEV, LEARN, TEST, injections, register, trial_args
from click.testing import CliRunner

from ace_eval.benchmarks.tau2 import trial_seeds
from ace_eval.cli import main
from ace_eval.store import SkillbookStore
from ace_eval.trials import read_scoreboard

NAMES = {k: f"skill_manager_model=test_{k}" for k in ("helpful", "harmful", "useless")}


def log_lines(log: Path) -> list[tuple[str, str, str]]:
    """(kind of skill in the prompt, task, seed) of every episode the scripted agent played."""
    return [(kind, task, seed) for _pid, kind, task, seed in (line.split() for line in log.read_text().splitlines())]


def test_the_helpful_candidate_wins_on_tau2_mock_and_alone_meets_the_test_task(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log, out, store = tmp_path / "agent.log", tmp_path / "trial", tmp_path / "store"
    register(log)
    learned = script_candidates(monkeypatch, injections)
    result = CliRunner().invoke(main, trial_args("--out", str(out), "--publish", str(store)), catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert learned == ["test:helpful", "test:harmful", "test:useless"]  # each candidate learned once
    board = read_scoreboard(out / "scoreboard.json")
    by_name = {c.name: c for c in board.candidates}
    helpful, harmful, useless = (by_name[NAMES[k]] for k in ("helpful", "harmful", "useless"))
    dev = DEV.split(",")
    assert board.benchmark == "tau2-mock" and board.dev_tasks == dev and board.test_tasks == [TEST]
    assert board.winner == helpful.name and helpful.verdict == "won"
    assert harmful.verdict == useless.verdict == "lost"
    assert helpful.dev.per_task == {task: [1.0] for task in dev}
    assert harmful.dev.per_task == {task: [0.0] for task in dev}  # it followed the harmful skill: every task fails
    incumbent = json.loads((out / "incumbent" / "scores.json").read_text())
    assert useless.dev.per_task == {t: [r["reward"] for r in trials] for t, trials in incumbent["tasks"].items()}
    assert useless.dev.per_task["impossible_task_1"] == [1.0] and useless.dev.mean == pytest.approx(1 / 7)
    assert board.pareto == [helpful.name, useless.name]  # ties included: both pass impossible_task_1
    for loser in (harmful, useless):  # losers keep their runs, skillbooks and dev evidence
        skills = json.loads(Path(loser.skillbook).read_text())["skills"]
        assert skills and Path(loser.run_dir, "run.json").is_file()
        assert Path(loser.run_dir).parent.joinpath("dev", "results.json").is_file()  # tau2's own file
    # the gate: the winner against the agent without a skillbook, on the same tasks and seeds
    assert board.incumbent == "none" and board.gate.decision == "promote" and board.gate.tasks == 7
    assert board.gate.p_value < 0.05 and board.gate.delta.mean == pytest.approx(6 / 7)
    assert board.published == f"{store} version 1"
    current = SkillbookStore(store).current()
    assert current is not None and current.record.produced_by.kind == "trials"
    assert board.test is not None and board.test.candidate == helpful.name and board.test.per_task == {TEST: [1.0]}
    # the agent's own log: the learn split ran once (shared), only the winner met the test task
    episodes = log_lines(log)
    [seed] = map(str, trial_seeds(300, 1))
    assert [e for e in episodes if e[1] == TEST] == [("helpful", TEST, seed)]
    # without a skill: the learn split's two episodes, collected once, and the incumbent's seven
    assert Counter(kind for kind, _, _ in episodes) == {"none": 2 + 7, "helpful": 7 + 1, "harmful": 7, "useless": 7}
    assert len(json.loads((out / "learn" / "results.json").read_text())["simulations"]) == len(LEARN.split(","))


WORKER = Path(__file__).parents[2] / "_trials_tau2_worker.py"


def worker(log: Path, die_in: str, args: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(WORKER), str(log), die_in, "--", *args], capture_output=True,
                          text=True, timeout=600)  # fmt: skip


def test_a_tau2_trial_killed_during_the_second_candidate_resumes_and_runs_no_finished_episode_again(
    tmp_path: Path,
) -> None:
    whole, whole_log = tmp_path / "whole", tmp_path / "whole.log"
    done = worker(whole_log, "none", trial_args("--out", str(whole), "--publish", str(tmp_path / "whole-store")))
    assert done.returncode == 0, done.stderr

    out, store, log = tmp_path / "trial", tmp_path / "store", tmp_path / "agent.log"
    killed = worker(log, "harmful", trial_args("--out", str(out), "--publish", str(store)))
    assert killed.returncode == -9, killed.stderr
    assert not (out / "scoreboard.json").exists() and not store.exists()
    helpful = out / "candidates" / NAMES["helpful"]
    assert (helpful / "dev" / "results.json").is_file()
    [harmful_run] = (out / "candidates" / NAMES["harmful"]).glob("run_*")  # killed while learning
    before = log.read_text().splitlines()

    resumed = worker(log, "none", ["trials", "--resume", str(out)])
    assert resumed.returncode == 0, resumed.stderr
    after = log.read_text().splitlines()[len(before) :]
    # the resume played only what the killed process had not: the harmful and useless candidates' dev tasks and
    # the winner's test task (no collection, no incumbent, no helpful dev episode again)
    assert Counter(line.split()[1] for line in after) == {"harmful": 7, "useless": 7, "helpful": 1}
    assert Counter(log_lines(log)) == Counter(log_lines(whole_log))  # nothing ran twice, nothing was left out
    assert list((out / "candidates" / NAMES["harmful"]).glob("run_*")) == [harmful_run]  # its run was resumed
    assert comparable(out / "scoreboard.json", out, store) == comparable(
        whole / "scoreboard.json", whole, tmp_path / "whole-store"
    )


def test_three_tau2_candidates_at_once_take_turns_scoring_and_write_the_sequential_scoreboard(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    register(tmp_path / "sequential.log")
    script_candidates(monkeypatch, injections)
    sequential = CliRunner().invoke(main, trial_args("--out", str(tmp_path / "sequential")), catch_exceptions=False)
    assert sequential.exit_code == 0, sequential.output
    log = tmp_path / "parallel.log"
    register(log)
    out = tmp_path / "parallel"
    result = CliRunner().invoke(main, trial_args("--out", str(out), "--max-parallel", "3"), catch_exceptions=False)
    assert result.exit_code == 0, result.output
    no_store = tmp_path / "no-store"
    assert comparable(out / "scoreboard.json", out, no_store) == comparable(
        tmp_path / "sequential" / "scoreboard.json", tmp_path / "sequential", no_store
    )
    lines = [line.split() for line in log.read_text().splitlines()]
    trial_pid = lines[0][0]  # the trial's own process collected the learn split and scored the incumbent
    dev = [(pid, kind) for pid, kind, task, _ in lines if kind != "none" and task != TEST]
    assert len({pid for pid, _ in dev}) == 3 and trial_pid not in {pid for pid, _ in dev}
    # one candidate scores at a time: each one's seven dev episodes in one block, never interleaved
    blocks = [kind for i, (_, kind) in enumerate(dev) if i == 0 or dev[i - 1][1] != kind]
    assert sorted(blocks) == ["harmful", "helpful", "useless"]
