"""A malformed collection is refused before anything is written, with the file, line and field named."""

from __future__ import annotations

import functools
import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from _e2e_support import scripted_injections
from click.testing import CliRunner

from ace_eval.cli import main
from ace_eval.collection import CollectionError
from ace_eval.e2e import runner
from ace_eval.e2e.config import ConfigError, E2ESettings

DEMO = Path(__file__).resolve().parents[3] / "examples" / "demo-collection"


def edit_line(number: int, change: Callable[[dict[str, Any]], object]) -> Callable[[Path], None]:
    def edit(folder: Path) -> None:
        path = folder / "traces.jsonl"
        lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
        trace = json.loads(lines[number - 1])
        change(trace)
        lines[number - 1] = json.dumps(trace) + "\n"
        path.write_text("".join(lines), encoding="utf-8")

    return edit


def truncate_last_line(folder: Path) -> None:
    path = folder / "traces.jsonl"
    data = path.read_bytes()
    path.write_bytes(data[: len(data) - 200])  # a writer killed mid-line


def unknown_version(folder: Path) -> None:
    path = folder / "manifest.json"
    manifest = json.loads(path.read_text(encoding="utf-8"))
    manifest["format_version"] = "7"
    path.write_text(json.dumps(manifest, indent=1), encoding="utf-8")


CASES = {
    "truncated line": (truncate_last_line, ["traces.jsonl, line 10", "truncated"]),
    "wrong types": (edit_line(3, lambda t: t.update(reward="1.0")), ["traces.jsonl, line 3", "field 'reward'"]),
    "unknown version": (unknown_version, ["manifest.json, line 3", "field 'format_version'", "unknown format_version"]),
    "missing messages": (edit_line(5, lambda t: t.pop("messages")), ["traces.jsonl, line 5", "field 'messages'"]),
    "bad message": (
        edit_line(2, lambda t: t["messages"].append({"role": "robot", "content": "x"})),
        ["traces.jsonl, line 2", "field 'messages["],
    ),
}


@pytest.fixture
def broken(tmp_path: Path, request: pytest.FixtureRequest) -> tuple[Path, list[str]]:
    folder = tmp_path / "broken"
    shutil.copytree(DEMO, folder)
    damage, expected = CASES[request.param]
    damage(folder)
    return folder, expected


@pytest.mark.parametrize("broken", list(CASES), indirect=True)
def test_malformed_collection_is_refused_and_nothing_is_written(
    broken: tuple[Path, list[str]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder, expected = broken
    out = tmp_path / "results"
    monkeypatch.setattr(
        "ace_eval.commands.e2e.run_e2e", functools.partial(runner.run_e2e, injections=scripted_injections())
    )
    result = CliRunner().invoke(
        main, ["e2e", "--traces", str(folder), "--no-benchmark", "--output-dir", str(out), "--max-workers", "4"]
    )
    assert result.exit_code == 2, result.output
    message = result.output
    assert message.startswith("Error: ") and str(folder) in message
    for part in expected:
        assert part in message
    assert not out.exists()  # no run folder, so no skillbook, was written


def test_a_good_copy_of_the_demo_collection_is_accepted(tmp_path: Path) -> None:
    folder = tmp_path / "ok"
    shutil.copytree(DEMO, folder)
    settings = E2ESettings(traces=folder, no_benchmark=True, output_dir=tmp_path / "out", limit=3)
    result = runner.run_e2e(settings, injections=scripted_injections())
    assert result.record.status == "completed" and result.record.training.samples == 3
    # --limit keeps only the traces trained on, as a valid collection of its own
    manifest = json.loads((result.folder.collection / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["counts"]["traces"] == 3 and manifest["metadata"]["limit"] == 3


def test_runner_raises_the_collection_error_itself(tmp_path: Path) -> None:
    folder = tmp_path / "broken"
    shutil.copytree(DEMO, folder)
    truncate_last_line(folder)
    settings = E2ESettings(traces=folder, no_benchmark=True, output_dir=tmp_path / "out")
    with pytest.raises(CollectionError) as info:
        runner.run_e2e(settings, injections=scripted_injections())
    assert info.value.line == 10 and info.value.file == str(folder / "traces.jsonl")
    assert not (tmp_path / "out").exists()


def test_evaluating_on_traces_that_are_not_tau_bench_tasks_is_refused_early(tmp_path: Path, airline_data: Path) -> None:
    settings = E2ESettings(traces=DEMO, output_dir=tmp_path / "out", data_dir=airline_data)
    with pytest.raises(ConfigError, match=r"task_id 'cancel-business'.*pass --no-benchmark"):
        runner.run_e2e(settings, injections=scripted_injections())
    assert not (tmp_path / "out").exists()


def test_running_the_agent_without_data_is_refused_with_the_fix(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="pass --data-dir DIR or set ACE_TAU_BENCH_DATA"):
        runner.run_e2e(E2ESettings(output_dir=tmp_path / "out"), injections=scripted_injections())
    assert not (tmp_path / "out").exists()
