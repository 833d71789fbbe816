"""`ace-eval benchmark check tau-bench-airline` and `ace-eval data fetch tau-bench`, offline."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from ace_eval.benchmarks.tau_bench.convert import TasksSourceError, tasks_from_python, tasks_json
from ace_eval.benchmarks.tau_bench.data import DATA_FILES, DataFolderError, load_airline_data
from ace_eval.benchmarks.tau_bench.fetch import AIRLINE_FILES, FetchError, fetch_airline_data
from ace_eval.commands.benchmark import benchmark
from ace_eval.commands.data import data as data_group

TRAJECTORIES = "trajectories-gpt-4o-tasks-0-29.json"


def _link_folder(src: Path, dest: Path, names: tuple[str, ...] = DATA_FILES) -> Path:
    dest.mkdir(parents=True, exist_ok=True)
    for name in names:
        (dest / name).symlink_to(src / name)
    return dest


def test_check_prints_one_gold_hash_per_task(airline_data: Path) -> None:
    result = CliRunner().invoke(benchmark, ["check", "tau-bench-airline", "--data-dir", str(airline_data)])
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert len(lines) == 50
    assert all(re.fullmatch(rf"{i} [0-9a-f]{{64}}", line) for i, line in enumerate(lines))
    assert "users.json holds the later upstream revision (address.state)" in result.stderr


def test_check_with_trajectories_prints_recorded_and_computed_rewards(airline_data: Path) -> None:
    args = ["check", "tau-bench-airline", "--data-dir", str(airline_data), "--trajectories"]
    result = CliRunner().invoke(benchmark, [*args, str(airline_data / TRAJECTORIES), "--no-progress"])
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert len(lines) == 120
    assert lines[0] == "0 0 0.0 0.0"
    assert all(line.split()[2] == line.split()[3] for line in lines)
    assert "120/120 recorded rewards reproduced" in result.stderr
    # the shared users.json is the later address.state revision: the command re-executes on address.province
    assert (
        "recorded gold hashes equal for 27/27 tasks; 810/810 tool results identical to the recorded ones"
        in result.stderr
    )
    assert "re-executed on users.json with address.province" in result.stderr
    assert "On the folder's revision: recorded gold hashes equal for 0/27 tasks; 732/810" in result.stderr


def test_check_exits_non_zero_when_a_recorded_reward_is_not_reproduced(airline_data: Path, tmp_path: Path) -> None:
    runs = json.loads((airline_data / TRAJECTORIES).read_text())[:2]
    runs[1]["reward"] = 1.0 - runs[1]["reward"]
    tampered = tmp_path / "runs.json"
    tampered.write_text(json.dumps(runs))
    args = ["check", "tau-bench-airline", "--data-dir", str(airline_data), "--trajectories", str(tampered)]
    result = CliRunner().invoke(benchmark, args)
    assert result.exit_code == 1
    assert result.stdout.splitlines()[1] == f"{runs[1]['task_id']} {runs[1]['trial']} {runs[1]['reward']} 0.0"
    assert "1 run(s) scored differently" in result.stderr


def test_a_missing_data_file_is_named_with_the_fetch_command(airline_data: Path, tmp_path: Path) -> None:
    folder = _link_folder(airline_data, tmp_path / "airline", tuple(n for n in DATA_FILES if n != "users.json"))
    with pytest.raises(DataFolderError, match=r"users\.json is missing.*ace-eval data fetch tau-bench"):
        load_airline_data(folder)
    result = CliRunner().invoke(benchmark, ["check", "tau-bench-airline", "--data-dir", str(folder)])
    assert result.exit_code == 2
    assert "users.json is missing" in result.stderr


def test_check_without_a_data_folder_says_how_to_get_one() -> None:
    result = CliRunner().invoke(benchmark, ["check", "tau-bench-airline"], env={"ACE_TAU_BENCH_DATA": None})
    assert result.exit_code == 2
    assert "--data-dir" in result.stderr and "ace-eval data fetch tau-bench" in result.stderr


def _as_python_module(tasks: list[dict[str, Any]]) -> str:
    """Render tasks the way upstream writes them: `TASKS = [Task(...), ...]` with `Action(...)` calls."""
    out = ["from tau_bench.types import Action, Task", "", "TASKS = ["]
    for task in tasks:
        fields = []
        for key, value in task.items():
            if key == "actions":
                actions = ", ".join(f"Action(name={a['name']!r}, kwargs={a['kwargs']!r})" for a in value)
                fields.append(f"actions=[{actions}]")
            else:
                fields.append(f"{key}={value!r}")
        out.append(f"    Task({', '.join(fields)}),")
    return "\n".join([*out, "]", ""])


def _fake_upstream(airline_data: Path, calls: list[str]) -> Callable[[str], bytes]:
    tasks = json.loads((airline_data / "tasks_test.json").read_text())
    module = _as_python_module(tasks).encode()

    def download(url: str) -> bytes:
        calls.append(url)
        name = url.rsplit("/", 1)[1]
        return module if name == "tasks_test.py" else (airline_data / name).read_bytes()

    return download


def test_fetch_writes_every_file_with_its_pinned_checksum_and_keeps_good_ones(
    airline_data: Path, tmp_path: Path
) -> None:
    calls: list[str] = []
    download = _fake_upstream(airline_data, calls)
    paths = fetch_airline_data(tmp_path / "d", download=download)
    assert [p.name for p in paths] == [f.name for f in AIRLINE_FILES]
    for path in paths:
        assert path.read_bytes() == (airline_data / path.name).read_bytes()
    assert (
        calls[-1]
        == "https://raw.githubusercontent.com/sierra-research/tau-bench/main/tau_bench/envs/airline/tasks_test.py"
    )
    fetch_airline_data(tmp_path / "d", download=download)
    assert len(calls) == len(AIRLINE_FILES)  # nothing downloaded twice
    assert load_airline_data(tmp_path / "d").tasks == load_airline_data(airline_data).tasks


def test_fetch_refuses_a_file_whose_checksum_changed_and_writes_nothing_for_it(tmp_path: Path) -> None:
    def download(url: str) -> bytes:
        return b"{}"

    with pytest.raises(FetchError, match=r"flights\.json .* has sha256 .*expected 444d7565"):
        fetch_airline_data(tmp_path, download=download)
    assert not (tmp_path / "flights.json").exists()
    assert list(tmp_path.iterdir()) == []  # no temporary file left either


def test_fetch_reports_a_failed_download_with_the_url(tmp_path: Path) -> None:
    def download(url: str) -> bytes:
        raise OSError("network is unreachable")

    with pytest.raises(FetchError, match=r"could not download flights\.json from https://raw\.githubusercontent"):
        fetch_airline_data(tmp_path, download=download)


def test_data_fetch_command(airline_data: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []
    monkeypatch.setattr("ace_eval.benchmarks.tau_bench.fetch.url_download", _fake_upstream(airline_data, calls))
    dest = tmp_path / "airline"
    result = CliRunner().invoke(data_group, ["fetch", "tau-bench", "--dest", str(dest)])
    assert result.exit_code == 0, result.output
    assert result.stdout.strip() == str(dest)
    assert sorted(p.name for p in dest.iterdir()) == sorted(f.name for f in AIRLINE_FILES)


def test_tasks_module_is_read_as_data_never_executed(tmp_path: Path) -> None:
    source = (
        "from tau_bench.types import Action, Task\n"
        "TASKS = [Task(annotator='0', user_id='u', instruction='i',\n"
        "              actions=[Action(name='think', kwargs={'thought': 't', 'n': -1})], outputs=['5'])]\n"
    )
    assert tasks_from_python(source) == [
        {
            "annotator": "0",
            "user_id": "u",
            "instruction": "i",
            "actions": [{"name": "think", "kwargs": {"thought": "t", "n": -1}}],
            "outputs": ["5"],
        }
    ]
    assert tasks_json(source).startswith(b'[\n {\n  "annotator": "0"')
    marker = tmp_path / "pwned"
    evil = f"TASKS = [Task(user_id=__import__('pathlib').Path({str(marker)!r}).touch())]"
    with pytest.raises(TasksSourceError, match=r"only Task\(...\) and Action\(...\)"):
        tasks_from_python(evil)
    assert not marker.exists()
    with pytest.raises(TasksSourceError, match=r"not a literal: os\.environ"):
        tasks_from_python("TASKS = [Task(user_id=os.environ)]")
    with pytest.raises(TasksSourceError, match="no `TASKS"):
        tasks_from_python("OTHER = []")


def test_pinned_checksums_are_those_of_the_reference_folder(airline_data: Path) -> None:
    for file in AIRLINE_FILES:
        assert hashlib.sha256((airline_data / file.name).read_bytes()).hexdigest() == file.sha256
