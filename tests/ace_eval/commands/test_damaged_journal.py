"""Every command that reads a run folder, fed a run whose `samples.jsonl` has a damaged line before its last (not a
torn write): each exits 2 naming the file, the line and the fix, with no traceback, and writes nothing (the tree is
compared byte for byte). `--resume` refuses instead of running the sample of that line again."""

from __future__ import annotations

import functools
import shutil
from pathlib import Path

import pytest
from _e2e_support import Stop, scripted_injections, stop_after
from _review_support import demo_collection, published_skillbook, review_run
from click.testing import CliRunner

from ace_eval.cli import main
from ace_eval.e2e import runner
from ace_eval.e2e.config import E2ESettings

DEMO = Path(__file__).resolve().parents[3] / "examples" / "demo-collection"


@pytest.fixture(scope="module")
def interrupted(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A run folder whose run stopped after four committed samples."""
    tmp = tmp_path_factory.mktemp("interrupted")
    settings = E2ESettings(traces=DEMO, no_benchmark=True, output_dir=tmp / "out")
    with pytest.raises(Stop):
        runner.run_e2e(settings, injections=scripted_injections(on_sample=stop_after(4)))
    [folder] = list((tmp / "out").iterdir())
    return folder


@pytest.fixture(scope="module")
def reviewed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A review run's folder (its queue is beside the published skillbook it read)."""
    tmp = tmp_path_factory.mktemp("reviewed")
    published = published_skillbook(tmp / "prod" / "skillbook.json")
    return review_run(demo_collection(tmp), published, tmp / "out").folder.path


COMMANDS: dict[str, tuple[str, list[str]]] = {
    "report": ("interrupted", ["report", "RUN", "-o", "TMP/report.html"]),
    "inspect": ("interrupted", ["inspect", "RUN"]),
    "verify": ("interrupted", ["verify", "RUN"]),
    "skills stats": ("interrupted", ["skills", "stats", "RUN"]),
    "skills quarantine": ("interrupted", ["skills", "quarantine", "RUN", "context-00001", "--reason", "r"]),
    "skills release": ("interrupted", ["skills", "release", "RUN", "context-00001", "--reason", "r"]),
    "review list": ("reviewed", ["review", "list", "RUN"]),
    "review show": ("reviewed", ["review", "show", "RUN", "c00001"]),
    "review accept": ("reviewed", ["review", "accept", "RUN", "c00001", "--reviewer", "a"]),
    "review reject": ("reviewed", ["review", "reject", "RUN", "c00001", "--reviewer", "a", "--reason", "r"]),
    "e2e --resume": ("interrupted", ["e2e", "--resume", "RUN"]),
}


def tree(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("command", list(COMMANDS))
def test_a_damaged_journal_line_is_refused_naming_it_with_no_traceback_and_nothing_written(
    command: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest
) -> None:
    monkeypatch.chdir(tmp_path)
    inj = scripted_injections()
    monkeypatch.setattr("ace_eval.commands.e2e.resume_e2e", functools.partial(runner.resume_e2e, injections=inj))
    for var in ("ACE_MODEL", "ACE_E2E_OUTPUT_DIR", "LOGFIRE_TOKEN", "LOGFIRE_CREDENTIALS_DIR"):
        monkeypatch.delenv(var, raising=False)
    fixture, args = COMMANDS[command]
    source: Path = request.getfixturevalue(fixture)
    folder = Path(shutil.copytree(source, tmp_path / source.name))
    journal = folder / "samples.jsonl"
    lines = journal.read_bytes().split(b"\n")
    assert len(lines) >= 4 and lines[-1] == b""  # at least three complete lines: line 2 is not the last
    lines[1] = lines[1][: len(lines[1]) // 2]  # cut in the middle, as a lost write would leave it
    journal.write_bytes(b"\n".join(lines))
    before = tree(tmp_path)

    result = CliRunner().invoke(main, [a.replace("RUN", str(folder)).replace("TMP", str(tmp_path)) for a in args])

    assert "Traceback" not in result.output and isinstance(result.exception, SystemExit | None), (
        result.output,
        result.exception,
    )
    assert result.exit_code == 2, result.output
    assert f"{journal}, line 2: not a sample record" in result.output, result.output
    assert "restore samples.jsonl from a copy, or start a new run" in result.output, result.output
    assert tree(tmp_path) == before, "wrote a file"
    assert len(result.output) < 2_000, result.output
