"""The protocol on real tau2 airline episodes (scripted models): learn on train, score test without and with skills."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("tau2", reason='tau2-bench is optional: pip install "ace-eval[tau2]"')

from _tau2_scripts import GoldPlayer

from ace.core.skillbook import Skillbook
from ace_eval.benchmarks.tau2 import (
    EpisodeConfig,
    MetricsMismatchError,
    check_against_tau2,
    format_table,
    load_tasks,
    pass_hat_k,
    run_episodes,
    task_deltas,
    task_splits,
    trial_seeds,
    usage_by_role,
)
from ace_eval.benchmarks.tau2 import metrics as metrics_module
from ace_eval.collection.importers import import_tau2

LEARN = ["11", "15"]
EVALUATE = ["16", "19"]
SKILL = "Make the change the user asked for before summarising."


def test_airline_learn_then_evaluate_without_and_with_the_skillbook(tmp_path: Path) -> None:
    splits = task_splits("airline")
    assert set(LEARN) <= set(splits["train"]) and set(EVALUATE) <= set(splits["test"])
    seeds = trial_seeds(300, 2)
    # In evaluation every task also fails its second trial, so pass^2 differs from pass^1.
    player = GoldPlayer(load_tasks("airline", LEARN + EVALUATE), needs_skill=SKILL)
    agent_model, user_model = player.models("airline")
    common = {"domain": "airline", "agent_model": agent_model, "user_model": user_model, "num_trials": 2}
    learn = run_episodes(EpisodeConfig(**common, max_workers=2), LEARN, tmp_path / "learn")  # type: ignore[arg-type]
    collection = import_tau2(learn)
    assert collection.benchmark == "tau2-bench-airline"
    assert [t.reward for t in collection.traces] == [0.0] * 4  # the write is skipped without the skill
    assert all(t.feedback and "database differs" in t.feedback for t in collection.traces)

    book = Skillbook()
    book.add_skill("context", "Flight changes were described but never made.", ["flight", "change"], SKILL)
    skillbook = tmp_path / "skillbook.json"
    book.save_to_file(skillbook)

    picky = GoldPlayer(player.tasks, needs_skill=SKILL, fail_seeds=frozenset({seeds[1]}))
    agent_model, user_model = picky.models("airline-eval")
    common.update(agent_model=agent_model, user_model=user_model)
    baseline = run_episodes(EpisodeConfig(**common), EVALUATE, tmp_path / "baseline")  # type: ignore[arg-type]
    evaluation = run_episodes(
        EpisodeConfig(**common, skillbook=skillbook, injection="prompt", max_workers=2),  # type: ignore[arg-type]
        EVALUATE,
        tmp_path / "evaluation",
    )

    before, after = pass_hat_k(baseline), pass_hat_k(evaluation)
    assert [(r.k, r.value) for r in before] == [(1, 0.0), (2, 0.0)]
    assert [(r.k, r.value) for r in after] == [(1, 0.5), (2, 0.0)]
    assert check_against_tau2(baseline) == {1: 0.0, 2: 0.0}
    assert check_against_tau2(evaluation) == {1: 0.5, 2: 0.0}
    assert {d.task_id: d.delta for d in task_deltas(baseline, evaluation)} == {"16": 0.5, "19": 0.5}
    assert format_table(before, after).splitlines()[1].endswith("+50.0")
    usage = usage_by_role(evaluation)
    assert usage["agent"]["prompt_tokens"] > usage["user"]["prompt_tokens"] > 0


def test_a_disagreement_with_tau2_is_an_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    player = GoldPlayer(load_tasks("airline", ["16"]))
    agent_model, user_model = player.models("airline-check")
    results = run_episodes(
        EpisodeConfig(domain="airline", agent_model=agent_model, user_model=user_model), ["16"], tmp_path
    )
    assert check_against_tau2(results) == {1: 1.0}
    shifted = metrics_module.pass_hat_k(results)
    monkeypatch.setattr(
        metrics_module, "pass_hat_k", lambda *a, **k: [type(r)(r.k, r.value - 0.5, r.low, r.high) for r in shifted]
    )
    with pytest.raises(MetricsMismatchError, match=r"differs from tau2\.metrics"):
        check_against_tau2(results)
