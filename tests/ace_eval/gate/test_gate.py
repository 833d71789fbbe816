"""The gate's statistics against plain re-implementations, and its decisions on synthetic runs.

The decision rule under test (stated once, not tuned to any data): promote iff the paired bootstrap 95 % interval
of the mean per-task difference lies above `min_effect` (0) and the two-sided sign-flip p-value is below alpha
(0.05). Synthetic runs draw each task's success probability uniformly, then 4 Bernoulli trials per side.
"""

from __future__ import annotations

import itertools
import random

import numpy as np
import pytest

from ace.exceptions import RunError
from ace_eval.benchmarks.scores import BenchmarkScores, TrialScore, bootstrap_interval, pass_hat_k
from ace_eval.gate import (
    UnpairedScoresError,
    compare,
    resolution,
    sign_flip_test,
    smallest_p_value,
    tasks_needed,
)


def plain_exact_p(differences: list[float]) -> float:
    """Every sign pattern over every difference (zeros included), counted one by one."""
    observed = abs(sum(differences))
    extreme = total = 0
    for signs in itertools.product((1, -1), repeat=len(differences)):
        total += 1
        extreme += abs(sum(s * d for s, d in zip(signs, differences, strict=True))) >= observed - 1e-9
    return extreme / total


def scores(
    successes: dict[str, list[bool]], *, benchmark: str = "toy", seeds: list[int] | None = None
) -> BenchmarkScores:
    trials = max(len(s) for s in successes.values())
    return BenchmarkScores(
        benchmark=benchmark,
        tasks={task: [TrialScore.of(float(s)) for s in outcome] for task, outcome in successes.items()},
        num_trials=trials,
        seeds=seeds if seeds is not None else list(range(300, 300 + trials)),
    )


def synthetic(
    rng: np.random.Generator, tasks: int, shift: float, trials: int = 4
) -> tuple[BenchmarkScores, BenchmarkScores]:
    """A baseline and a candidate whose success probability per task is the baseline's plus `shift` (clipped)."""
    p = rng.uniform(0.1, 0.9, size=tasks)
    q = np.clip(p + shift, 0.0, 1.0)
    base = {f"t{i:03}": list(rng.random(trials) < p[i]) for i in range(tasks)}
    cand = {f"t{i:03}": list(rng.random(trials) < q[i]) for i in range(tasks)}
    return scores(base), scores(cand)


@pytest.mark.parametrize("seed", range(12))
def test_the_exact_p_value_equals_a_plain_enumeration_zeros_and_ties_included(seed: int) -> None:
    rng = random.Random(seed)
    n = rng.randint(1, 11)
    differences = [rng.choice([-1.0, -0.75, -0.5, -0.25, 0.0, 0.0, 0.25, 0.5, 0.75, 1.0]) for _ in range(n)]
    test = sign_flip_test(differences)
    assert test.method == "exact" and test.nonzero == sum(d != 0 for d in differences)
    assert test.p_value == pytest.approx(plain_exact_p(differences), abs=1e-12)


def test_beyond_twenty_differing_tasks_a_seeded_monte_carlo_agrees_with_the_exact_count() -> None:
    rng = np.random.default_rng(3)
    differences = rng.choice([-0.5, -0.25, 0.25, 0.5, 0.75], size=21)
    exact = sign_flip_test(differences, exact_limit=21)
    sampled = sign_flip_test(differences, seed=11)
    assert exact.method == "exact" and exact.patterns == 2**21
    assert sampled.method == "monte-carlo" and sampled.patterns == 200_000 and sampled.seed == 11
    assert sampled.p_value == pytest.approx(exact.p_value, abs=4 * np.sqrt(exact.p_value / 200_000) + 1e-5)
    assert sign_flip_test(differences, seed=11) == sampled  # reproducible by seed


