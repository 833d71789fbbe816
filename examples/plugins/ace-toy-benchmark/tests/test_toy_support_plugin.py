"""`toy-support` on its own: its options, its splits, and how a skillbook changes the scripted agent's score."""

from __future__ import annotations

from pathlib import Path

import pytest
from ace_toy_benchmark import TASKS, toy_support

from ace import Skillbook
from ace.exceptions import UserError
from ace_eval.benchmarks import BenchmarkEnv, BenchmarkScores
from ace_eval.collection import read_collection

TEST = ["refund-3", "cancel-2", "address-2", "password-2", "upgrade-2", "refund-4"]


def score(tmp_path: Path, skillbook: Skillbook | None, trials: int = 1, **options: object) -> BenchmarkScores:
    bench = toy_support.create("toy-support", options)
    return bench.evaluate(
        BenchmarkEnv(), skillbook=skillbook, task_ids=TEST, num_trials=trials, seeds=None, directory=tmp_path
    )


def book(insight: str, *topics: str) -> Skillbook:
    skillbook = Skillbook()
    for topic in topics:
        skillbook.add_skill("context", f"{topic} requests go wrong.", [topic], insight)
    return skillbook


def test_without_a_skillbook_the_agent_fails_the_hard_requests(tmp_path: Path) -> None:
    scores = score(tmp_path, None)
    assert {t for t, ok in scores.successes().items() if ok == [True]} == {"cancel-2", "password-2", "upgrade-2"}


def test_a_helpful_skill_raises_success_on_its_topic_only(tmp_path: Path) -> None:
    scores = score(tmp_path, book("Ask for a photo before refunding.", "refund"))
    assert {t for t, ok in scores.successes().items() if ok == [False]} == {"address-2"}


def test_a_harmful_skill_lowers_success_on_its_topic(tmp_path: Path) -> None:
    scores = score(tmp_path, book("Escalate every cancellation to a human.", "cancel"))
    assert scores.successes()["cancel-2"] == [False]
    assert scores.successes()["password-2"] == [True]


def test_a_removed_skill_is_not_followed(tmp_path: Path) -> None:
    skillbook = book("Ask for a photo before refunding.", "refund")
    [skill] = skillbook.skills()
    skillbook.remove_skill(skill.id, "it was wrong")
    assert score(tmp_path, skillbook).successes()["refund-3"] == [False]


def test_flakiness_is_seeded_so_two_calls_score_the_same_trials(tmp_path: Path) -> None:
    first = score(tmp_path, None, trials=8, flakiness=0.5, seed=7)
    again = score(tmp_path, None, trials=8, flakiness=0.5, seed=7)
    assert first == again
    easy = first.successes()["cancel-2"]
    assert 0 < sum(easy) < 8  # some trials time out, not all
    [p1, *_, p8] = first.pass_hat_ks()
    assert p1.value > p8.value  # pass^k falls with k


def test_options_are_strict_and_splits_known(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="option 'flakyness': Extra inputs are not permitted"):
        toy_support.create("toy-support", {"flakyness": "0.1"})
    with pytest.raises(UserError, match="option 'flakiness': Input should be less than 1"):
        toy_support.create("toy-support", {"flakiness": "1.5"})
    bench = toy_support.create("toy-support", {"train_split": "refund-1,address-1"})
    assert list(bench.tasks("learn")) == ["refund-1", "address-1"]
    assert {t.task_id for t in TASKS} == {*bench.splits()["train"], *bench.splits()["test"]}


def test_collect_writes_a_trace_collection_and_resumes(tmp_path: Path) -> None:
    bench = toy_support.create("toy-support", {})
    out = tmp_path / "collection"
    bench.collect(BenchmarkEnv(), skillbook=None, task_ids=["refund-1", "cancel-1"], num_trials=2, directory=out)
    bench.collect(BenchmarkEnv(), skillbook=None, task_ids=["refund-1", "cancel-1"], num_trials=2, directory=out)
    manifest, traces = read_collection(out)
    assert manifest.benchmark == "toy-support" and len(traces) == 4  # the second call added nothing
    failed = next(t for t in traces if t.task_id == "refund-1")
    assert failed.reward == 0.0 and failed.feedback == "Rejected: the agent did not ask for a photo of the damage."
