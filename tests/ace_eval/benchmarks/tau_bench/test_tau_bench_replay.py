"""Against the real benchmark: gold hashes and 120 recorded GPT-4o runs re-executed from their tool calls."""

from __future__ import annotations

from pathlib import Path

import pytest

from ace_eval.benchmarks.tau_bench.check import (
    PROVINCE_REVISION,
    GoldHashes,
    RecordedRun,
    TrajectoryCheck,
    check_recorded_runs,
    check_trajectories,
    has_state_addresses,
    load_trajectories,
    province_revision,
)
from ace_eval.benchmarks.tau_bench.data import AirlineData, load_airline_data
from ace_eval.benchmarks.tau_bench.hashing import hash_data
from ace_eval.benchmarks.tau_bench.replay import replay_messages
from ace_eval.benchmarks.tau_bench.scoring import pass_hat_k

TRAJECTORIES = "trajectories-gpt-4o-tasks-0-29.json"


@pytest.fixture(scope="module")
def data(airline_data: Path) -> AirlineData:
    return load_airline_data(airline_data)


@pytest.fixture(scope="module")
def runs(airline_data: Path) -> list[RecordedRun]:
    path = airline_data / TRAJECTORIES  # shipped in tests/data/: never missing
    return load_trajectories(path)


@pytest.fixture(scope="module")
def checks(data: AirlineData, runs: list[RecordedRun]) -> list[TrajectoryCheck]:
    return check_trajectories(data, runs)


def test_gold_replay_reproduces_every_recorded_gold_hash(data: AirlineData, runs: list[RecordedRun]) -> None:
    recorded = {run.task_id: run.recorded_gt_hash for run in runs if run.recorded_gt_hash is not None}
    # every task of the file, except 2, 8 and 9 whose runs record the outputs check instead
    assert sorted(recorded) == [t for t in range(30) if t not in (2, 8, 9)]
    gold = GoldHashes(province_revision(data))
    assert {task_id: gold[task_id] for task_id in recorded} == recorded


def test_the_folder_revision_changes_the_gold_hashes_but_not_the_verdicts(
    data: AirlineData, checks: list[TrajectoryCheck]
) -> None:
    assert {c.gold_hash_matches for c in checks} == {False, None}
    # only user profiles print differently: one result per get_user_details call
    assert sum(c.observation_mismatches for c in checks) == 78


def test_every_recorded_run_rescores_to_its_recorded_reward(checks: list[TrajectoryCheck]) -> None:
    assert len(checks) == 120
    assert [(c.task_id, c.trial, c.recorded_reward, c.reward) for c in checks if not c.matches] == []
    assert sum(c.reward for c in checks) == 36


def test_on_the_recorded_revision_tool_results_and_reward_info_are_identical(
    data: AirlineData, runs: list[RecordedRun]
) -> None:
    old = province_revision(data)
    gold = GoldHashes(old)
    calls = 0
    for run in runs:
        outcome = replay_messages(old, old.tasks[run.task_id], run.traj, gt_data_hash=gold[run.task_id])
        assert outcome.observation_mismatches == [], (run.task_id, run.trial)
        calls += outcome.tool_calls
        recorded = run.info.get("reward_info")
        if recorded is None:  # three runs hit the step limit: upstream never scored them
            assert outcome.result is None and outcome.reward == 0.0
        else:
            assert outcome.result is not None
            assert outcome.result.to_info()["info"] == recorded["info"]
    assert calls == 810


def test_replaying_all_runs_leaves_the_shared_tables_pristine(data: AirlineData, runs: list[RecordedRun]) -> None:
    before = hash_data({"flights": data.flights, "reservations": data.reservations, "users": data.users})
    check_trajectories(data, runs)  # timings: benchmarks/tau_bench_replay.py
    after = hash_data({"flights": data.flights, "reservations": data.reservations, "users": data.users})
    assert before == after


def test_pass_hat_k_of_the_recorded_runs(checks: list[TrajectoryCheck]) -> None:
    results = [(c.task_id, c.reward) for c in checks]
    assert pass_hat_k(results, 1) == pytest.approx(36 / 120)
    assert pass_hat_k(results, 4) <= pass_hat_k(results, 2) <= pass_hat_k(results, 1)


def test_the_recorded_runs_are_checked_on_the_revision_they_were_made_on(
    data: AirlineData, runs: list[RecordedRun], checks: list[TrajectoryCheck]
) -> None:
    assert has_state_addresses(data) and not has_state_addresses(province_revision(data))
    result = check_recorded_runs(data, runs)
    assert result.revision == PROVINCE_REVISION
    assert result.folder_checks == checks
    assert {c.gold_hash_matches for c in result.checks} == {True, None}
    assert sum(c.observation_mismatches for c in result.checks) == 0
    assert all(c.matches for c in result.checks)
    # on the revision they were made on, nothing needs another one
    again = check_recorded_runs(province_revision(data), runs)
    assert again.revision is None and again.checks == result.checks
