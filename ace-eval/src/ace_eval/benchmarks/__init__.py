"""Benchmarks ACE can run an agent on: the `Benchmark` protocol, its registry (entry points
`ace_eval.benchmarks`), typed scores and the one pass^k. Built-ins register exactly as a plugin's benchmark does."""

from ace_eval.benchmarks._protocol import (
    SPLIT_ROLES,
    Benchmark,
    BenchmarkConfigError,
    BenchmarkEnv,
    BenchmarkFactory,
    DataSource,
    EpisodeFolders,
    GoldCheck,
    ResolvesOptions,
    SplitRole,
    resolve_tasks,
)
from ace_eval.benchmarks._registry import (
    DEFAULT_BENCHMARK,
    ENTRY_POINT_GROUP,
    BenchmarkRegistry,
    RegisteredBenchmark,
    load_benchmark,
    resolved_options,
)
from ace_eval.benchmarks.injection import SKILL_INJECTIONS, SkillInjection
from ace_eval.benchmarks.scores import BenchmarkScores, TrialScore

__all__ = [
    "DEFAULT_BENCHMARK",
    "ENTRY_POINT_GROUP",
    "SKILL_INJECTIONS",
    "SPLIT_ROLES",
    "Benchmark",
    "BenchmarkConfigError",
    "BenchmarkEnv",
    "BenchmarkFactory",
    "BenchmarkRegistry",
    "BenchmarkScores",
    "DataSource",
    "EpisodeFolders",
    "GoldCheck",
    "RegisteredBenchmark",
    "ResolvesOptions",
    "SkillInjection",
    "SplitRole",
    "TrialScore",
    "load_benchmark",
    "resolve_tasks",
    "resolved_options",
]
