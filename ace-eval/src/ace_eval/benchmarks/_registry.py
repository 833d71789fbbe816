"""The benchmark registry: every benchmark, built-in or third-party, is an `ace_eval.benchmarks` entry point naming a
`BenchmarkFactory`; `MODULE:FUNCTION` names a user's own scoring function instead.

ace-eval's own benchmarks register in its `pyproject.toml` exactly as a plugin does in its own:

```toml
[project.entry-points."ace_eval.benchmarks"]
toy-support = "ace_toy_benchmark:toy_support"
```

Every entry point is loaded when the registry is built; one that fails to import stops everything with its name,
distribution, version and exception, before a run writes anything (as `ace.steps` plugins do).
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from importlib.metadata import EntryPoint, entry_points
from typing import Any

from ace.pipeline.registry import PluginError, load_plugin
from ace_eval.benchmarks._protocol import Benchmark, BenchmarkConfigError, BenchmarkFactory, ResolvesOptions

__all__ = [
    "DEFAULT_BENCHMARK",
    "ENTRY_POINT_GROUP",
    "BenchmarkRegistry",
    "RegisteredBenchmark",
    "load_benchmark",
    "resolved_options",
]

ENTRY_POINT_GROUP = "ace_eval.benchmarks"
DEFAULT_BENCHMARK = "tau-bench-airline"
"""The benchmark a harness runs when none is named (`ace-eval e2e --benchmark` without a value)."""


@dataclass(frozen=True)
class RegisteredBenchmark:
    """A benchmark as the registry knows it: its factory and the distribution that registered it."""

    name: str
    factory: BenchmarkFactory[Any]
    distribution: str
    version: str

    def create(self, raw: Mapping[str, Any]) -> Benchmark:
        """The benchmark built from its raw options (validated by its options model)."""
        return self.factory.create(self.name, raw)


class BenchmarkRegistry:
    """Every installed benchmark by name."""

    def __init__(self, benchmarks: Iterable[RegisteredBenchmark]) -> None:
        self._benchmarks: dict[str, RegisteredBenchmark] = {}
        for benchmark in benchmarks:
            other = self._benchmarks.get(benchmark.name)
            if other is not None and other.distribution != benchmark.distribution:
                raise PluginError(
                    f"two distributions register the benchmark {benchmark.name!r}: {other.distribution} "
                    f"{other.version} and {benchmark.distribution} {benchmark.version}; uninstall one of them"
                )
            self._benchmarks[benchmark.name] = benchmark

    @classmethod
    def from_entry_points(cls, group: str = ENTRY_POINT_GROUP) -> BenchmarkRegistry:
        """Load every entry point of `group` (ace-eval's built-ins included).

        Raises:
            PluginError: an entry point fails to import or is not a `BenchmarkFactory`.
        """
        return cls(_load(ep) for ep in entry_points(group=group))

    def __contains__(self, name: object) -> bool:
        return name in self._benchmarks

    def __iter__(self) -> Iterator[RegisteredBenchmark]:
        return iter(sorted(self._benchmarks.values(), key=lambda b: b.name))

    @property
    def names(self) -> list[str]:
        return sorted(self._benchmarks)

    def get(self, name: str) -> RegisteredBenchmark:
        """The benchmark called `name`; an unknown name lists the installed ones."""
        found = self._benchmarks.get(name)
        if found is None:
            close = difflib.get_close_matches(name, list(self._benchmarks), n=1)
            hint = f" Did you mean {close[0]!r}?" if close else ""
            raise BenchmarkConfigError(
                f"unknown benchmark {name!r}.{hint} Installed benchmarks: {', '.join(self.names)} "
                "(`ace-eval benchmarks list`; a plugin's benchmark appears once its distribution is installed; "
                "your own scoring function: --benchmark MODULE:FUNCTION)"
            )
        return found

    def create(self, name: str, raw: Mapping[str, Any] | None = None) -> Benchmark:
        """The benchmark `name` with its options: a registered one, or `MODULE:FUNCTION` (a user's scorer)."""
        if name not in self._benchmarks and ":" in name:
            from ace_eval.benchmarks.scorer import scorer_benchmark

            return scorer_benchmark(name, raw or {})
        return self.get(name).create(raw or {})

    def factory(self, name: str) -> BenchmarkFactory[Any]:
        """The factory of `name` (a `MODULE:FUNCTION` scorer's too)."""
        if name not in self._benchmarks and ":" in name:
            from ace_eval.benchmarks.scorer import SCORER

            return SCORER
        return self.get(name).factory


def load_benchmark(name: str, raw: Mapping[str, Any] | None = None) -> Benchmark:
    """The installed benchmark `name` (or `MODULE:FUNCTION`) built from `raw` options."""
    return BenchmarkRegistry.from_entry_points().create(name, raw)


def resolved_options(
    name: str, raw: Mapping[str, Any], benchmark: Benchmark, model_names: Mapping[str, str] | None = None
) -> dict[str, Any]:
    """The options `benchmark` (built as `name` from `raw`) runs with, with the roles' `model_names`, as JSON
    values: what it resolved itself (`ResolvesOptions`), else its options model's values, defaults included."""
    if isinstance(benchmark, ResolvesOptions):
        return dict(benchmark.resolved_options(model_names or {}))
    options = BenchmarkRegistry.from_entry_points().factory(name).parse_options(name, raw)
    dumped: dict[str, Any] = options.model_dump(mode="json")
    return dumped


def _load(ep: EntryPoint) -> RegisteredBenchmark:
    factory, name, version = load_plugin(ep, "benchmark", BenchmarkFactory, "ace_eval.benchmarks.BenchmarkFactory")
    return RegisteredBenchmark(ep.name, factory, name, version)