def test_the_numbers_behind_is_it_better() -> None:
    assert smallest_p_value(4) == 0.125  # 4 tasks all better: the peer's 4 -> 8 of 20 at pass^4
    assert sign_flip_test([1.0] * 4 + [0.0] * 16).p_value == 0.125
    assert tasks_needed(0.05) == 6 and smallest_p_value(5) == 0.0625 and smallest_p_value(6) == 0.03125
    assert tasks_needed(0.0625) == 6 and tasks_needed(0.01) == 8
    r = resolution([0.25] * 6 + [0.0] * 14, trials=4, alpha=0.05)
    assert r.smallest_effect == pytest.approx(0.075) and r.min_p_value == pytest.approx(2 / 2**20)
    sd = float(np.std([0.25] * 6 + [0.0] * 14, ddof=1))
    assert r.mde == pytest.approx((1.959964 + 0.841621) * sd / np.sqrt(20), rel=1e-5)
    assert resolution([0.25] * 5, trials=4, alpha=0.05).smallest_effect is None  # 5 tasks can never reach p < 0.05


def test_a_clearly_better_candidate_is_promoted() -> None:
    rng = np.random.default_rng(2026)
    for _ in range(10):
        result = compare(*synthetic(rng, tasks=30, shift=0.4))
        assert result.decision == "promote", result.reasons
        assert result.delta.ci95[0] > 0 and result.p_value < 0.05 and not result.reasons


def test_noise_is_held_at_least_as_often_as_alpha_promises() -> None:
    rng = np.random.default_rng(7)
    decisions = [compare(*synthetic(rng, tasks=30, shift=0.0)).decision for _ in range(60)]
    assert decisions.count("promote") <= 6  # at most ~5 % expected; 6 of 60 is already unlikely (P < 0.1)


def test_a_clearly_worse_candidate_is_held_with_the_reason() -> None:
    rng = np.random.default_rng(99)
    for _ in range(10):
        result = compare(*synthetic(rng, tasks=30, shift=-0.4))
        assert result.decision == "hold" and result.delta.mean < 0 and result.delta.ci95[1] < 0
        assert any("not above the minimum effect" in reason for reason in result.reasons)


def test_pass_hat_k_of_both_sides_and_the_paired_per_task_rates() -> None:
    base = scores({"a": [True, False, False, False], "b": [True, True, False, False]})
    cand = scores({"a": [True, True, True, False], "b": [True, True, False, False]})
    result = compare(base, cand)
    assert [row.k for row in result.baseline.pass_hat_k] == [1, 2, 3, 4]
    assert result.candidate.pass_hat_k[1].value == pytest.approx(pass_hat_k(cand.successes(), 2))
    assert [(t.task, t.delta) for t in result.per_task] == [("a", 0.5), ("b", 0.0)]
    assert result.delta.mean == 0.25 and result.test.nonzero == 1 and result.p_value == 1.0
    assert result.tasks == 2 and result.num_trials == 4 and result.seeds == [300, 301, 302, 303]


def test_the_bootstrap_interval_is_reproducible_by_seed_and_the_seed_recorded() -> None:
    base, cand = synthetic(np.random.default_rng(5), tasks=25, shift=0.2)
    one, again, other = compare(base, cand, seed=1), compare(base, cand, seed=1), compare(base, cand, seed=2)
    assert one == again and one.delta.seed == 1 and one.delta.resamples == 10_000
    assert other.delta.seed == 2 and other.delta.mean == one.delta.mean
    values = np.random.default_rng(0).random(25)  # continuous values: another seed moves the percentiles
    assert (
        bootstrap_interval(values, seed=1) == bootstrap_interval(values, seed=1) != bootstrap_interval(values, seed=2)
    )
    assert GateResultRoundTrip.check(one)


class GateResultRoundTrip:
    @staticmethod
    def check(result: object) -> bool:
        from ace_eval.gate import GateResult

        assert isinstance(result, GateResult)
        return GateResult.model_validate_json(result.model_dump_json()) == result


def test_all_differences_zero_is_a_hold_with_p_one() -> None:
    same = scores({f"t{i}": [i % 2 == 0] * 4 for i in range(10)})
    result = compare(same, same)
    assert result.p_value == 1.0 and result.delta.mean == 0.0 and result.delta.ci95 == (0.0, 0.0)
    assert result.decision == "hold" and result.test.nonzero == 0 and result.resolution.mde is None


