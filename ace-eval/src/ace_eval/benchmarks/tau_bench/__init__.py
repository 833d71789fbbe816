"""The tau-bench airline benchmark, run offline from a data folder with the benchmark's exact semantics.

Load the data with `load_airline_data`, run an episode with `run_episode` (a pydantic-ai agent and a
simulated user) and score it as the benchmark does; `episode_trace` writes it as a trace, `episodes` runs many
in parallel into a trace collection (`ace_eval.benchmarks.tau_bench_plugin` registers it as a benchmark).
"""

from __future__ import annotations

from ace_eval.benchmarks.tau_bench.agent import SKILL_INJECTIONS, SkillInjection, build_agent, render_skills
from ace_eval.benchmarks.tau_bench.check import GoldHashes, RecordedRun, check_trajectories, load_trajectories
from ace_eval.benchmarks.tau_bench.data import (
    DATA_FILES,
    Action,
    AirlineData,
    DataFolderError,
    Task,
    load_airline_data,
)
from ace_eval.benchmarks.tau_bench.db import AirlineDB
from ace_eval.benchmarks.tau_bench.env import STOP_TOKEN, AirlineEnv, gold_data_hash
from ace_eval.benchmarks.tau_bench.episode import (
    SOURCE_SYSTEM,
    EpisodeConfig,
    EpisodeResult,
    run_episode,
)
from ace_eval.benchmarks.tau_bench.fetch import FetchError, fetch_airline_data
from ace_eval.benchmarks.tau_bench.hashing import consistent_hash, data_hash, to_hashable
from ace_eval.benchmarks.tau_bench.replay import replay_messages
from ace_eval.benchmarks.tau_bench.scoring import RewardResult, calculate_reward, pass_hat_k, pass_hat_ks
from ace_eval.benchmarks.tau_bench.tools import TOOLS
from ace_eval.benchmarks.tau_bench.user_sim import UserSimulator

__all__ = [
    "DATA_FILES",
    "SKILL_INJECTIONS",
    "SOURCE_SYSTEM",
    "STOP_TOKEN",
    "TOOLS",
    "Action",
    "AirlineDB",
    "AirlineData",
    "AirlineEnv",
    "DataFolderError",
    "EpisodeConfig",
    "EpisodeResult",
    "FetchError",
    "GoldHashes",
    "RecordedRun",
    "RewardResult",
    "SkillInjection",
    "Task",
    "UserSimulator",
    "build_agent",
    "calculate_reward",
    "check_trajectories",
    "consistent_hash",
    "data_hash",
    "fetch_airline_data",
    "gold_data_hash",
    "load_airline_data",
    "load_trajectories",
    "pass_hat_k",
    "pass_hat_ks",
    "render_skills",
    "replay_messages",
    "run_episode",
    "to_hashable",
]
