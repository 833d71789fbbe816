"""`ace-eval runs` (run folders newest first) and `ace-eval export` (a skillbook as markdown with provenance)."""

from __future__ import annotations

import json
from pathlib import Path

from _run_support import good_book, write_run
from click.testing import CliRunner

from ace_eval.cli import main


def _dated(folder: Path, created_at: str, **fields: object) -> None:
    record = json.loads((folder / "run.json").read_text(encoding="utf-8"))
    record.update(created_at=created_at, **fields)
    (folder / "run.json").write_text(json.dumps(record), encoding="utf-8")


def test_runs_lists_run_folders_newest_first_with_their_numbers(tmp_path: Path) -> None:
    old = write_run(tmp_path / "results" / "e2e" / "run_000000000001", good_book(), embed=False)
    new = write_run(tmp_path / "results" / "e2e" / "run_000000000002", good_book(), embed=False, status="failed")
    _dated(old, "2026-11-01T10:00:00+00:00", benchmark={"after": {"pass_hat_k": {"1": 0.75}}})
    _dated(new, "2026-12-01T10:00:00+00:00", training={"samples": 7, "errors": 2, "skillbook": {"active": 4}})
    (tmp_path / "results" / "e2e" / "run_000000000001" / "collection").mkdir()  # a run's subfolders are not runs
    (tmp_path / "results" / "notes").mkdir()

    result = CliRunner().invoke(main, ["runs", str(tmp_path / "results")])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0].split() == ["RUN", "STATUS", "DATE", "SAMPLES", "ERRORS", "SKILLS", "SCORE"]
    assert lines[1].split() == [str(new), "failed", "2026-12-01", "10:00:00", "7", "2", "4", "-"]
    assert lines[2].split() == [str(old), "completed", "2026-11-01", "10:00:00", "2", "0", "-", "0.750"]
    assert len(lines) == 3

    rows = json.loads(CliRunner().invoke(main, ["runs", str(tmp_path / "results"), "--json"]).output)
    assert [r["path"] for r in rows] == [str(new), str(old)] and rows[1]["score"] == 0.75


def test_runs_says_when_there_is_none(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["runs", str(tmp_path)])
    assert result.exit_code == 0 and "no run folder under" in result.output


def test_export_writes_the_markdown_beside_the_skillbook_naming_the_teaching_traces(tmp_path: Path) -> None:
    folder = write_run(tmp_path / "run", good_book(), embed=False)
    result = CliRunner().invoke(main, ["export", str(folder / "skillbook.json")])
    assert result.exit_code == 0, result.output
    markdown = (folder / "skillbook.md").read_text(encoding="utf-8")
    assert markdown.startswith("# Skillbook\n")
    assert markdown.count("- **Taught by:** demo:1 (epoch 0)") == 2  # both skills, by trace uid and epoch

    other = tmp_path / "out.md"
    result = CliRunner().invoke(main, ["export", str(folder / "skillbook.json"), "-o", str(other), "--title", "Air"])
    assert result.exit_code == 0 and other.read_text(encoding="utf-8").startswith("# Air\n")
