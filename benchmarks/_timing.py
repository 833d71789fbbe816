"""Timing helper shared by the benchmark scripts."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable


def call_times(fn: Callable[[], object], repeat: int) -> list[float]:
    """Wall time of each of `repeat` calls of `fn`, in seconds."""
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return times


def median_time(fn: Callable[[], object], repeat: int) -> float:
    """Median wall time of `repeat` calls of `fn`, in seconds."""
    return statistics.median(call_times(fn, repeat))


def best_time(fn: Callable[[], object], repeat: int) -> float:
    """The fastest of `repeat` calls of `fn`: on a shared machine the slower ones measure the neighbours."""
    return min(call_times(fn, repeat))
