"""Real tau2 episodes on the mock domain with scripted models: results, tau2's metrics, resume, plan checks."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("tau2", reason='tau2-bench is optional: pip install "ace-eval[tau2]"')

from _tau2_scripts import GoldPlayer

from ace.exceptions import UserError
from ace_eval.benchmarks.tau2 import (
    JOURNAL_FILE,
    EpisodeConfig,
    EpisodesFailedError,
    PlanMismatchError,
    check_against_tau2,
    load_tasks,
    pass_hat_k,
    run_episodes,
    trial_seeds,
)
from ace_eval.benchmarks.tau2._tau2 import Results
from ace_eval.benchmarks.tau2.scripted import Reply, ScriptInfo, scripted_model
from ace_eval.collection.importers import import_tau2

TASKS = ["create_task_1", "update_task_1"]


def _config(player: GoldPlayer, name: str, **overrides: object) -> EpisodeConfig:
    agent, user = player.models(name)
    settings: dict[str, object] = {"num_trials": 2, "max_workers": 2, "max_steps": 30}
    return EpisodeConfig(domain="mock", agent_model=agent, user_model=user, **{**settings, **overrides})  # type: ignore[arg-type]


def test_mock_episodes_score_as_scripted_and_match_tau2_metrics(tmp_path: Path) -> None:
    seeds = trial_seeds(300, 2)
    player = GoldPlayer(load_tasks("mock", TASKS), fail_seeds=frozenset({seeds[1]}))
    results_path = run_episodes(_config(player, "mock-a"), TASKS, tmp_path)

    results = Results.load(results_path)
    assert [(s.task_id, s.trial, s.reward_info.reward) for s in results.simulations] == [
        ("create_task_1", 0, 1.0),
        ("update_task_1", 0, 1.0),
        ("create_task_1", 1, 0.0),
        ("update_task_1", 1, 0.0),
    ]
    assert {s.seed for s in results.simulations} == set(seeds)
    assert results.info.agent_info.implementation == "ace_agent"
    table = pass_hat_k(results_path)
    assert [(row.k, row.value) for row in table] == [(1, 0.5), (2, 0.0)]
    assert check_against_tau2(results_path) == {1: 0.5, 2: 0.0}

    collection = import_tau2(results_path)
    assert collection.source_system == "tau2-mock"
    assert sorted((t.trace_id, t.reward) for t in collection.traces) == [
        ("task-create_task_1-trial-0", 1.0),
        ("task-create_task_1-trial-1", 0.0),
        ("task-update_task_1-trial-0", 1.0),
        ("task-update_task_1-trial-1", 0.0),
    ]
    created = next(t for t in collection.traces if t.trace_id == "task-create_task_1-trial-0")
    calls = [c["function"]["name"] for m in created.messages for c in m.get("tool_calls") or []]  # type: ignore[union-attr]
    assert calls == ["create_task"]


def test_a_killed_run_resumes_without_rerunning_finished_episodes(tmp_path: Path) -> None:
    player = GoldPlayer(load_tasks("mock", TASKS))
    first = run_episodes(_config(player, "mock-b"), TASKS, tmp_path)
    whole = pass_hat_k(first)
    journal = tmp_path / JOURNAL_FILE
    lines = journal.read_text().splitlines(keepends=True)
    assert len(lines) == 4
    # As after kill -9: one episode never written, another torn mid-line.
    journal.write_text(lines[0] + lines[1] + lines[2][: len(lines[2]) // 2])
    first.unlink()
    before = player.calls["user"]

    resumed = run_episodes(_config(player, "mock-b", max_workers=1), TASKS, tmp_path)

    reruns = (player.calls["user"] - before) // 2  # each mock episode here takes two user turns
    assert reruns == 2
    assert len(journal.read_text().splitlines()) == 4
    assert pass_hat_k(resumed) == whole
    calls = player.calls["user"]
    run_episodes(_config(player, "mock-b"), TASKS, tmp_path)  # everything done: nothing runs
    assert player.calls["user"] == calls


def test_a_changed_plan_is_refused_before_any_episode(tmp_path: Path) -> None:
    player = GoldPlayer(load_tasks("mock", TASKS))
    run_episodes(_config(player, "mock-c", num_trials=1), TASKS, tmp_path)
    calls = player.calls["agent"]
    with pytest.raises(PlanMismatchError, match="num_trials"):
        run_episodes(_config(player, "mock-c", num_trials=3), TASKS, tmp_path)
    assert player.calls["agent"] == calls


def test_failed_episodes_are_retried_by_the_next_run(tmp_path: Path) -> None:
    player = GoldPlayer(load_tasks("mock", TASKS))
    outages = [RuntimeError("provider unavailable")]

    def flaky(messages: list[dict[str, Any]], info: ScriptInfo) -> Reply:
        if outages:
            raise outages.pop()
        return player.agent(messages, info)

    config = EpisodeConfig(
        domain="mock", agent_model=scripted_model("mock-d-flaky", flaky), user_model=player.models("mock-d")[1]
    )
    with pytest.raises(EpisodesFailedError, match="1 of 2 episodes failed") as failure:
        run_episodes(config, TASKS, tmp_path)
    assert "provider unavailable" in str(failure.value)
    assert not (tmp_path / "results.json").exists()
    assert len((tmp_path / JOURNAL_FILE).read_text().splitlines()) == 1

    results = Results.load(run_episodes(config, TASKS, tmp_path))
    assert sorted(s.task_id for s in results.simulations) == TASKS
    assert [s.reward_info.reward for s in results.simulations] == [1.0, 1.0]


def test_credentials_in_llm_arguments_are_refused() -> None:
    with pytest.raises(UserError, match="OPENAI_API_KEY"):
        EpisodeConfig(domain="mock", agent_model="m", user_model="m", agent_llm_args={"api_key": "sk-x"})


def test_results_file_is_plain_tau2_json(tmp_path: Path) -> None:
    player = GoldPlayer(load_tasks("mock", ["create_task_1"]))
    path = run_episodes(_config(player, "mock-e", num_trials=1, max_workers=1), ["create_task_1"], tmp_path)
    data = json.loads(path.read_text())
    assert set(data) >= {"info", "tasks", "simulations"}
    assert data["info"]["environment_info"]["domain_name"] == "mock"
    assert json.loads((tmp_path / "plan.json").read_text())["task_ids"] == ["create_task_1"]


def test_outside_a_checkout_no_commit_is_recorded_and_git_prints_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    work = tmp_path / "not-a-checkout"
    work.mkdir()
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))  # git must not find a checkout above tmp_path
    monkeypatch.chdir(work)
    player = GoldPlayer(load_tasks("mock", ["create_task_1"]))
    path = run_episodes(_config(player, "mock-g", num_trials=1, max_workers=1), ["create_task_1"], tmp_path / "run")
    assert Results.load(path).info.git_commit == ""
    assert "not a git repository" not in capfd.readouterr().err


def test_inside_a_checkout_its_commit_is_recorded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import subprocess

    from ace_eval.benchmarks.tau2._tau2 import git_commit

    monkeypatch.chdir(tmp_path)
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.com"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "commit", "-q", "--allow-empty", "-m", "x"], check=True)
    head = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, check=True).stdout.strip()
    assert git_commit() == head
