"""The harness knows benchmarks by their protocol only: no module of `ace_eval/` outside `ace_eval/benchmarks/` names
one (`tau-bench`, `tau_bench`, `tau2`, any case), so adding or removing a benchmark touches `benchmarks/` and the
entry points of a `pyproject.toml` (the plugin registry), nothing else.

The rule: a benchmark's name may appear in `ace_eval/benchmarks/` (the benchmarks and their registration) and in
the importers of trace formats (`collection/importers/`): "tau-bench" and "tau2" are also the names of the file
formats those benchmarks write, and an importer reads a file, it runs no benchmark. Everything else is a module that
still knows a benchmark, listed below with what keeps it there (issue #32's rest: the runner's tau-bench and tau2
phases move behind the protocol). The list only shrinks: a module that no longer names a benchmark fails the test
until it is taken off, and a module not on it that names one fails it at once.
"""

from __future__ import annotations

import re
from pathlib import Path

SOURCE = Path(__file__).resolve().parents[1] / "ace-eval" / "src" / "ace_eval"
NAMES = re.compile(r"tau[-_ ]?bench|tau2", re.IGNORECASE)
ALLOWED = ("benchmarks/", "collection/importers/")
"""Where a benchmark's name belongs: the benchmarks and their registration; the importers of their file formats."""

STILL_NAMING: dict[str, str] = {
    "e2e/runner.py": "plans tau2's splits and loads the tau-bench data itself (built-ins with runner_phases)",
    "e2e/segment.py": "runs the tau-bench episodes and the tau2 phases itself (runner_phases)",
    "e2e/tau2_phases.py": "tau2's e2e phases and its run.json record and table",
    "e2e/task_selection.py": "the tau-bench tasks of replayed traces",
    "e2e/preflight.py": "tau2 checks its own models",
    "e2e/config/_settings.py": "the default benchmark, is_tau2, the tau-bench skill injection and data-dir help",
    "e2e/config/_file.py": "the example config and the tau-bench skill-injection values",
    "e2e/config/_resolve.py": "ACE_TAU_BENCH_DATA, tau2's step count",
    "run/phases.py": "examples in the phase records' docstrings (tau-bench's collect phase as before, tau2's files)",
    "run/folder.py": "the run folder's map names tau2's learn/ folder",
    "commands/e2e.py": "the tau2 flags' help and tau2's closing table",
    "commands/benchmark.py": "`benchmark check` replays tau-bench's and tau2's gold actions",
    "commands/data.py": "`data fetch tau-bench` downloads tau-bench's data",
    "commands/collection.py": "the import formats' help",
    "commands/inspect.py": "an example trace uid in --help",
    "collection/model.py": "example values in docstrings (a source system, a reward)",
    "collection/chat.py": "an example in a docstring",
    "collection/write.py": "an example source system in an error message",
    "collection/grading.py": "an example in its docstring",
}


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
