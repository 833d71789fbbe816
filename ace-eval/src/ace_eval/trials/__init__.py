"""Trials: several *candidates* (ways to learn a skillbook: settings of `ace-eval e2e`) learn from the same traces,
are scored on the same dev tasks and seeds, the best is gated against the incumbent and scored alone on held-out
test tasks; every candidate stays on record in `scoreboard.json`.

Not to be confused with `--num-trials` (episodes per task): a *trial* here is one comparison of candidates.
"""

from ace_eval.trials._args import TRIAL_FILE, TrialArgs, claim_trial, read_trial_args
from ace_eval.trials._plan import Budget, BudgetExceeded, TrialPlan
from ace_eval.trials._run import pareto_set, pick_winner, run_trial
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
    expand_epochs,
    varying_keys,
)

__all__ = [
    "SCOREBOARD_FILE",
    "TRIAL_FILE",
    "Budget",
    "BudgetExceeded",
    "Candidate",
    "CandidateEntry",
    "DevScore",
    "Scoreboard",
    "TestScore",
    "TrialArgs",
    "TrialPlan",
    "VaryError",
    "candidates_from_toml",
    "candidates_from_vary",
    "check_candidates",
    "claim_trial",
    "expand_epochs",
    "pareto_set",
    "pick_winner",
    "read_scoreboard",
    "read_trial_args",
    "run_trial",
    "varying_keys",
]
