"""The one pass^k: tau2's formula, its bootstrap interval, and the scores file (round trip, refusals)."""

from __future__ import annotations

import math
import random
from pathlib import Path

import pytest

from ace_eval.benchmarks.scores import (
    BenchmarkScores,
    PassHatK,
    ScoresFileError,
    TrialScore,
    pass_hat_k,
    pass_hat_k_interval,
    pass_hat_ks,
    read_scores,
    success_of,
    write_scores,
)


def _scores(rewards: dict[str, list[float]], *, num_trials: int = 4) -> BenchmarkScores:
    return BenchmarkScores(
        benchmark="toy",
        tasks={
            task: [TrialScore.of(r, seed=300 + i) for i, r in enumerate(values)] for task, values in rewards.items()
        },
        num_trials=num_trials,
        seeds=[300, 301, 302, 303][:num_trials],
    )


def test_success_is_a_reward_of_one_within_1e_6() -> None:
    assert success_of(1.0) and success_of(0.9999995) and not success_of(0.999)
    assert not success_of(0.0) and TrialScore.of(1.0).success and not TrialScore.of(0.5).success


def test_pass_hat_k_is_the_mean_over_tasks_of_comb_c_k_over_comb_n_k() -> None:
    successes = {"a": [True, True, False, True], "b": [False] * 4, "c": [True] * 4}
    assert pass_hat_k(successes, 1) == pytest.approx((3 / 4 + 0 + 1) / 3)
    assert pass_hat_k(successes, 2) == pytest.approx((3 / 6 + 0 + 1) / 3)
    assert pass_hat_k(successes, 4) == pytest.approx(1 / 3)
    with pytest.raises(ValueError, match="at least 5 trials per task"):
        pass_hat_k(successes, 5)
    with pytest.raises(ValueError, match="at least 1"):
        pass_hat_k(successes, 0)
    with pytest.raises(ValueError, match="at least one result"):
        pass_hat_k({}, 1)


def test_pass_hat_k_equals_tau2s_metric_code_on_random_outcomes() -> None:
    agent_metrics = pytest.importorskip("tau2.metrics.agent_metrics")
    rng = random.Random(7)
    for _ in range(50):
        trials = rng.randint(1, 6)
        successes = {f"t{i}": [rng.random() < 0.5 for _ in range(trials)] for i in range(rng.randint(1, 30))}
        for k in range(1, trials + 1):
            theirs = sum(agent_metrics.pass_hat_k(trials, sum(s), k) for s in successes.values()) / len(successes)
            assert pass_hat_k(successes, k) == pytest.approx(theirs, abs=1e-12)


def test_the_interval_is_a_seeded_bootstrap_over_tasks_around_the_value() -> None:
    successes = {f"t{i}": [i % 3 == 0, i % 2 == 0] for i in range(12)}
    row = pass_hat_k_interval(successes, 1, seed=5)
    assert row == pass_hat_k_interval(successes, 1, seed=5)  # reproducible by seed
    assert row.low < row.value < row.high and row.k == 1
    # A normal approximation of the same spread, as a sanity bound: the bootstrap is close to it.
    values = [sum(s) / 2 for s in successes.values()]
    mean = sum(values) / len(values)
    se = math.sqrt(sum((v - mean) ** 2 for v in values) / len(values)) / math.sqrt(len(values))
    assert row.high - row.low == pytest.approx(2 * 1.96 * se, rel=0.15)
    agree = {"a": [True, True], "b": [True, True]}
    assert pass_hat_ks(agree) == [PassHatK(1, 1.0, 1.0, 1.0), PassHatK(2, 1.0, 1.0, 1.0)]
    assert pass_hat_ks({}) == [] and len(pass_hat_ks(successes, max_k=1)) == 1


def test_scores_round_trip_and_count_an_errored_trial_as_a_failure(tmp_path: Path) -> None:
    scores = _scores({"a": [1.0, 0.0, 1.0, 1.0], "b": [0.0, 0.0, 1.0, 0.0]})
    scores.tasks["b"][2] = TrialScore(reward=1.0, success=True, error="the user simulator timed out")
    path = tmp_path / "scores.json"
    write_scores(path, scores)
    assert read_scores(path) == scores
    assert [p.name for p in tmp_path.iterdir()] == ["scores.json"]  # no temporary left behind
    assert scores.successes() == {"a": [True, False, True, True], "b": [False] * 4}
    assert scores.rewards()["b"] == [0.0, 0.0, 1.0, 0.0]
    assert [row.value for row in scores.pass_hat_ks()] == [pytest.approx(3 / 8), 0.25, 0.125, 0.0]


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{not json", r"bad\.json, line 1, column 2: not valid JSON .*pass a scores file written by ace-eval"),
        ('{"benchmark": "x", "tasks": {}, "num_trials": 0}', r"num_trials: .*; write it with `ace_eval"),
        ('{"simulations": []}', r"benchmark: Field required .*--format tau2"),
    ],
)
def test_a_malformed_scores_file_is_refused_with_its_name_and_the_fix(
    tmp_path: Path, content: str, message: str
) -> None:
    path = tmp_path / "bad.json"
    path.write_text(content)
    with pytest.raises(ScoresFileError, match=message):
        read_scores(path)
    with pytest.raises(ScoresFileError, match=r"cannot read scores file .*missing\.json"):
        read_scores(tmp_path / "missing.json")


def test_a_task_with_more_trials_than_asked_is_refused() -> None:
    with pytest.raises(ValueError, match="more trials than num_trials=1"):
        _scores({"a": [1.0, 1.0]}, num_trials=1)
