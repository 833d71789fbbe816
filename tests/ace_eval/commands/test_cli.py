"""The `ace-eval` group: lazy sub-commands whose listing matches the commands themselves."""

from __future__ import annotations

import functools
import json
import subprocess
import sys
from pathlib import Path

import click
import pytest
from _e2e_support import scripted_injections
from click.testing import CliRunner

from ace_eval.cli import COMMANDS, main
from ace_eval.e2e import runner
from ace_eval.text import plural, tone

DEMO = Path(__file__).resolve().parents[3] / "examples" / "demo-collection"

_HEAVY = ("pydantic_ai", "litellm", "logfire", "numpy", "ace_eval.commands", "ace_eval.e2e")


def _modules_after(args: list[str]) -> set[str]:
    code = (
        "import sys\n"
        "from ace_eval.cli import main\n"
        "try:\n"
        f"    main({args!r})\n"
        "except SystemExit:\n"
        "    pass\n"
        "print('\\n'.join(sys.modules), file=sys.stderr)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120)
    return set(done.stderr.split())


@pytest.mark.parametrize("args", [["--help"], ["--version"]])
def test_help_and_version_import_no_command_module(args: list[str]) -> None:
    loaded = _modules_after(args)
    heavy = sorted(m for m in loaded if m.startswith(_HEAVY))
    assert heavy == []


def test_a_command_imports_only_its_own_module() -> None:
    loaded = _modules_after(["data", "--help"])
    assert "ace_eval.commands.data" in loaded
    assert "ace_eval.commands.e2e" not in loaded
    assert "ace_eval.commands.inspect" not in loaded


def test_help_lists_every_command_with_its_short_help() -> None:
    out = CliRunner().invoke(main, ["--help"], terminal_width=200).output
    for name, lazy in COMMANDS.items():
        command = lazy.load()
        assert command.name == name
        assert lazy.short_help == command.get_short_help_str(1000), f"update COMMANDS[{name!r}] in ace_eval/cli.py"
        assert f"  {name}  " in out
    listed = [line.split()[0] for line in out.split("Commands:\n")[1].split("\n\n")[0].splitlines() if line.strip()]
    assert listed == sorted(COMMANDS)


def test_unknown_command_is_a_usage_error() -> None:
    result = CliRunner().invoke(main, ["evaluate"])
    assert result.exit_code == 2
    assert "No such command 'evaluate'" in result.output


def test_a_lazy_command_runs() -> None:
    result = CliRunner().invoke(main, ["collection", "--help"])
    assert result.exit_code == 0, result.output
    assert "import" in result.output
    assert isinstance(main, click.Group)
    assert "collection" in main.commands  # loaded once, then kept


def test_plural_and_tone(monkeypatch: pytest.MonkeyPatch) -> None:
    assert [plural(n, "sample") for n in (0, 1, 2)] == ["0 samples", "1 sample", "2 samples"]
    assert plural(1, "active skill") == "1 active skill" and plural(3, "entry", "entries") == "3 entries"
    monkeypatch.delenv("NO_COLOR", raising=False)
    assert tone("FAIL", "bad") == "\x1b[31m\x1b[1mFAIL\x1b[0m" and tone("PASS", "good") == "\x1b[32mPASS\x1b[0m"
    monkeypatch.setenv("NO_COLOR", "1")
    assert tone("FAIL", "bad") == "FAIL"


def test_the_run_ends_saying_where_its_spans_are(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # no .logfire/ credentials here
    for var in ("LOGFIRE_TOKEN", "LOGFIRE_CREDENTIALS_DIR", "ACE_MODEL", "ACE_E2E_OUTPUT_DIR"):
        monkeypatch.delenv(var, raising=False)
    injections = scripted_injections()
    monkeypatch.setattr("ace_eval.commands.e2e.run_e2e", functools.partial(runner.run_e2e, injections=injections))
    args = ["e2e", "--traces", str(DEMO), "--no-benchmark", "--limit", "1", "--logfire"]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    [line] = [line for line in result.stdout.splitlines() if line.startswith("Spans: ")]
    assert line.startswith("Spans: not sent to Logfire (no token: set LOGFIRE_TOKEN, or run `logfire auth`")
    [folder] = (tmp_path / "results" / "e2e").iterdir()
    assert line.endswith(f"a copy is in {Path('results/e2e') / folder.name / 'spans.jsonl'}")
    record = json.loads((folder / "run.json").read_text(encoding="utf-8"))
    assert record["logfire"] == {"sent": False, "project_url": None, "token_from": None}


def test_a_broken_logfire_credentials_file_stops_the_run_before_its_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    for var in ("LOGFIRE_TOKEN", "LOGFIRE_CREDENTIALS_DIR", "ACE_E2E_OUTPUT_DIR"):
        monkeypatch.delenv(var, raising=False)
    (tmp_path / ".logfire").mkdir()
    (tmp_path / ".logfire" / "logfire_credentials.json").write_text('{"token": ', encoding="utf-8")
    injections = scripted_injections()
    monkeypatch.setattr("ace_eval.commands.e2e.run_e2e", functools.partial(runner.run_e2e, injections=injections))
    result = CliRunner().invoke(main, ["e2e", "--traces", str(DEMO), "--no-benchmark", "--logfire"])
    assert result.exit_code != 0
    assert "Invalid credentials file: .logfire/logfire_credentials.json: fix or delete it" in result.stderr
    assert not (tmp_path / "results").exists()


def test_version_is_the_installed_one() -> None:
    import ace_eval

    result = CliRunner().invoke(main, ["--version"])
    assert result.exit_code == 0 and result.output == f"ace-eval, version {ace_eval.__version__}\n"
    assert ace_eval.__version__.count(".") >= 2
