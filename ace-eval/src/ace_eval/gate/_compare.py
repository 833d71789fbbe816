"""Compare two benchmark scores of the same tasks and seeds: paired over tasks, promote or hold."""

from __future__ import annotations

import numpy as np

from ace.exceptions import RunError, UserError
from ace_eval.benchmarks.scores import (
    BOOTSTRAP_RESAMPLES,
    BenchmarkScores,
    TrialScore,
    bootstrap_interval,
    pass_hat_ks,
)
from ace_eval.gate._result import (
    DeltaSummary,
    GateResult,
    ResolutionSummary,
    SideSummary,
    TaskDelta,
    TestSummary,
)
from ace_eval.gate._stats import resolution, sign_flip_test

__all__ = ["UnpairedScoresError", "check_paired", "compare", "decide"]


class UnpairedScoresError(UserError):
    """The two scores are not of the same benchmark, tasks, trials and seeds; the message says what differs."""


_FIX = "score both on the same tasks, trials and seeds (`ace-eval gate run` does)"


def _names(tasks: set[str]) -> str:
    shown = sorted(tasks)[:5]
    return ", ".join(shown) + (f" and {len(tasks) - 5} more" if len(tasks) > 5 else "")


def _seeds(trials: list[TrialScore]) -> list[int] | None:
    """The trials' seeds in order, or `None` when a trial has none (then there is nothing to compare)."""
    seeds = [t.seed for t in trials]
    return None if None in seeds else [s for s in seeds if s is not None]


def check_paired(baseline: BenchmarkScores, candidate: BenchmarkScores) -> list[str]:
    """The task ids both sides share, sorted, after checking the two are paired.

    Raises:
        UnpairedScoresError: different benchmarks, task sets, trials of a task or seeds, or no task.
    """
    if baseline.benchmark != candidate.benchmark:
        raise UnpairedScoresError(
            f"the baseline was scored on {baseline.benchmark!r}, the candidate on {candidate.benchmark!r}; {_FIX}"
        )
    only_base, only_cand = set(baseline.tasks) - set(candidate.tasks), set(candidate.tasks) - set(baseline.tasks)
    if only_base or only_cand:
        parts = [
            f"only the baseline has {_names(only_base)}" if only_base else "",
            f"only the candidate has {_names(only_cand)}" if only_cand else "",
        ]
        raise UnpairedScoresError(f"the two scores cover different tasks ({'; '.join(p for p in parts if p)}); {_FIX}")
    if not baseline.tasks:
        raise UnpairedScoresError("the scores hold no task; score at least one task on both sides")
    uneven = {t for t in baseline.tasks if len(baseline.tasks[t]) != len(candidate.tasks[t])}
    empty = {t for t in baseline.tasks if not baseline.tasks[t]}
    if uneven or empty:
        what = uneven or empty
        raise UnpairedScoresError(
            f"task(s) {_names(what)} have {'different numbers of trials on the two sides' if uneven else 'no trial'}; "
            + _FIX
        )
    if baseline.seeds and candidate.seeds and baseline.seeds != candidate.seeds:
        raise UnpairedScoresError(
            f"the trials were seeded differently (baseline {baseline.seeds}, candidate {candidate.seeds}); {_FIX}"
        )
    pairs = {t: (_seeds(baseline.tasks[t]), _seeds(candidate.tasks[t])) for t in baseline.tasks}
    reseeded = {t for t, (a, b) in pairs.items() if a is not None and b is not None and a != b}
    if reseeded:
        raise UnpairedScoresError(f"the trials of task(s) {_names(reseeded)} were seeded differently; {_FIX}")
    return sorted(baseline.tasks)


def decide(*, ci_low: float, p_value: float, alpha: float, min_effect: float) -> list[str]:
    """Why the gate holds (empty: it promotes): promote iff `ci_low > min_effect` and `p_value < alpha`."""
    reasons = []
    if not ci_low > min_effect:
        reasons.append(f"the 95 % interval's low end {ci_low:+.4f} is not above the minimum effect {min_effect:+.4f}")
    if not p_value < alpha:
        reasons.append(f"p = {p_value:.4g} is not below alpha = {alpha:g}")
    return reasons


def _errors(scores: BenchmarkScores) -> int:
    return sum(1 for trials in scores.tasks.values() for t in trials if t.error is not None)


