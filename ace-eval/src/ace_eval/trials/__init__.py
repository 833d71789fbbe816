"""Trials: several *candidates* (ways to learn a skillbook: settings of `ace-eval e2e`) learn from the same traces,
are scored on the same dev tasks and seeds, the best is gated against the incumbent and scored alone on held-out
test tasks; every candidate stays on record in `scoreboard.json`.

Not to be confused with `--num-trials` (episodes per task): a *trial* here is one comparison of candidates.
"""

from ace_eval.trials._run import TrialPlan, pareto_set, pick_winner, run_trial
from ace_eval.trials._scoreboard import (
    SCOREBOARD_FILE,
    CandidateEntry,
    DevScore,
    Scoreboard,
    TestScore,
    read_scoreboard,
)
from ace_eval.trials._vary import (
    Candidate,
    VaryError,
    candidates_from_toml,
    candidates_from_vary,
    check_candidates,
    varying_keys,
)

__all__ = [
    "SCOREBOARD_FILE",
    "Candidate",
    "CandidateEntry",
    "DevScore",
    "Scoreboard",
    "TestScore",
    "TrialPlan",
    "VaryError",
    "candidates_from_toml",
    "candidates_from_vary",
    "check_candidates",
    "pareto_set",
    "pick_winner",
    "read_scoreboard",
    "run_trial",
    "varying_keys",
]
