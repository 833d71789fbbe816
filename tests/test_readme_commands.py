"""The README's `ace-eval` commands run as written from a clone, the hosted models swapped for scripted ones.

The commands run from a scratch folder that looks like a clone (`examples/` linked in, `../shared/data` linked
when present), so the run folders they write stay out of the repository.
"""

from __future__ import annotations

import functools
import re
import shlex
from pathlib import Path

import pytest
from _e2e_support import ScriptedReflector, scripted_injections
from click.testing import CliRunner
from conftest import SHARED_DATA

from ace_eval.cli import main
from ace_eval.e2e import runner

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
_SHARED_PATHS = ("../shared/data", "results/collections/tau-airline")


def readme_commands() -> list[str]:
    """The `ace-eval` commands of the README's `ace-eval` section, continuation lines joined, comments dropped."""
    text = README.read_text(encoding="utf-8")
    section = text[text.index("## `ace-eval`") :]
    block = re.search(r"```bash\n(.*?)```", section, flags=re.DOTALL)
    assert block is not None, "the README's `ace-eval` section has no bash block"
    joined = block.group(1).replace("\\\n", " ")
    return [line.split("  #")[0].strip() for line in joined.splitlines() if line.strip().startswith("ace-eval ")]


def test_the_readme_commands_run_as_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, shared_data_or_none: Path | None
) -> None:
    clone = tmp_path / "clone"
    clone.mkdir()
    (clone / "examples").symlink_to(ROOT / "examples")
    if shared_data_or_none is not None:
        (tmp_path / "shared").mkdir()
        (tmp_path / "shared" / "data").symlink_to(shared_data_or_none)
    monkeypatch.chdir(clone)
    for var in ("LOGFIRE_TOKEN", "LOGFIRE_CREDENTIALS_DIR", "ACE_MODEL", "ACE_E2E_OUTPUT_DIR", "ACE_EMBEDDING_MODEL"):
        monkeypatch.delenv(var, raising=False)
    injections = scripted_injections(ScriptedReflector())
    monkeypatch.setattr("ace_eval.commands.e2e.run_e2e", functools.partial(runner.run_e2e, injections=injections))
    monkeypatch.setattr("ace_eval.commands.e2e.resume_e2e", functools.partial(runner.resume_e2e, injections=injections))
    commands = readme_commands()
    assert commands[0].startswith("ace-eval e2e --traces examples/demo-collection --no-benchmark")
    first_run: Path | None = None
    ran = 0
    for command in commands:
        if shared_data_or_none is None and any(p in command for p in _SHARED_PATHS):
            continue  # needs ../shared/data
        if "run_<id>" in command:
            assert first_run is not None
            command = command.replace("results/e2e/run_<id>", str(first_run))
        result = CliRunner().invoke(main, shlex.split(command)[1:])
        assert result.exit_code == 0, f"{command}\n{result.output}"
        ran += 1
        runs = sorted((clone / "results" / "e2e").glob("run_*"), key=lambda p: p.stat().st_mtime)
        first_run = first_run or (runs[0].relative_to(clone) if runs else None)
    assert ran >= 4
    assert "Spans: not sent to Logfire" in CliRunner().invoke(main, shlex.split(commands[0])[1:]).stdout


@pytest.fixture
def shared_data_or_none() -> Path | None:
    """`../shared/data` when present: the README's import commands run too; without it they are left out."""
    return SHARED_DATA if (SHARED_DATA / "tau-bench" / "airline").is_dir() else None
