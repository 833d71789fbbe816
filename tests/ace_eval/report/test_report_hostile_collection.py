"""Issue 37: `ace-eval report` on a hostile `collection/traces.jsonl`: malformed records are skipped and counted,
and a link leading out of the run folder is refused (fail on e5bcddd: tracebacks, and the outside file embedded)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from _report_support import scripted_run
from click.testing import CliRunner

from ace_eval.cli import main


@pytest.fixture(scope="module")
def demo_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return scripted_run(tmp_path_factory.mktemp("runs"))


def _copy(run: Path, tmp_path: Path) -> Path:
    copy = tmp_path / "run"
    shutil.copytree(run, copy)
    return copy


def _report(run: Path, tmp_path: Path) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, ["report", str(run), "-o", str(tmp_path / "page.html")])
    page = (tmp_path / "page.html").read_text() if (tmp_path / "page.html").exists() else ""
    assert not isinstance(result.exception, RecursionError | ValueError | AttributeError | TypeError), result.output
    return result.exit_code, result.output, page


def test_deep_nesting_a_huge_integer_and_messages_as_an_object_are_skipped_and_counted(
    demo_run: Path, tmp_path: Path
) -> None:
    run = _copy(demo_run, tmp_path)
    traces = run / "collection" / "traces.jsonl"
    good = traces.read_text().splitlines()
    first = json.loads(good[0])
    hostile = [
        '{"trace_uid": "x:deep", "messages": ' + "[" * 5000 + "]" * 5000 + "}",
        '{"trace_uid": "x:int", "reward": ' + "9" * 10_000 + ', "messages": []}',
        json.dumps({**first, "trace_uid": "x:obj", "messages": {"role": "user"}}),
        json.dumps({**first, "trace_uid": "x:str", "question": {"a": 1}}),
    ]
    traces.write_text("\n".join([*good, *hostile]) + "\n")
    code, output, page = _report(run, tmp_path)
    assert code == 0, output
    assert "left out 4 line(s) of collection/traces.jsonl" in output
    assert "x:deep" not in page and "x:obj" not in page
    assert first["trace_uid"] in page  # the good records are still shown


def test_a_traces_file_linked_outside_the_run_folder_is_refused(demo_run: Path, tmp_path: Path) -> None:
    run = _copy(demo_run, tmp_path)
    outside = tmp_path / "elsewhere.jsonl"
    outside.write_text(json.dumps({"trace_uid": "x:secret", "question": "PRIVATE-MARKER", "messages": []}) + "\n")
    traces = run / "collection" / "traces.jsonl"
    traces.unlink()
    traces.symlink_to(outside)
    code, output, page = _report(run, tmp_path)
    assert code == 2, output
    assert "links outside the run folder" in output
    assert "PRIVATE-MARKER" not in page


@pytest.mark.parametrize("name", ["spans.jsonl", "run.json", "collection"])
def test_any_link_out_of_the_run_folder_is_refused(demo_run: Path, tmp_path: Path, name: str) -> None:
    run = _copy(demo_run, tmp_path)
    target = run / name
    outside = tmp_path / f"outside-{name}"
    shutil.move(target, outside)
    target.symlink_to(outside, target_is_directory=outside.is_dir())
    code, output, _ = _report(run, tmp_path)
    assert code == 2, output
    assert "links outside the run folder" in output


def test_a_link_inside_the_run_folder_is_fine(demo_run: Path, tmp_path: Path) -> None:
    run = _copy(demo_run, tmp_path)
    (run / "notes.txt").write_text("x")
    (run / "notes-link.txt").symlink_to(run / "notes.txt")
    code, output, _ = _report(run, tmp_path)
    assert code == 0, output
