"""The gate's verdict as text: pass^k of both sides, the difference, the test, what the run can resolve."""

from __future__ import annotations

from ace_eval.benchmarks.scores import PassHatK
from ace_eval.benchmarks.table import format_table
from ace_eval.gate._result import GateResult
from ace_eval.text import plural

__all__ = ["format_gate", "format_pass_hat_k", "gate_rows", "pass_hat_k_cells"]


def format_pass_hat_k(rows: list[PassHatK]) -> str:
    """One line per k: the value and its 95 % interval, in percent."""
    return format_table(rows, labels=("value [95 % interval]", ""))


def format_gate(result: GateResult) -> str:
    """The table `ace-eval gate compare` prints."""
    seeds = f", seeds {', '.join(map(str, result.seeds))}" if result.seeds else ""
    lines = [f"{_sides(result)}{seeds}", ""]
    lines.append(
        format_table(result.baseline.pass_hat_k, result.candidate.pass_hat_k, labels=("baseline", "candidate"))
    )
    better = sum(1 for t in result.per_task if t.delta > 0)
    worse = sum(1 for t in result.per_task if t.delta < 0)
    d = result.delta
    lines += [
        "",
        f"difference in success rate per task (candidate - baseline): mean {100 * d.mean:+.1f} points, "
        f"95 % interval [{100 * d.ci95[0]:+.1f}, {100 * d.ci95[1]:+.1f}] "
        f"(paired bootstrap over tasks, {d.resamples} resamples, seed {d.seed})",
        f"tasks: {better} better, {worse} worse, {result.tasks - better - worse} the same",
        f"p = {result.p_value:.4g} (two-sided sign-flip test, {result.test.method}, {_patterns(result)})",
    ]
    if result.baseline.errors or result.candidate.errors:
        lines.append(
            f"errored trials, left out of the comparison with their pair: baseline {result.baseline.errors}, "
            f"candidate {result.candidate.errors}"
        )
    r = result.resolution
    floor = (
        f"the smallest difference it can promote is {100 * r.smallest_effect:+.1f} points "
        f"({r.tasks_needed} tasks each one trial better, none worse)"
        if r.smallest_effect is not None
        else f"nothing can be promoted: p < {result.alpha:g} needs at least {r.tasks_needed} tasks moving the same way"
    )
    mde = f"; at this spread it detects {100 * r.mde:.1f} points with 80 % power" if r.mde is not None else ""
    lines.append(f"resolution: with {result.tasks} tasks the smallest possible p is {r.min_p_value:.3g}; {floor}{mde}")
    verdict = result.decision.upper()
    lines.append(f"decision: {verdict}" + (": " + "; ".join(result.reasons) if result.reasons else ""))
    return "\n".join(lines)


def gate_rows(result: GateResult, *, moved: int = 12) -> list[tuple[str, str]]:
    """The verdict as (label, text) rows for a page: the sides, the difference and its interval, the test, the tasks
    that moved (at most `moved`, largest first), the resolution and the rule."""
    d, r, t = result.delta, result.resolution, result.test
    better = sum(1 for row in result.per_task if row.delta > 0)
    worse = sum(1 for row in result.per_task if row.delta < 0)
    changes = sorted((row for row in result.per_task if row.delta != 0), key=lambda row: (-abs(row.delta), row.task))
    shown = ", ".join(f"{row.task} {100 * row.delta:+.0f}" for row in changes[:moved])
    rows = [
        ("benchmark", _sides(result)),
        ("baseline", result.baseline.skillbook or "none"),
        ("candidate", result.candidate.skillbook or "none"),
        (
            "difference",
            f"{100 * d.mean:+.1f} points of success rate, 95 % interval [{100 * d.ci95[0]:+.1f}, "
            f"{100 * d.ci95[1]:+.1f}] (paired bootstrap, {d.resamples} resamples, seed {d.seed})",
        ),
        (
            "p-value",
            f"{result.p_value:.4g} (two-sided sign-flip test, {t.method}, {_patterns(result, noun='pattern')})",
        ),
        (
            "tasks",
            f"{better} better, {worse} worse, {result.tasks - better - worse} the same"
            + (f": {shown}" + (" ..." if len(changes) > moved else "") if changes else ""),
        ),
        (
            "resolution",
            f"smallest possible p {r.min_p_value:.3g}; smallest promotable difference "
            + (f"{100 * r.smallest_effect:+.1f} points" if r.smallest_effect is not None else "none")
            + (f"; detects {100 * r.mde:.1f} points with 80 % power" if r.mde is not None else ""),
        ),
        ("rule", f"promote iff the interval's low end > {result.min_effect:+g} and p < {result.alpha:g}"),
    ]
    if result.reasons:
        rows.append(("why held", "; ".join(result.reasons)))
    return rows


def _sides(result: GateResult) -> str:
    """`toy: 3 tasks x 2 trials`, counted right for one."""
    return f"{result.benchmark}: {plural(result.tasks, 'task')} x {plural(result.num_trials, 'trial')}"


def _patterns(result: GateResult, *, noun: str = "sign pattern") -> str:
    """What the sign-flip test went through: its patterns over the tasks that differ, or that none differs."""
    t = result.test
    if t.nonzero == 0:
        return "no task differs"
    verb = "differs" if t.nonzero == 1 else "differ"
    return f"{plural(t.patterns, noun)} over the {plural(t.nonzero, 'task')} that {verb}"


def pass_hat_k_cells(result: GateResult) -> list[tuple[int, list[str]]]:
    """(k, [baseline cell, candidate cell]) for k = 1, 2, ...: percent with the 95 % interval."""

    def cell(row: PassHatK | None) -> str:
        return f"{100 * row.value:.1f} [{100 * row.low:.1f}, {100 * row.high:.1f}]" if row is not None else "-"

    after = {row.k: row for row in result.candidate.pass_hat_k}
    return [(row.k, [cell(row), cell(after.get(row.k))]) for row in result.baseline.pass_hat_k]
