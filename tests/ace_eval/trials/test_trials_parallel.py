"""`ace-eval trials --max-parallel N`: candidates in processes of their own, N at once, the scoreboard the one a
sequential trial writes; their dev scoring takes turns (one slot), so the benchmark's episodes never overlap across
candidates; a trial killed with N=2 resumes. Scripted end to end (no network)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
from _plugins import install_toy_benchmark
from _trials_support import DEV, TEST, comparable, script_candidates
from click.testing import CliRunner, Result

from ace_eval.cli import main
from ace_eval.trials import read_scoreboard

VARY = ["--vary", "skill_manager_model=test:helpful,test:harmful,test:useless"]
TOY = [*VARY, "--benchmark", "toy-support", "--dev-tasks", DEV, "--test-tasks", TEST]


@pytest.fixture
def learned(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    install_toy_benchmark(tmp_path / "site", monkeypatch)
    return script_candidates(monkeypatch)


def invoke(args: list[str]) -> Result:
    return CliRunner().invoke(main, ["trials", *args])


def test_three_candidates_at_once_write_the_sequential_scoreboard(learned: list[str], tmp_path: Path) -> None:
    whole, out = tmp_path / "sequential", tmp_path / "parallel"
    assert invoke([*TOY, "--out", str(whole), "--publish", str(tmp_path / "s1")]).exit_code == 0
    result = invoke([*TOY, "--out", str(out), "--publish", str(tmp_path / "s2"), "--max-parallel", "3"])
    assert result.exit_code == 0, result.output
    names = ", ".join(f"skill_manager_model=test_{k}" for k in ("helpful", "harmful", "useless"))
    assert f"running now: {names}; so far 6 episodes" in result.output  # all three at once, each named
    pids = set(re.findall(r"learning \(process (\d+)\)", result.output))
    assert len(pids) == 3
    assert comparable(out / "scoreboard.json", out, tmp_path / "s2") == comparable(
        whole / "scoreboard.json", whole, tmp_path / "s1"
    )
    assert read_scoreboard(out / "scoreboard.json").winner == "skill_manager_model=test_helpful"


def test_max_parallel_below_one_exits_2_and_above_the_candidates_gets_a_note(
    learned: list[str], tmp_path: Path
) -> None:
    result = invoke([*TOY, "--out", str(tmp_path / "zero"), "--max-parallel", "0"])
    assert result.exit_code == 2 and "--max-parallel" in result.output
    assert not (tmp_path / "zero").exists()
    result = invoke([*TOY, "--out", str(tmp_path / "five"), "--max-parallel", "5"])
    assert result.exit_code == 0, result.output
    assert "note: --max-parallel 5 but the trial has 3 candidates: 3 run at once" in result.output


WORKER = Path(__file__).parents[2] / "_trials_worker.py"


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return False
    return "\nState:\tZ" not in state  # a zombie nobody reaped yet is dead


def test_a_parallel_trial_killed_resumes_with_nothing_finished_redone(learned: list[str], tmp_path: Path) -> None:
    whole, whole_store = tmp_path / "whole", tmp_path / "whole-store"
    assert invoke([*TOY, "--out", str(whole), "--publish", str(whole_store)]).exit_code == 0

    out, store = tmp_path / "trial", tmp_path / "store"
    killed = subprocess.run(
        [sys.executable, str(WORKER), str(tmp_path / "site"), "useless", "--", "trials", *TOY, "--out", str(out),
         "--publish", str(store), "--max-parallel", "2"], capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert killed.returncode == -9, killed.stderr  # the third candidate's process killed the trial's
    children = [int(pid) for pid in re.findall(r"learning \(process (\d+)\)", killed.stderr)]
    assert len(children) == 3  # the third started when one of the first two had finished
    deadline = time.monotonic() + 10
    while any(map(_alive, children)) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not any(map(_alive, children))  # they died with the trial
    assert not (out / "scoreboard.json").exists()
    before = {p: (p.read_bytes(), p.stat().st_mtime_ns) for p in out.rglob("dev/scores.json")}
    runs = {p.parent: json.loads(p.read_text())["status"] for p in out.rglob("run.json")}
    assert before and "completed" in runs.values()

    result = invoke(["--resume", str(out), "--max-parallel", "2"])
    assert result.exit_code == 0, result.output
    for path, (data, mtime) in before.items():  # a candidate scored before the kill is not scored again
        assert path.read_bytes() == data and path.stat().st_mtime_ns == mtime
    for run, status in runs.items():  # no run started again: each candidate has its one run folder
        assert len(list(run.parent.glob("run_*"))) == 1
        segments = json.loads((run / "run.json").read_text())["segments"]
        assert len(segments) == (1 if status == "completed" else 2)  # a finished run was not touched
    assert comparable(out / "scoreboard.json", out, store) == comparable(whole / "scoreboard.json", whole, whole_store)
