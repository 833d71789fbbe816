"""Benchmarks ACE can run an agent on: the `Benchmark` protocol, its registry (entry points
`ace_eval.benchmarks`), typed scores and the one pass^k. Built-ins register exactly as a plugin's benchmark does."""

from ace_eval.benchmarks._protocol import (
    SPLIT_ROLES,
    Benchmark,
    BenchmarkConfigError,
    BenchmarkEnv,
    BenchmarkFactory,
    EpisodeFolders,
    SplitRole,
    resolve_tasks,
)
from ace_eval.benchmarks._registry import ENTRY_POINT_GROUP, BenchmarkRegistry, RegisteredBenchmark, load_benchmark
from ace_eval.benchmarks.scores import BenchmarkScores, TrialScore

__all__ = [
    "ENTRY_POINT_GROUP",
    "SPLIT_ROLES",
    "Benchmark",
    "BenchmarkConfigError",
    "BenchmarkEnv",
    "BenchmarkFactory",
    "BenchmarkRegistry",
    "BenchmarkScores",
    "EpisodeFolders",
    "RegisteredBenchmark",
    "SplitRole",
    "TrialScore",
    "load_benchmark",
    "resolve_tasks",
]
