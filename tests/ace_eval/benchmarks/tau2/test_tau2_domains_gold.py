"""tau2 domains, their `split_tasks.json` splits and explicit ids; gold replay through tau2's evaluator."""

from __future__ import annotations

import pytest

pytest.importorskip("tau2", reason='tau2-bench is optional: pip install "ace-eval[tau2]"')

from ace_eval.benchmarks.tau2 import (
    TaskSelectionError,
    benchmark_domain,
    check_gold,
    load_tasks,
    replay_gold,
    task_splits,
)


@pytest.mark.parametrize(
    ("domain", "sizes"),
    [
        ("airline", {"train": 30, "test": 20, "base": 50}),
        ("retail", {"train": 74, "test": 40, "base": 114}),
        ("telecom", {"train": 74, "test": 40, "base": 114}),
        ("mock", {"base": 9}),
    ],
)
def test_splits_come_from_the_domains_split_file(domain: str, sizes: dict[str, int]) -> None:
    splits = task_splits(domain)
    for name, size in sizes.items():
        assert len(splits[name]) == size
        assert {task.id for task in load_tasks(domain, name)} == set(splits[name])
    if "train" in sizes:
        assert not set(splits["train"]) & set(splits["test"])


def test_explicit_ids_keep_their_order_and_unknown_ones_name_the_valid_shape() -> None:
    assert [task.id for task in load_tasks("airline", ["7", "3"])] == ["7", "3"]
    with pytest.raises(TaskSelectionError, match="no task 999"):
        load_tasks("airline", ["3", "999"])
    with pytest.raises(TaskSelectionError, match="its splits: train, test, base"):
        load_tasks("airline", "dev")
    with pytest.raises(TaskSelectionError, match="tau2-airline, tau2-retail"):
        benchmark_domain("tau2-flights")
    assert benchmark_domain("tau2-telecom") == "telecom"


def test_mock_gold_replay_names_the_one_task_without_gold_actions() -> None:
    results = check_gold("mock")
    failing = [r for r in results if not r.passed]
    assert len(results) == 9
    assert [(r.task_id, r.reward) for r in failing] == [("update_task_with_history_and_env_assertions", 0.0)]
    assert "assert_task_status" in failing[0].reasons[0]
    assert "no gold actions" in failing[0].reasons[-1]
    assert results[0].line() == "create_task_1 1"


@pytest.mark.parametrize(("domain", "ids"), [("airline", ["11", "16"]), ("retail", ["0"]), ("telecom", None)])
def test_gold_replay_reaches_reward_one(domain: str, ids: list[str] | None) -> None:
    tasks = load_tasks(domain, ids if ids is not None else task_splits(domain)["base"][:2])
    assert [replay_gold(domain, task).reward for task in tasks] == [1.0] * len(tasks)


def test_a_gold_action_the_environment_refuses_is_reported() -> None:
    task = load_tasks("airline", ["19"])[0].model_copy(deep=True)
    action = task.evaluation_criteria.actions[0]
    assert action.name == "cancel_reservation"
    honest = replay_gold("airline", task)
    action.arguments = {**action.arguments, "reservation_id": "NOSUCH"}
    broken = replay_gold("airline", task)
    assert honest.reasons == ()
    # The gold database runs the same refused call, so tau2 still scores 1.0; the replay reports the refusal.
    assert broken.passed
    assert broken.reasons == (
        "gold action cancel_reservation(reservation_id=NOSUCH) failed: Error: Reservation NOSUCH not found",
    )
