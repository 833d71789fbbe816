"""The gate: a paired comparison of two scored skillbooks on the same tasks and seeds, and promote or hold.

Per task, the difference in success rate (candidate - baseline); its mean with a paired bootstrap 95 % interval;
a two-sided sign-flip permutation test (exact up to 20 tasks that differ, seeded Monte Carlo beyond); pass^k of
both; what the run could resolve. `promote` iff the interval's low end is above `min_effect` and p < `alpha`.
"""

from __future__ import annotations

from ace_eval.gate._compare import UnpairedScoresError, check_paired, compare, decide
from ace_eval.gate._result import (
    Decision,
    DeltaSummary,
    GateResult,
    ResolutionSummary,
    SideSummary,
    TaskDelta,
    TestSummary,
)
from ace_eval.gate._run import (
    GATE_FILE,
    PLAN_FILE,
    GateRun,
    Side,
    candidate_side,
    incumbent_side,
    publish_promoted,
    run_gate,
)
from ace_eval.gate._stats import (
    EXACT_LIMIT,
    MONTE_CARLO_PATTERNS,
    Resolution,
    SignFlipTest,
    resolution,
    sign_flip_test,
    smallest_p_value,
    tasks_needed,
)
from ace_eval.gate._table import format_gate, format_pass_hat_k, gate_rows, pass_hat_k_cells

__all__ = [
    "EXACT_LIMIT",
    "GATE_FILE",
    "MONTE_CARLO_PATTERNS",
    "PLAN_FILE",
    "Decision",
    "DeltaSummary",
    "GateResult",
    "GateRun",
    "Resolution",
    "ResolutionSummary",
    "Side",
    "SideSummary",
    "SignFlipTest",
    "TaskDelta",
    "TestSummary",
    "UnpairedScoresError",
    "candidate_side",
    "check_paired",
    "compare",
    "decide",
    "format_gate",
    "format_pass_hat_k",
    "gate_rows",
    "incumbent_side",
    "pass_hat_k_cells",
    "publish_promoted",
    "resolution",
    "run_gate",
    "sign_flip_test",
    "smallest_p_value",
    "tasks_needed",
]
