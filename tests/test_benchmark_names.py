"""The harness knows benchmarks by their protocol only: no module of `ace_eval/` outside `ace_eval/benchmarks/` names
one (`tau-bench`, `tau_bench`, `tau2`, any case), so adding or removing a benchmark touches `benchmarks/` and the
entry points of a `pyproject.toml` (the plugin registry), nothing else.

The rule: a benchmark's name may appear in `ace_eval/benchmarks/` (the benchmarks and their registration) and in
the importers of trace formats (`collection/importers/`): "tau-bench" and "tau2" are also the names of the file
formats those benchmarks write, and an importer reads a file, it runs no benchmark. Everything else would be a
module that still knows a benchmark, listed in `STILL_NAMING` with what keeps it there: none is left (the runner
runs every benchmark through the protocol; defaults, data folders, gold checks and data downloads are the
plugins'). The list only shrinks: a module that no longer names a benchmark fails the test until it is taken off,
and a module not on it that names one fails it at once.
"""

from __future__ import annotations

import re
from pathlib import Path

SOURCE = Path(__file__).resolve().parents[1] / "ace-eval" / "src" / "ace_eval"
NAMES = re.compile(r"tau[-_ ]?bench|tau2", re.IGNORECASE)
ALLOWED = ("benchmarks/", "collection/importers/")
"""Where a benchmark's name belongs: the benchmarks and their registration; the importers of their file formats."""

STILL_NAMING: dict[str, str] = {}


def naming_modules() -> dict[str, list[int]]:
    """Each module outside the allowed places that names a benchmark -> the line numbers."""
    found: dict[str, list[int]] = {}
    for path in sorted(SOURCE.rglob("*.py")):
        name = path.relative_to(SOURCE).as_posix()
        if name.startswith(ALLOWED):
            continue
        lines = [i for i, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1) if NAMES.search(line)]
        if lines:
            found[name] = lines
    return found


def test_no_new_module_outside_benchmarks_names_a_benchmark() -> None:
    found = naming_modules()
    new = {name: lines for name, lines in found.items() if name not in STILL_NAMING}
    assert new == {}, (
        "these modules name a benchmark outside ace_eval/benchmarks/: ask the registry (BenchmarkRegistry) or the "
        "Benchmark protocol instead"
    )


def test_the_list_of_modules_still_naming_one_only_shrinks() -> None:
    found = naming_modules()
    gone = sorted(set(STILL_NAMING) - set(found))
    assert gone == [], f"{gone} no longer name a benchmark: take them off STILL_NAMING"


def test_the_grep_sees_a_benchmark_name() -> None:
    assert NAMES.search("run --benchmark tau2-airline") and NAMES.search("from ace_eval.benchmarks.tau_bench import x")
    assert NAMES.search("TAU_BENCH_DATA") and not NAMES.search("the benchmark's protocol")
