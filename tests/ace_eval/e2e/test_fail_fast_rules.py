"""The rules behind failing fast: when repeated errors abort a run, and how errored episodes enter pass^k."""

from __future__ import annotations

from pathlib import Path

from ace.core.skillbook import Skillbook
from ace_eval.benchmarks.tau_bench.episodes import benchmark_summary
from ace_eval.collection import Trace
from ace_eval.commands.e2e import format_summary
from ace_eval.e2e.fail_fast import retries_on_resume
from ace_eval.e2e.runner import E2EResult
from ace_eval.e2e.training import SampleResult
from ace_eval.run.abort import AbortWatch, RunAborted
from ace_eval.run.folder import RunFolder
from ace_eval.run.record import RunRecord


def sample(n: int, kind: str | None, *, operations: int = 0) -> SampleResult:
    return SampleResult(
        trace_uid=f"t:{n}",
        trace_id=str(n),
        epoch=0,
        index=n,
        error=None if kind is None else f"ModelRequestError: {kind}",
        error_kind=kind,
        reflection=None,
        operations=tuple({"type": "ADD", "skill_id": f"context-{i}"} for i in range(operations)),
        changed_skill_ids=(),
    )


def feed(watch: AbortWatch, kinds: list[str | None]) -> int:
    """How many samples the watch saw before it aborted (all of them when it did not)."""
    for n, kind in enumerate(kinds, 1):
        try:
            watch.see(sample(n, kind))
        except RunAborted:
            return n
    return len(kinds)


def test_the_same_unfixable_error_three_times_in_a_row_aborts() -> None:
    assert feed(AbortWatch(3), ["auth", "auth", "auth", "auth"]) == 3
    assert feed(AbortWatch(3), ["not_found", "auth", "not_found", "not_found", "not_found"]) == 5  # one kind in a row
    assert feed(AbortWatch(3), ["config"] * 3) == 3  # the local model is not installed


def test_transient_or_unknown_errors_never_abort_and_zero_disables() -> None:
    assert feed(AbortWatch(3), ["rate_limit", "server", "other", "other", "other", "stopped"]) == 6
    assert feed(AbortWatch(0), ["auth"] * 10) == 10


def test_after_a_success_only_credential_failures_abort() -> None:
    """A refused request after a success is about that sample; a key revoked mid-run is not."""
    assert feed(AbortWatch(3), [None, "bad_request", "bad_request", "bad_request", "bad_request"]) == 5
    assert feed(AbortWatch(3), [None, "permission", "permission", "permission"]) == 4
    assert feed(AbortWatch(2), ["auth", None, "auth", "auth"]) == 4


def test_only_failed_samples_without_operations_are_retried() -> None:
    assert retries_on_resume(sample(1, "auth"))
    assert not retries_on_resume(sample(2, None))
    assert not retries_on_resume(sample(3, "other", operations=1))  # its edits stand: running it again doubles them


def episode(task: int, reward: float | None, error: str | None = None) -> Trace:
    return Trace(
        source_system="tau-bench-airline",
        trace_id=f"task-{task}-trial-0",
        task_id=str(task),
        question="q",
        messages=[{"role": "user", "content": "q"}],
        reward=reward,
        metadata={"error": error},
    )


def test_pass_k_counts_only_scored_episodes_and_says_how_many_errored(tmp_path: Path) -> None:
    summary = benchmark_summary([episode(0, 1.0), episode(1, 0.0), episode(2, None, "ModelRequestError: down")])
    assert (summary.episodes, summary.scored, summary.errors) == (3, 2, 1)
    assert summary.pass_hat_k == [0.5] and summary.mean_reward == 0.5  # not 1/3: the error is left out
    assert [t.rewards for t in summary.task_results] == [[1.0], [0.0], [None]]  # the errored trial was not scored
    none = benchmark_summary([episode(0, None, "boom"), episode(1, None, "boom")])
    assert none.pass_hat_k == [] and none.mean_reward is None and none.scored == 0

    record = RunRecord(
        **{
            "config": {"epochs": 1},
            "training": {"samples": 2, "errors": 1},
            "errors": [{"trace_uid": "t:1", "epoch": 0, "error": "ModelRequestError: refused"}],
            "benchmark": {"before": summary, "after": benchmark_summary([episode(0, 1.0), episode(1, 1.0)])},
        }
    )
    text = format_summary(E2EResult(folder=RunFolder(tmp_path), record=record, skillbook=Skillbook()))
    assert "pass^1: 0.500 before -> 1.000 with the skillbook" in text
    assert "before: pass^k over the 2 scored episodes only; 1 of 3 errored and are left out" in text
    assert "after:" not in text
    assert "2 samples, 1 error\n  first error, on t:1: ModelRequestError: refused (all: ace-eval inspect)" in text
