"""The tau2 commands: `ace-eval benchmark check tau2-<domain>`; without the extra, test_missing_extras.py."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

pytest.importorskip("tau2", reason='tau2-bench is optional: pip install "ace-eval[tau2]"')

from click.testing import CliRunner

import ace_eval.benchmarks
from ace.llm._local_runtime import RUNTIME_MODULES
from ace_eval.benchmarks.tau2 import gold
from ace_eval.cli import main


def test_check_tau2_mock_prints_each_task_and_names_the_known_exception() -> None:
    result = CliRunner().invoke(main, ["benchmark", "check", "tau2-mock"])
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert len(lines) == 9 and "create_task_1 1" in lines
    assert "update_task_with_history_and_env_assertions 0" in lines
    assert "known exception, not counted: its gold actions are empty" in result.stderr
    assert "8/9 tasks of tau2-mock (base) reach reward 1.0" in result.stderr


def test_check_exits_1_when_a_task_is_below_1(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(gold, "KNOWN_GOLD_EXCEPTIONS", {})
    monkeypatch.setattr(ace_eval.benchmarks.tau2, "KNOWN_GOLD_EXCEPTIONS", {})
    result = CliRunner().invoke(main, ["benchmark", "check", "tau2-mock"])
    assert result.exit_code == 1
    assert "error: update_task_with_history_and_env_assertions: " in result.stderr


def test_a_tau2_run_on_the_offline_model_without_its_runtime_is_refused_before_writing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in RUNTIME_MODULES:
        monkeypatch.setitem(sys.modules, name, None)
    result = CliRunner().invoke(main, ["e2e", "--benchmark", "tau2-mock", "--output-dir", str(tmp_path / "out")])
    assert result.exit_code == 2
    assert "agent model 'local' (change it with --agent-model): the embedded model's llama.cpp runtime" in result.output
    assert "(the `local` extra)" in result.output
    assert not (tmp_path / "out").exists()


def test_a_typo_of_a_listed_model_is_refused_before_writing_unless_no_preflight(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """tau2 calls its models itself: its check names a typo as e2e's preflight does, not as a missing key or an
    episode's connection error later."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-key")
    args = ["e2e", "--benchmark", "tau2-mock", "--agent-model", "openai/gpt-4.1-mnii", "--user-model", "ace-scripted/u"]
    result = CliRunner().invoke(main, [*args, "--output-dir", str(tmp_path / "out")])
    assert result.exit_code == 2
    assert "did you mean 'openai/gpt-4.1-mini'?" in result.output
    assert not (tmp_path / "out").exists()
    benchmark = ace_eval.benchmarks.load_benchmark("tau2-mock")
    benchmark.check(ace_eval.benchmarks.BenchmarkEnv(model_names={"agent": "openai/gpt-4.1-mnii", "user": "local"}))


def test_an_unknown_split_is_refused_naming_the_splits(tmp_path: Path) -> None:
    args = ["e2e", "--benchmark", "tau2-airline", "--agent-model", "ace-scripted/a", "--user-model", "ace-scripted/u"]
    result = CliRunner().invoke(main, [*args, "--eval-split", "held-out", "--output-dir", str(tmp_path / "out")])
    assert result.exit_code == 2
    assert "no split 'held-out'; its splits: train, test, base" in result.output
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    ("args", "refused"),
    [
        (["--train-split", "train", "--provider-limit", "2"], "--train-split, --provider-limit: it applies only to"),
        (["--benchmark", "tau2-mock", "--data-dir", "d", "--eval-split", "held-out"], "--data-dir: tau2 ships its own"),
    ],
)
def test_flags_of_the_other_benchmark_family_are_refused(tmp_path: Path, args: list[str], refused: str) -> None:
    result = CliRunner().invoke(main, ["e2e", *args, "--output-dir", str(tmp_path / "out")])
    assert result.exit_code == 2
    assert refused in result.output
    assert not (tmp_path / "out").exists()


def test_trials_on_tau2_prints_the_step_cap_note_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The benchmark both learns and judges: it is checked once, so its notes are printed once."""
    import ace_eval.benchmarks.tau2_plugin as plugin
    import ace_eval.trials

    monkeypatch.setattr(plugin, "import_runtime", lambda: None)  # the embedded model need not be installed
    monkeypatch.setattr(plugin, "find_smollm2_gguf", lambda: None)

    def stop(*args: object) -> None:
        raise SystemExit(3)  # the checks are done: stop before the trial runs

    monkeypatch.setattr(ace_eval.trials, "claim_trial", stop)
    args = ["trials", "--benchmark", "tau2-mock", "--vary", "reflector_type=simple,grounded"]
    result = CliRunner().invoke(main, [*args, "--dev-tasks", "create_task_1", "--out", str(tmp_path / "t")])
    assert result.exit_code == 3, result.output
    assert result.stderr.count("note: the embedded model plays tau2-mock with at most 20 messages") == 1
