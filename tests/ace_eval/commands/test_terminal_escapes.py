"""Issue 37: what `inspect`, `collection stats`, `scan` and error messages print of a trace cannot drive the
terminal (OSC 52 clipboard writes, window titles, clearing the screen): control characters are escaped
(fail on e5bcddd)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from _run_support import good_book, write_run
from click.testing import CliRunner

from ace_eval.cli import main
from ace_eval.collection import Trace, write_collection
from ace_eval.text import printable

CLIPBOARD = "\x1b]52;c;cm0gLXJmIH4=\x07"  # OSC 52: put `rm -rf ~` on the clipboard
TITLE = "\x1b]0;pwned\x07"
CLEAR = "\x1b[2J\x1b[H"
C1 = "\x9b31m"  # a C1 CSI, read as ESC [ by some terminals
BIDI = "\u202e"


def _clean(output: str) -> None:
    assert "\x1b" not in output and "\x07" not in output and "\x9b" not in output and BIDI not in output
    assert "\\x1b" in output or "\\u001b" in output  # shown, escaped


@pytest.fixture(autouse=True)
def _no_color(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NO_COLOR", "1")


def test_printable_escapes_control_characters_and_keeps_colour_when_asked() -> None:
    assert printable(f"id{CLIPBOARD}") == "id\\x1b]52;c;cm0gLXJmIH4=\\x07"
    assert printable(f"a{BIDI}b{C1}") == "a\\u202eb\\x9b31m"
    assert printable("line\n\tnext") == "line\n\tnext"
    assert printable(f"\x1b[31mred\x1b[0m{CLEAR}", keep_style=True) == "\x1b[31mred\x1b[0m\\x1b[2J\\x1b[H"


def test_collection_stats_escapes_ids_and_keys(tmp_path: Path) -> None:
    trace = Trace(
        source_system=f"bot{TITLE}",
        trace_id=f"t{CLIPBOARD}",
        task_id=f"task{CLEAR}{C1}{BIDI}",
        question="hi",
        messages=[{"role": "user", "content": "hi"}],
        reward=1.0,
    )
    write_collection(tmp_path / "c", [trace], source_system=f"bot{TITLE}", models={f"agent{CLIPBOARD}": "m"})
    for extra in ([], ["--json"]):
        result = CliRunner().invoke(main, ["collection", "stats", str(tmp_path / "c"), *extra])
        assert result.exit_code == 0, result.output
        _clean(result.output)


def test_scan_escapes_the_paths_and_keys_it_prints(tmp_path: Path) -> None:
    (tmp_path / "note.json").write_text(json.dumps({f"key{CLIPBOARD}": "mail a.b@example.com"}))
    result = CliRunner().invoke(main, ["scan", str(tmp_path)])
    assert result.exit_code == 1, result.output
    assert "email" in result.output
    _clean(result.output)


def test_inspect_escapes_what_the_run_folder_says(tmp_path: Path) -> None:
    run = write_run(tmp_path / "run", good_book())
    record = json.loads((run / "run.json").read_text())
    record |= {"run_id": f"r{CLIPBOARD}", "status": f"done{TITLE}", "models": {"agent": f"m{CLEAR}"}}
    (run / "run.json").write_text(json.dumps(record))
    result = CliRunner().invoke(main, ["inspect", str(run)])
    assert result.exit_code == 0, result.output
    _clean(result.output)


def test_an_error_quoting_a_trace_id_is_escaped(tmp_path: Path) -> None:
    run = write_run(tmp_path / "run", good_book())
    result = CliRunner().invoke(main, ["inspect", str(run), "--trace", f"x{CLIPBOARD}"])
    assert result.exit_code == 2, result.output
    _clean(result.output)