def test_one_task_can_never_be_promoted() -> None:
    result = compare(scores({"a": [False] * 4}), scores({"a": [True] * 4}))
    assert result.delta.mean == 1.0 and result.p_value == 1.0 and result.decision == "hold"
    assert result.resolution.smallest_effect is None and result.resolution.min_p_value == 1.0


def test_the_min_effect_and_alpha_are_the_rule() -> None:
    base = scores({f"t{i}": [False] * 4 for i in range(8)})
    cand = scores({f"t{i}": [True, True, False, False] for i in range(8)})
    assert compare(base, cand).decision == "promote"  # every task +0.5: p = 2/256, interval [0.5, 0.5]
    held = compare(base, cand, min_effect=0.5)
    assert held.decision == "hold" and "not above the minimum effect +0.5000" in held.reasons[0]
    assert compare(base, cand, alpha=2 / 256).decision == "hold"


def reseeded(result: BenchmarkScores) -> BenchmarkScores:
    """`result` with task b's trials carrying other seeds than the baseline's (the run-level seeds unchanged)."""
    result.tasks["b"] = [t.model_copy(update={"seed": 900 + i}) for i, t in enumerate(result.tasks["b"])]
    result.tasks["a"] = [t.model_copy(update={"seed": 300 + i}) for i, t in enumerate(result.tasks["a"])]
    return result


@pytest.mark.parametrize(
    ("candidate", "message"),
    [
        (scores({"a": [True] * 4, "c": [True] * 4}), "only the baseline has b; only the candidate has c"),
        (scores({"a": [True] * 4, "b": [True] * 3}), r"task\(s\) b have different numbers of trials"),
        (scores({"a": [True] * 4, "b": [True] * 4}, seeds=[1, 2, 3, 4]), "seeded differently"),
        (scores({"a": [True] * 4, "b": [True] * 4}, benchmark="other"), "scored on 'toy', the candidate on 'other'"),
        (reseeded(scores({"a": [True] * 4, "b": [True] * 4})), r"trials of task\(s\) b were seeded differently"),
    ],
)
def test_unpaired_scores_are_refused_with_the_fix(candidate: BenchmarkScores, message: str) -> None:
    baseline = scores({"a": [False] * 4, "b": [False] * 4})
    for task in baseline.tasks:  # per-trial seeds on the baseline: the same as the run's
        baseline.tasks[task] = [t.model_copy(update={"seed": 300 + i}) for i, t in enumerate(baseline.tasks[task])]
    with pytest.raises(UnpairedScoresError, match=message) as caught:
        compare(baseline, candidate)
    assert "score both on the same tasks, trials and seeds" in str(caught.value)


def test_an_errored_trial_is_left_out_with_its_pair_on_either_side_and_the_table_says_how_many() -> None:
    """An errored trial (a timeout, a crashed simulator) is evidence neither way: the pair it belongs to is left
    out, so an error on the baseline side (e2e --publish's collected episodes) cannot make a candidate look better,
    nor one on the candidate's side worse."""
    from ace_eval.gate import format_gate

    base = scores({"a": [False, False], "b": [True, True], "c": [False, True]})
    cand = scores({"a": [True, True], "b": [True, True], "c": [True, True]})
    cand.tasks["b"][1] = TrialScore(reward=0.0, success=False, error="the user simulator timed out")
    base.tasks["a"][0] = TrialScore(reward=0.0, success=False, error="rate limited")
    base.tasks["c"] = [TrialScore(reward=0.0, success=False, error="rate limited")] * 2
    result = compare(base, cand)
    assert [(t.task, t.delta) for t in result.per_task] == [("a", 1.0), ("b", 0.0)]  # c: no pair without an error
    assert result.tasks == 2 and result.candidate.errors == 1 and result.baseline.errors == 3
    assert "errored trials, left out of the comparison with their pair: baseline 3, candidate 1" in format_gate(result)


def test_scores_whose_every_pair_errored_are_refused() -> None:
    base = scores({"a": [True, True]})
    cand = scores({"a": [True, True]})
    base.tasks["a"] = [TrialScore(reward=0.0, success=False, error="rate limited")] * 2
    with pytest.raises(RunError, match="every trial errored on one side or the other"):
        compare(base, cand)