def _side(scores: BenchmarkScores, seed: int) -> SideSummary:
    return SideSummary(
        skillbook=scores.skillbook,
        models=scores.models,
        pass_hat_k=pass_hat_ks(scores.successes(), seed=seed),
        errors=_errors(scores),
    )


def _evidence(
    baseline: BenchmarkScores, candidate: BenchmarkScores, tasks: list[str]
) -> tuple[dict[str, list[bool]], dict[str, list[bool]]]:
    """Per task, the successes of each side over the trial pairs (same task, same position and seed) in which
    neither side errored: an errored trial (a timeout, a crashed simulator) is evidence neither for nor against a
    skillbook, so it is left out with its pair; a task whose every pair has an error is left out."""
    before: dict[str, list[bool]] = {}
    after: dict[str, list[bool]] = {}
    for task in tasks:
        pairs = [
            (b.success, c.success)
            for b, c in zip(baseline.tasks[task], candidate.tasks[task], strict=True)
            if b.error is None and c.error is None
        ]
        before[task], after[task] = [b for b, _ in pairs], [c for _, c in pairs]
    return before, after


def compare(
    baseline: BenchmarkScores,
    candidate: BenchmarkScores,
    *,
    alpha: float = 0.05,
    min_effect: float = 0.0,
    seed: int = 0,
) -> GateResult:
    """The paired comparison: per task, candidate - baseline success rate over the trial pairs in which neither
    side errored (`_evidence`); its mean with a paired bootstrap 95 %
    interval (`BOOTSTRAP_RESAMPLES` resamples of the tasks, `seed`), the sign-flip test's p-value, pass^k of both,
    what the run can resolve, and the decision.

    Raises:
        UnpairedScoresError: the two are not scores of the same tasks, trials and seeds.
        UserError: `alpha` outside (0, 1) or `min_effect` outside [-1, 1).
        RunError: every trial pair has an errored trial (nothing to compare).
    """
    if not 0.0 < alpha < 1.0:
        raise UserError(f"--alpha must be between 0 and 1 (exclusive), got {alpha:g}; the usual choice is 0.05")
    if not -1.0 <= min_effect < 1.0:
        raise UserError(f"--min-effect is a difference in success rate, in [-1, 1); got {min_effect:g}")
    before, after = _evidence(baseline, candidate, check_paired(baseline, candidate))
    tasks = [t for t in before if before[t]]
    if not tasks:
        raise RunError(
            f"every trial errored on one side or the other (baseline {_errors(baseline)}, candidate "
            f"{_errors(candidate)} errored trials): nothing to compare; fix what made them error (each trial's "
            "error is in the scores) and score again"
        )
    rates = np.array([[np.mean(before[t]), np.mean(after[t])] for t in tasks], dtype=np.float64)
    differences = rates[:, 1] - rates[:, 0]
    low, high = bootstrap_interval(differences, resamples=BOOTSTRAP_RESAMPLES, seed=seed)
    mean = float(differences.mean())
    ci95 = (min(low, mean), max(high, mean))
    test = sign_flip_test(differences, seed=seed)
    trials = max(len(before[t]) for t in tasks)
    reasons = decide(ci_low=ci95[0], p_value=test.p_value, alpha=alpha, min_effect=min_effect)
    resolved = resolution(differences, trials=trials, alpha=alpha)
    return GateResult(
        benchmark=baseline.benchmark,
        tasks=len(tasks),
        num_trials=trials,
        seeds=baseline.seeds or candidate.seeds,
        alpha=alpha,
        min_effect=min_effect,
        baseline=_side(baseline, seed),
        candidate=_side(candidate, seed),
        delta=DeltaSummary(mean=mean, ci95=ci95, resamples=BOOTSTRAP_RESAMPLES, seed=seed),
        p_value=test.p_value,
        test=TestSummary(method=test.method, nonzero=test.nonzero, patterns=test.patterns, seed=test.seed),
        resolution=ResolutionSummary(
            min_p_value=resolved.min_p_value,
            tasks_needed=resolved.tasks_needed,
            smallest_effect=resolved.smallest_effect,
            mde=resolved.mde,
        ),
        per_task=[
            TaskDelta(task=t, baseline=float(b), candidate=float(c), delta=float(c - b))
            for t, (b, c) in zip(tasks, rates, strict=True)
        ],
        decision="hold" if reasons else "promote",
        reasons=reasons,
    )
