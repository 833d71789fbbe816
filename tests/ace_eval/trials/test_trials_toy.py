"""`ace-eval trials` on the toy benchmark plugin (`examples/plugins/ace-toy-benchmark`), scripted end to end (no
network): three candidates whose skill managers learn a helpful, a harmful and a useless skill from the same
collected traces; the helpful one wins, passes the gate against an empty incumbent, is published, and only it is
scored on the test tasks; the other two are `lost` with their runs and dev scores on record. With `--max-parallel N`
the candidates run in processes of their own, N at once, and write the sequential scoreboard; a trial killed with
N=2 resumes."""

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
from ace_eval.store import SkillbookStore
from ace_eval.trials import read_scoreboard


@pytest.fixture
def learned(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The toy plugin installed; each candidate's run gets the skill manager its `skill_manager_model` names."""
    install_toy_benchmark(tmp_path / "site", monkeypatch)
    return script_candidates(monkeypatch)


def invoke(args: list[str]) -> Result:
    return CliRunner().invoke(main, ["trials", *args])


VARY = ["--vary", "skill_manager_model=test:helpful,test:harmful,test:useless"]


def test_the_helpful_candidate_wins_passes_the_gate_is_published_and_alone_meets_the_test_tasks(
    learned: list[str], tmp_path: Path
) -> None:
    out, store = tmp_path / "trial", tmp_path / "store"
    result = invoke(
        [
            *VARY,
            "--benchmark",
            "toy-support",
            "--dev-tasks",
            DEV,
            "--test-tasks",
            TEST,
            "--out",
            str(out),
            "--publish",
            str(store),
        ]
    )
    assert result.exit_code == 0, result.output
    assert learned == ["test:helpful", "test:harmful", "test:useless"]  # each candidate learned once
    # the learn split was collected once, into the trial folder, and every candidate replayed it
    assert (out / "traces" / "traces.jsonl").is_file()
    board = read_scoreboard(out / "scoreboard.json")
    by_name = {c.name: c for c in board.candidates}
    helpful, harmful, useless = (by_name[f"skill_manager_model=test_{k}"] for k in ("helpful", "harmful", "useless"))
    assert board.winner == helpful.name and helpful.verdict == "won"
    assert harmful.verdict == useless.verdict == "lost"
    assert helpful.dev.mean == 1.0 and harmful.dev.mean == 0.0 and useless.dev.mean == 0.0
    assert set(helpful.dev.per_task) == set(DEV.split(",")) == set(harmful.dev.per_task)
    assert board.pareto == [helpful.name]
    # losers keep their runs, skillbooks and dev scores
    for loser in (harmful, useless):
        assert Path(loser.skillbook).is_file() and Path(loser.run_dir, "run.json").is_file()
        assert Path(loser.run_dir).parent.joinpath("dev", "scores.json").is_file()
    assert json.loads(Path(harmful.skillbook).read_text())["skills"]  # it did learn (escalate) skills
    # the gate: the winner against the empty incumbent on the same tasks and seeds
    assert board.incumbent == "none" and board.gate.decision == "promote"
    assert board.gate.baseline.skillbook is None and board.gate.tasks == 6
    assert board.gate.p_value < 0.05 and board.gate.delta.mean == 1.0
    assert board.published == f"{store} version 1"
    current = SkillbookStore(store).current()
    assert current is not None and current.record.produced_by.kind == "trials"
    # only the winner met the test tasks, once
    assert board.test is not None and board.test.candidate == helpful.name and board.test.mean == 1.0
    assert sorted(board.test.per_task) == sorted(TEST.split(","))
    assert [p.name for p in out.rglob("scores.json") if "test" in p.parts] == ["scores.json"]
    assert "won   skill_manager_model=test_helpful: dev mean 1.000" in result.output


def test_a_bad_vary_key_or_value_exits_2_naming_the_valid_keys_before_anything_is_written(
    learned: list[str], tmp_path: Path
) -> None:
    out = tmp_path / "trial"
    for vary in ("reflector_kind=simple,rr", "epochs=1,two", "reflector_type=simple,bogus"):
        result = invoke(["--vary", vary, "--benchmark", "toy-support", "--out", str(out)])
        assert result.exit_code == 2, (vary, result.output)
        assert not out.exists() and not learned
    result = invoke(["--vary", "reflector_kind=simple,rr", "--benchmark", "toy-support", "--out", str(out)])
    assert "valid keys:" in result.output and "reflector_type" in result.output and "epochs" in result.output
    result = invoke(["--vary", "epochs=1,two", "--benchmark", "toy-support", "--out", str(out)])
    assert "--vary epochs=two" in result.output


WORKER = Path(__file__).parents[2] / "_trials_worker.py"


def test_a_trial_killed_during_the_second_candidate_resumes_without_redoing_finished_work(
    learned: list[str], tmp_path: Path
) -> None:
    args = [*VARY, "--benchmark", "toy-support", "--dev-tasks", DEV, "--test-tasks", TEST]
    whole, whole_store = tmp_path / "whole", tmp_path / "whole-store"
    assert invoke([*args, "--out", str(whole), "--publish", str(whole_store)]).exit_code == 0
    learned.clear()

    out, store = tmp_path / "trial", tmp_path / "store"
    killed = subprocess.run(
        [
            sys.executable,
            str(WORKER),
            str(tmp_path / "site"),
            "harmful",
            "--",
            "trials",
            *args,
            "--out",
            str(out),
            "--publish",
            str(store),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert killed.returncode == -9, killed.stderr
    assert not (out / "scoreboard.json").exists()
    helpful_runs = list((out / "candidates" / "skill_manager_model=test_helpful").glob("run_*"))
    assert len(helpful_runs) == 1 and (helpful_runs[0].parent / "dev" / "scores.json").is_file()

    result = invoke(["--resume", str(out)])
    assert result.exit_code == 0, result.output
    # the finished candidate is neither learned nor scored again; the killed one resumes its run
    assert learned == ["resume test:harmful", "test:useless"]
    assert list((out / "candidates" / "skill_manager_model=test_helpful").glob("run_*")) == helpful_runs
    assert comparable(out / "scoreboard.json", out, store) == comparable(whole / "scoreboard.json", whole, whole_store)


def test_resume_refuses_the_trials_own_settings_given_again(learned: list[str], tmp_path: Path) -> None:
    result = invoke(["--resume", str(tmp_path / "nothing")])
    assert result.exit_code == 2 and "no trial.json there" in result.output
    result = invoke(["--resume", str(tmp_path), "--num-trials", "3"])
    assert result.exit_code == 2 and "drop --num-trials" in result.output


def test_max_episodes_stops_before_a_candidate_would_exceed_it_and_names_the_resume(
    learned: list[str], tmp_path: Path
) -> None:
    out = tmp_path / "trial"
    # the incumbent's dev scoring (6) + the first candidate's 6 learning samples and 6 dev episodes = 18; the next
    # would bring it to about 30
    result = invoke(
        [*VARY, "--benchmark", "toy-support", "--dev-tasks", DEV, "--out", str(out), "--max-episodes", "25"]
    )
    assert result.exit_code == 1, result.output
    assert "stopped before candidate skill_manager_model=test_harmful" in result.output
    assert "--max-episodes 25 (18 spent + about 12 for it)" in result.output
    assert f"continue with: ace-eval trials --resume {out}" in result.output
    assert learned == ["test:helpful"] and not (out / "scoreboard.json").exists()
    result = invoke(["--resume", str(out)])
    assert result.exit_code == 0, result.output
    assert learned == ["test:helpful", "test:harmful", "test:useless"]


def test_every_epochs_checkpoint_of_a_multi_epoch_candidate_is_a_candidate(learned: list[str], tmp_path: Path) -> None:
    out = tmp_path / "trial"
    result = invoke(
        [
            "--vary",
            "epochs=1,2",
            "--skill-manager-model",
            "test:helpful",
            "--benchmark",
            "toy-support",
            "--dev-tasks",
            DEV,
            "--out",
            str(out),
        ]
    )
    assert result.exit_code == 0, result.output
    board = read_scoreboard(out / "scoreboard.json")
    assert [c.name for c in board.candidates] == ["epochs=1", "epochs=2@epoch1", "epochs=2@epoch2"]
    assert board.candidates[2].settings == {"epochs": 2, "checkpoint": 2}
    first, second = (json.loads(Path(c.run_dir, "run.json").read_text()) for c in board.candidates[1:])
    assert first["config"]["epochs"] == second["config"]["epochs"] == 1
    # the second epoch learned on from the first's skillbook
    assert second["config"]["skillbook"] == board.candidates[1].skillbook
    assert len(learned) == 3
    # all three solve every dev task: the tie goes to the fewest learning tokens
    assert {c.dev.mean for c in board.candidates} == {1.0}
    assert board.winner == min(board.candidates, key=lambda c: c.tokens).name


def _good_and_bad(tmp_path: Path) -> tuple[Path, Path]:
    """A trial of the variants file's two candidates `good` (helpful) and `bad` (harmful): the file and the trial."""
    variants = tmp_path / "variants.toml"
    variants.write_text(_GOOD + '[[candidate]]\nname = "bad"\nskill_manager_model = "test:harmful"\n', encoding="utf-8")
    out = tmp_path / "trial"
    result = invoke(["--variants", str(variants), "--benchmark", "toy-support", "--dev-tasks", DEV, "--out", str(out)])
    assert result.exit_code == 0, result.output
    return variants, out


_GOOD = '[[candidate]]\nname = "good"\nskill_manager_model = "test:helpful"\n'


def test_a_variants_file_lists_the_candidates_and_a_bad_entry_exits_2(learned: list[str], tmp_path: Path) -> None:
    variants, out = _good_and_bad(tmp_path)
    board = read_scoreboard(out / "scoreboard.json")
    assert [(c.name, c.verdict) for c in board.candidates] == [("good", "won"), ("bad", "lost")]
    variants.write_text('[[candidate]]\nname = "x"\nepoch = 2\n', encoding="utf-8")
    result = invoke(["--variants", str(variants), "--benchmark", "toy-support", "--out", str(tmp_path / "other")])
    assert result.exit_code == 2 and f"--variants {variants}: epoch: not an e2e setting" in result.output
    assert not (tmp_path / "other").exists()


def test_a_resume_whose_candidate_changed_is_refused_naming_it_and_the_fix(learned: list[str], tmp_path: Path) -> None:
    """The variants file edited after a candidate learned: its finished run is not silently reused (its scores
    would not be the candidate's); the resume exits 2 naming the candidate, the setting and the fix."""
    variants, out = _good_and_bad(tmp_path)
    assert invoke(["--resume", str(out)]).exit_code == 0  # unchanged: every finished run reused
    assert learned == ["test:helpful", "test:harmful"]

    variants.write_text(_GOOD + '[[candidate]]\nname = "bad"\nskill_manager_model = "test:useless"\n', encoding="utf-8")
    board = (out / "scoreboard.json").read_bytes()
    result = invoke(["--resume", str(out)])
    assert result.exit_code == 2, result.output
    message = " ".join(result.output.split())
    assert "candidate bad: its run" in message and "skill_manager_model: 'test:harmful' in the run" in message
    assert f"delete {out / 'candidates' / 'bad'} to learn bad again" in message
    assert learned == ["test:helpful", "test:harmful"] and (out / "scoreboard.json").read_bytes() == board


TOY = [*VARY, "--benchmark", "toy-support", "--dev-tasks", DEV, "--test-tasks", TEST]


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


def test_max_parallel_below_one_or_without_fork_exits_2_and_above_the_candidates_gets_a_note(
    learned: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    result = invoke([*TOY, "--out", str(tmp_path / "zero"), "--max-parallel", "0"])
    assert result.exit_code == 2 and "--max-parallel" in result.output
    assert not (tmp_path / "zero").exists()
    with monkeypatch.context() as patched:  # a platform without fork (Windows)
        patched.setattr("multiprocessing.get_all_start_methods", lambda: ["spawn"])
        result = invoke([*TOY, "--out", str(tmp_path / "spawn"), "--max-parallel", "2"])
    assert result.exit_code == 2 and "drop --max-parallel" in result.output
    assert not (tmp_path / "spawn").exists()
    result = invoke([*TOY, "--out", str(tmp_path / "five"), "--max-parallel", "5"])
    assert result.exit_code == 0, result.output
    assert "note: --max-parallel 5 but the trial has 3 candidates: 3 run at once" in result.output


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
        [
            sys.executable,
            str(WORKER),
            str(tmp_path / "site"),
            "useless",
            "--",
            "trials",
            *TOY,
            "--out",
            str(out),
            "--publish",
            str(store),
            "--max-parallel",
            "2",
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
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


def test_max_episodes_with_max_parallel_waits_for_the_estimate_and_stops_as_a_sequential_trial(
    learned: list[str], tmp_path: Path
) -> None:
    out = tmp_path / "trial"
    result = invoke(
        [
            *VARY,
            "--benchmark",
            "toy-support",
            "--dev-tasks",
            DEV,
            "--out",
            str(out),
            "--max-episodes",
            "25",
            "--max-parallel",
            "2",
        ]
    )
    assert result.exit_code == 1, result.output
    # the second waited for the first's usage (the estimate), then would have exceeded the budget: never started
    assert result.output.count("learning (process") == 1
    assert "--max-episodes 25 (18 spent + about 12 for it)" in result.output
    assert f"continue with: ace-eval trials --resume {out}" in result.output
    assert not (out / "candidates" / "skill_manager_model=test_harmful").exists()
    assert not (out / "scoreboard.json").exists()


def test_off_a_terminal_each_scoring_shows_its_progress_under_its_name(
    learned: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("ace_eval.run.progress.HEARTBEAT_SECONDS", 0.0)
    result = invoke(
        [*VARY, "--benchmark", "toy-support", "--dev-tasks", DEV, "--test-tasks", TEST, "--out", str(tmp_path / "t")]
    )
    assert result.exit_code == 0, result.output
    dev = len(DEV.split(","))  # one trial per task
    names = ["incumbent", *(f"skill_manager_model=test_{k}" for k in ("helpful", "harmful", "useless"))]
    for name in names:
        lines = [line for line in result.output.splitlines() if line.startswith(f"{name} (dev): ")]
        assert [line.split(" done")[0] for line in lines] == [f"{name} (dev): {n}/{dev}" for n in range(1, dev + 1)]
    assert f"winner (test): {len(TEST.split(','))}/{len(TEST.split(','))} done" in result.output
    assert re.search(r"^learn split: (\d+)/\1 done", result.output, re.M), result.output  # collected once, shown too
