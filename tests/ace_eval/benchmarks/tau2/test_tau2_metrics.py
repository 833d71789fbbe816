"""pass^k with bootstrap intervals, per-task deltas and usage, on hand-made results; agreement with tau2.metrics."""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("tau2", reason='tau2-bench is optional: pip install "ace-eval[tau2]"')

from ace_eval.benchmarks.tau2 import (
    PassHatK,
    TaskOutcome,
    format_table,
    pass_hat_k,
    task_deltas,
    task_outcomes,
    usage_by_role,
)


def _results(rewards: dict[str, list[float]]) -> dict[str, Any]:
    sims = [
        {
            "task_id": task_id,
            "trial": trial,
            "reward_info": {"reward": reward},
            "messages": [
                {"role": "assistant", "usage": {"prompt_tokens": 10, "completion_tokens": 2}, "cost": 0.5},
                {"role": "user", "usage": {"prompt_tokens": 4, "completion_tokens": 1}, "cost": 0.25},
                {"role": "tool", "content": "{}"},
            ],
        }
        for task_id, trials in rewards.items()
        for trial, reward in enumerate(trials)
    ]
    return {"info": {}, "tasks": [], "simulations": sims}


def test_pass_hat_k_is_the_unbiased_estimator_averaged_over_tasks() -> None:
    results = _results({"a": [1.0, 1.0, 0.0, 1.0], "b": [0.0, 0.0, 0.0, 0.0], "c": [1.0, 1.0, 1.0, 0.9999995]})
    assert task_outcomes(results) == [TaskOutcome("a", 4, 3), TaskOutcome("b", 4, 0), TaskOutcome("c", 4, 4)]
    table = pass_hat_k(results)
    assert [row.k for row in table] == [1, 2, 3, 4]
    assert table[0].value == pytest.approx((3 / 4 + 0 + 1) / 3)
    assert table[1].value == pytest.approx((3 / 6 + 0 + 1) / 3)
    assert table[3].value == pytest.approx(1 / 3)
    for row in table:
        assert 0.0 <= row.low <= row.value <= row.high <= 1.0
    assert table[3].low == 0.0 and table[3].high == 1.0  # three tasks: resamples reach all-fail and all-pass


def test_the_interval_is_a_point_when_every_task_agrees_and_k_stops_at_the_fewest_trials() -> None:
    table = pass_hat_k(_results({"a": [1.0, 1.0, 1.0], "b": [1.0, 1.0]}))
    assert table == [PassHatK(1, 1.0, 1.0, 1.0), PassHatK(2, 1.0, 1.0, 1.0)]
    assert pass_hat_k(_results({})) == []


def test_deltas_usage_and_the_table() -> None:
    before = _results({"a": [0.0, 1.0], "b": [1.0, 1.0]})
    after = _results({"a": [1.0, 1.0], "b": [1.0, 0.0], "c": [1.0, 1.0]})
    deltas = {d.task_id: d.delta for d in task_deltas(before, after)}
    assert deltas == {"a": 0.5, "b": -0.5, "c": 1.0}
    assert usage_by_role(before) == {
        "agent": {"requests": 4, "prompt_tokens": 40, "completion_tokens": 8, "cost": 2.0},
        "user": {"requests": 4, "prompt_tokens": 16, "completion_tokens": 4, "cost": 1.0},
    }
    text = format_table(pass_hat_k(before), pass_hat_k(after))
    lines = text.splitlines()
    assert lines[0].split() == ["metric", "baseline", "with", "ACE", "delta"]
    assert lines[1].startswith("pass^1") and lines[1].endswith("+8.3")
    assert len(lines) == 3
