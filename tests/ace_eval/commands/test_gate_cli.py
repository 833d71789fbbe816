"""`ace-eval gate compare` and `ace-eval scores` on files a user has: tau2 results files and scores JSON."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from ace_eval.benchmarks.scores import BenchmarkScores, TrialScore, write_scores
from ace_eval.cli import main


def tau2_results(path: Path, rewards: dict[str, list[float]], *, seed: int = 300) -> Path:
    """A results file as tau2 writes it (its own models), on airline test tasks; `rewards` by task id."""
    pytest.importorskip("tau2", reason='tau2-bench is optional: pip install "ace-eval[tau2]"')
    from tau2.data_model.simulation import (
        AgentInfo,
        Info,
        Results,
        RewardInfo,
        SimulationRun,
        TerminationReason,
        UserInfo,
    )
    from tau2.environment.environment import EnvironmentInfo

    from ace_eval.benchmarks.tau2 import load_tasks

    trials = max(len(r) for r in rewards.values())
    info = Info(
        git_commit="test",
        num_trials=trials,
        max_steps=10,
        max_errors=10,
        user_info=UserInfo(implementation="user_simulator", llm="user-model"),
        agent_info=AgentInfo(implementation="ace_agent", llm="agent-model"),
        environment_info=EnvironmentInfo(domain_name="airline", policy="policy"),
        seed=seed,
    )
    sims = [
        SimulationRun(
            id=f"{task}-{trial}",
            task_id=task,
            start_time="2026-12-04T10:00:00",
            end_time="2026-12-04T10:01:00",
            duration=60.0,
            termination_reason=TerminationReason.AGENT_STOP,
            reward_info=RewardInfo(reward=reward),
            messages=[],
            trial=trial,
            seed=seed + trial,
        )
        for trial in range(trials)
        for task, values in rewards.items()
        for reward in values[trial : trial + 1]
    ]
    results = Results(info=info, tasks=load_tasks("airline", list(rewards)), simulations=sims)
    path.write_text(results.model_dump_json(indent=1))
    return path


def airline_ids(n: int) -> list[str]:
    pytest.importorskip("tau2", reason='tau2-bench is optional: pip install "ace-eval[tau2]"')
    from ace_eval.benchmarks.tau2 import task_splits

    return list(task_splits("airline")["test"])[:n]


def run(*args: str | Path) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, [str(a) for a in args])
    return result.exit_code, result.stdout, result.stderr


def test_pass_hat_k_of_tau2_files_equals_tau2s_metric_code_and_p_an_exact_test(tmp_path: Path) -> None:
    from ace_eval.benchmarks.tau2._tau2 import Results, compute_metrics

    ids = airline_ids(20)
    rng = np.random.default_rng(4)
    base = {t: [float(x) for x in rng.random(4) < 0.5] for t in ids}
    cand = {t: [float(x) for x in rng.random(4) < 0.6] for t in ids}
    before = tau2_results(tmp_path / "baseline.json", base)
    after = tau2_results(tmp_path / "candidate.json", cand)
    code, out, _ = run("gate", "compare", before, after, "--json", "-")
    assert code in (0, 1)
    result = json.loads(out)
    for side, path in (("baseline", before), ("candidate", after)):
        theirs = compute_metrics(Results.load(path)).pass_hat_ks
        ours = {row["k"]: row["value"] for row in result[side]["pass_hat_k"]}
        assert ours == pytest.approx({int(k): v for k, v in theirs.items()}, abs=1e-12)
    differences = [np.mean(cand[t]) - np.mean(base[t]) for t in sorted(ids)]
    nonzero = [d for d in differences if d != 0]
    assert result["test"] == {"method": "exact", "nonzero": len(nonzero), "patterns": 2 ** len(nonzero), "seed": None}
    signs = 1 - 2 * ((np.arange(2 ** len(nonzero))[:, None] >> np.arange(len(nonzero))) & 1)
    plain = np.mean(np.abs(signs @ np.array(nonzero)) >= abs(sum(nonzero)) - 1e-9)
    assert result["p_value"] == pytest.approx(plain, abs=1e-12)
    assert result["benchmark"] == "tau2-airline" and result["seeds"] == [300, 301, 302, 303]
    assert result["baseline"]["models"] == {"agent": "agent-model", "user": "user-model"}


def test_the_peers_headline_four_to_eight_tasks_is_held_at_p_0_125(tmp_path: Path) -> None:
    ids = airline_ids(20)
    base = {t: [1.0] * 4 if i < 4 else [0.0] * 4 for i, t in enumerate(ids)}
    cand = {t: [1.0] * 4 if i < 8 else [0.0] * 4 for i, t in enumerate(ids)}
    before = tau2_results(tmp_path / "b.json", base)
    after = tau2_results(tmp_path / "c.json", cand)
    out_json = tmp_path / "gate.json"
    code, out, _ = run("gate", "compare", before, after, "--format", "tau2", "--json", out_json)
    assert code == 1, out
    result = json.loads(out_json.read_text())
    assert result["decision"] == "hold" and result["p_value"] == 0.125
    assert [r["value"] for r in result["baseline"]["pass_hat_k"]] == [0.2] * 4
    assert [r["value"] for r in result["candidate"]["pass_hat_k"]] == [0.4] * 4
    assert "p = 0.125 is not below alpha = 0.05" in out and "decision: HOLD" in out
    assert "pass^4    20.0 [" in out, out


def _scores_file(path: Path, successes: dict[str, list[bool]], **fields: object) -> Path:
    trials = max(len(s) for s in successes.values())
    scores = BenchmarkScores.model_validate(
        {
            "benchmark": "toy",
            "tasks": {t: [TrialScore.of(float(x)) for x in s] for t, s in successes.items()},
            "num_trials": trials,
            **fields,
        }
    )
    write_scores(path, scores)
    return path


def test_a_clearly_better_candidate_exits_0_and_a_worse_one_exits_1(tmp_path: Path) -> None:
    tasks = [f"t{i:02}" for i in range(12)]
    base = _scores_file(tmp_path / "base.json", {t: [False, False, False, True] for t in tasks})
    good = _scores_file(tmp_path / "good.json", {t: [True, True, True, False] for t in tasks})
    bad = _scores_file(tmp_path / "bad.json", {t: [False] * 4 for t in tasks})
    code, out, _ = run("gate", "compare", base, good)
    assert code == 0 and "decision: PROMOTE" in out and "12 better, 0 worse" in out
    code, out, _ = run("gate", "compare", base, bad, "--format", "scores")
    assert code == 1 and "decision: HOLD" in out and "0 better, 12 worse" in out


def test_mismatched_tasks_and_malformed_files_exit_2_naming_the_fix(tmp_path: Path) -> None:
    base = _scores_file(tmp_path / "base.json", {"a": [True], "b": [False]})
    other = _scores_file(tmp_path / "other.json", {"a": [True], "c": [False]})
    code, _, err = run("gate", "compare", base, other)
    assert code == 2 and "only the baseline has b; only the candidate has c" in err and "same tasks" in err
    junk = tmp_path / "junk.json"
    junk.write_text('{"rows": []}')
    code, _, err = run("gate", "compare", base, junk)
    assert code == 2 and "cannot tell the format of" in err and "--format" in err
    code, _, err = run("gate", "compare", base, junk, "--format", "tau2")
    assert code == 2 and "is not a tau2 results file" in err
    code, _, err = run("gate", "compare", base, base, "--alpha", "1.5")
    assert code == 2 and "--alpha must be between 0 and 1" in err
    assert not (tmp_path / "out.json").exists()


def test_scores_prints_pass_hat_k_with_intervals(tmp_path: Path) -> None:
    path = _scores_file(tmp_path / "s.json", {"a": [True, True], "b": [True, False], "c": [False, False]})
    code, out, _ = run("scores", path)
    assert code == 0 and out.splitlines()[0] == "toy: 3 tasks x 2 trials"
    assert out.splitlines()[2].startswith("pass^1    50.0 [")
    code, out, _ = run("scores", path, "--json")
    payload = json.loads(out)
    assert [(r["k"], r["value"]) for r in payload["pass_hat_k"]] == [(1, 0.5), (2, pytest.approx(1 / 3))]
    assert all(r["low"] <= r["value"] <= r["high"] for r in payload["pass_hat_k"])


def test_scores_reads_a_tau2_file_as_tau2_does(tmp_path: Path) -> None:
    from ace_eval.benchmarks.tau2 import check_against_tau2

    ids = airline_ids(5)
    rewards = {t: [1.0, 0.0, 1.0] if i % 2 else [1.0, 1.0, 1.0] for i, t in enumerate(ids)}
    path = tau2_results(tmp_path / "results.json", rewards)
    theirs = check_against_tau2(path)
    code, out, _ = run("scores", path, "--json")
    assert code == 0
    assert {r["k"]: r["value"] for r in json.loads(out)["pass_hat_k"]} == pytest.approx(theirs, abs=1e-12)
