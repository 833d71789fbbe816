"""Reward and pass^k, checked against values computed by hand."""

from __future__ import annotations

import pytest

from ace_eval.benchmarks.tau_bench.data import Action, Task
from ace_eval.benchmarks.tau_bench.scoring import calculate_reward, find_outputs, pass_hat_k, pass_hat_ks

_TASK = Task(
    user_id="u",
    instruction="Ask for the total.",
    actions=[Action(name="calculate", kwargs={"expression": "1+1"})],
    outputs=["23553", "Two Cards"],
)


def test_outputs_must_appear_lower_cased_with_commas_removed_in_some_reply() -> None:
    replies = ["You saved $23,553 in total.", "You used two cards."]
    assert find_outputs(_TASK.outputs, replies) == {"23553": True, "Two Cards": True}
    assert find_outputs(_TASK.outputs, ["You saved 23.553 dollars."]) == {"23553": False, "Two Cards": False}


def test_reward_needs_the_gold_database_and_every_output() -> None:
    good = calculate_reward(task=_TASK, data_hash="h", gt_data_hash="h", replies=["23,553", "two cards"])
    assert good.reward == 1.0
    assert good.to_info() == {
        "reward": 1.0,
        "info": {"r_outputs": 1.0, "outputs": {"23553": True, "Two Cards": True}},
        "actions": [{"name": "calculate", "kwargs": {"expression": "1+1"}}],
    }
    wrong_db = calculate_reward(task=_TASK, data_hash="h", gt_data_hash="g", replies=["23553 two cards"])
    assert wrong_db.reward == 0.0 and not wrong_db.r_actions and wrong_db.r_outputs
    missing = calculate_reward(task=_TASK, data_hash="h", gt_data_hash="h", replies=["23553"])
    assert missing.reward == 0.0 and missing.outputs == {"23553": True, "Two Cards": False}


def test_without_outputs_the_info_is_upstreams_database_check() -> None:
    task = Task(user_id="u", instruction="i", actions=[])
    result = calculate_reward(task=task, data_hash="a", gt_data_hash="b", replies=[])
    assert result.to_info()["info"] == {"r_actions": 0.0, "gt_data_hash": "b"}
    assert result.to_dict()["data_hash"] == "a"


# Task A: 2 of 4 trials succeed, B: 4 of 4, C: 0 of 4.
_RESULTS = [("A", r) for r in (1.0, 0.0, 1.0, 0.0)] + [("B", 1.0)] * 4 + [("C", 0.0)] * 4


@pytest.mark.parametrize(
    ("k", "expected"),
    [
        (1, (2 / 4 + 4 / 4 + 0) / 3),  # 0.5
        (2, (1 / 6 + 1 + 0) / 3),  # C(2,2)/C(4,2) = 1/6
        (3, (0 + 1 + 0) / 3),
        (4, (0 + 1 + 0) / 3),
    ],
)
def test_pass_hat_k_is_the_mean_over_tasks_of_comb_c_k_over_comb_n_k(k: int, expected: float) -> None:
    assert pass_hat_k(_RESULTS, k) == pytest.approx(expected)


def test_pass_hat_ks_covers_every_k_up_to_the_trials_and_counts_near_one_as_success() -> None:
    assert list(pass_hat_ks(_RESULTS)) == [1, 2, 3, 4]
    assert pass_hat_k([("A", 0.9999999), ("A", 0.5)], 1) == pytest.approx(0.5)


def test_pass_hat_k_refuses_k_beyond_the_trials_of_a_task_and_empty_input() -> None:
    with pytest.raises(ValueError, match="at least 5 trials per task"):
        pass_hat_k(_RESULTS, 5)
    with pytest.raises(ValueError, match="at least one result"):
        pass_hat_k([], 1)
    with pytest.raises(ValueError, match="at least 1"):
        pass_hat_k(_RESULTS, 0)
