"""`ace-eval benchmark check NAME` and `ace-eval data fetch NAME` ask the benchmark's plugin (`GoldCheck`, the
factory's `DataSource`): a third-party benchmark without them is refused by name, exit 2, nothing written."""

from __future__ import annotations

from pathlib import Path

import pytest
from _plugins import install_toy_benchmark
from click.testing import CliRunner

from ace_eval.benchmarks import BenchmarkRegistry, EpisodeFolders, GoldCheck, load_benchmark
from ace_eval.cli import main
from ace_eval.commands.data import data_source


def test_a_benchmark_without_a_gold_check_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    install_toy_benchmark(tmp_path / "site", monkeypatch)
    assert not isinstance(load_benchmark("toy-support"), GoldCheck)
    result = CliRunner().invoke(main, ["benchmark", "check", "toy-support"])
    assert result.exit_code == 2
    assert "toy-support has no gold check: its plugin does not implement `check_gold`" in result.stderr


def test_a_data_dir_a_benchmark_does_not_take_gets_a_note(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    install_toy_benchmark(tmp_path / "site", monkeypatch)
    result = CliRunner().invoke(main, ["benchmark", "check", "toy-support", "--data-dir", str(tmp_path)])
    assert "note: --data-dir has no effect: toy-support takes no data_dir option" in result.stderr
    assert result.exit_code == 2  # and then it has no gold check


def test_the_built_ins_implement_the_gold_check_and_tau_bench_its_episode_folders(airline_data: Path) -> None:
    airline = load_benchmark("tau-bench-airline", {"data_dir": str(airline_data)})
    assert isinstance(airline, GoldCheck) and isinstance(airline, EpisodeFolders)
    factory = BenchmarkRegistry.from_entry_points().factory("tau2-mock")
    assert factory.data is None  # tau2 ships its data


def test_data_fetch_takes_the_data_name_or_the_benchmark_name() -> None:
    assert data_source("tau-bench") is data_source("tau-bench-airline")
    assert data_source("tau-bench").dest == Path("data") / "tau-bench" / "airline"


def test_data_fetch_of_an_unknown_name_lists_the_ones_that_can(tmp_path: Path) -> None:
    for name in ("tau2-mock", "nope"):
        result = CliRunner().invoke(main, ["data", "fetch", name, "--dest", str(tmp_path / "d")])
        assert result.exit_code == 2, result.output
        assert f"no installed benchmark fetches data called {name!r}" in result.stderr
        assert "tau-bench (for tau-bench-airline)" in result.stderr
    assert not (tmp_path / "d").exists()


def test_benchmark_check_reads_the_data_folder_from_the_plugins_variable(
    airline_data: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ACE_TAU_BENCH_DATA", str(airline_data))
    result = CliRunner().invoke(main, ["benchmark", "check", "tau-bench-airline", "--no-progress"])
    assert result.exit_code == 0, result.output
    assert len(result.stdout.splitlines()) == 50  # one gold hash per task
