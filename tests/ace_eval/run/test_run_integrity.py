"""Run folders that cannot be corrupted: one process per folder, no resume or checkpoint over a learned skillbook
without its journal, each sample journaled once (and `verify` checks it), bad collections refused up front."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path

import pytest
from _ace_scripts import make_trace, scripted_roles
from _e2e_support import Stop, scripted_injections, stop_after
from click.testing import CliRunner

from ace import Skillbook
from ace_eval.cli import main
from ace_eval.collection import CollectionError, Trace, read_collection, write_collection
from ace_eval.e2e import runner
from ace_eval.e2e.config import E2ESettings
from ace_eval.e2e.training import CheckpointError, Trainer, TrainingConfig
from ace_eval.run.folder import UnresumableFolderError
from ace_eval.run.lock import FolderBusyError, folder_lock

TRACES = 30
WORKER = Path(__file__).parents[2] / "_resume_worker.py"
_WAIT_S = 120.0


def small_collection(directory: Path, n: int = TRACES) -> Path:
    topics = ("baggage", "refund", "upgrade", "seats", "pets")
    traces = [Trace.model_validate(make_trace(i, topics[i % len(topics)])) for i in range(n)]
    write_collection(directory, traces, source_system="demo-test")
    return directory


def interrupted_folder(tmp_path: Path, *, after: int = 5) -> Path:
    """A run folder whose run stopped after `after` committed samples."""
    collection = small_collection(tmp_path / "collection")
    settings = E2ESettings(traces=collection, no_benchmark=True, output_dir=tmp_path / "out")
    with pytest.raises(Stop):
        runner.run_e2e(settings, injections=scripted_injections(on_sample=stop_after(after)))
    [folder] = list((tmp_path / "out").iterdir())
    return folder


def journal(folder: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in (folder / "samples.jsonl").read_text(encoding="utf-8").splitlines()]


def wait_for(path: Path, process: subprocess.Popen[str]) -> None:
    deadline = time.monotonic() + _WAIT_S
    while not path.exists():
        assert process.poll() is None, process.communicate()
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.05)


# ------------------------------------------------------------------------------------------- the lock
def test_two_concurrent_resumes_the_second_is_refused_and_nothing_is_recorded_twice(tmp_path: Path) -> None:
    folder = interrupted_folder(tmp_path)
    hold = tmp_path / "hold"
    hold.mkdir()
    env = {**os.environ, "LOGFIRE_TOKEN": ""}
    first = subprocess.Popen(
        [sys.executable, str(WORKER), str(folder), str(hold)],
        env=env,
        text=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        wait_for(hold / "started", first)  # the first resume is in the middle of its run, holding the lock
        second = subprocess.run(
            [sys.executable, str(WORKER), str(folder)], env=env, text=True, capture_output=True, timeout=_WAIT_S
        )
    finally:
        (hold / "release").touch()
        _, err = first.communicate(timeout=_WAIT_S)
    assert first.returncode == 0, err
    assert second.returncode == 2, second.stderr
    assert f"is in use by process {first.pid}" in second.stderr and "record samples twice" in second.stderr

    lines = journal(folder)
    keys = [(line["trace_uid"], line["epoch"]) for line in lines]
    assert len(keys) == TRACES and len(set(keys)) == TRACES
    assert sorted(int(str(line["index"])) for line in lines) == list(range(TRACES))
    book = Skillbook.load_from_file(folder / "skillbook.json")
    recorded = Counter({str(line["trace_uid"]): len(line["operations"]) for line in lines})  # type: ignore[arg-type]
    assert Counter(o.trace_uid for s in book.skills(include_inactive=True) for o in s.occurrences) == recorded
    record = json.loads((folder / "run.json").read_text(encoding="utf-8"))
    assert [s["status"] for s in record["segments"]] == ["failed", "completed"]  # the refused resume wrote nothing
    assert CliRunner().invoke(main, ["verify", str(folder)]).exit_code == 0


def test_the_lock_names_its_holder_and_is_refused_to_another_thread(tmp_path: Path) -> None:
    refused: list[BaseException] = []

    def other_thread() -> None:
        try:
            with folder_lock(tmp_path):
                pass
        except FolderBusyError as e:
            refused.append(e)

    with folder_lock(tmp_path):
        with folder_lock(tmp_path):  # re-entrant in the holding thread (the runner around its trainer)
            pass
        thread = threading.Thread(target=other_thread)
        thread.start()
        thread.join()
    [error] = refused
    assert f"in use by process {os.getpid()}" in str(error) and "kill" in str(error)
    with folder_lock(tmp_path):  # released: free again
        pass


def test_a_killed_holder_releases_the_lock(tmp_path: Path) -> None:
    code = (
        "import sys, time\nfrom pathlib import Path\nfrom ace_eval.run.lock import folder_lock\n"
        "with folder_lock(Path(sys.argv[1])):\n    print('locked', flush=True)\n    time.sleep(600)\n"
    )
    holder = subprocess.Popen([sys.executable, "-c", code, str(tmp_path)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        with pytest.raises(FolderBusyError, match=f"process {holder.pid}"), folder_lock(tmp_path):
            pass
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait()
    with folder_lock(tmp_path):  # the OS dropped the lock with its holder
        pass


def test_a_trainer_is_refused_a_checkpoint_folder_in_use(tmp_path: Path) -> None:
    reflector, manager = scripted_roles()
    trainer = Trainer(reflector=reflector, skill_manager=manager, config=TrainingConfig(checkpoint_dir=tmp_path))
    done = threading.Event()
    errors: list[BaseException] = []

    def hold() -> None:
        with folder_lock(tmp_path):
            done.wait()

    thread = threading.Thread(target=hold)
    thread.start()
    try:
        while not (tmp_path / ".lock").exists() or not (tmp_path / ".lock").read_text():
            time.sleep(0.01)
        try:
            trainer.run([make_trace(0, "baggage")], Skillbook())
        except FolderBusyError as e:
            errors.append(e)
    finally:
        done.set()
        thread.join()
    assert errors and not (tmp_path / "samples.jsonl").exists() and not (tmp_path / "skillbook.json").exists()


# ------------------------------------------------------------------------- a skillbook without its journal
def test_resume_refuses_a_finished_run_whose_journal_is_gone(tmp_path: Path) -> None:
    collection = small_collection(tmp_path / "collection", n=4)
    settings = E2ESettings(traces=collection, no_benchmark=True, output_dir=tmp_path / "out")
    folder = runner.run_e2e(settings, injections=scripted_injections()).folder.path
    (folder / "samples.jsonl").unlink()
    before = {p.name: p.read_bytes() for p in folder.iterdir() if p.is_file()}

    with pytest.raises(UnresumableFolderError, match=r"Restore samples\.jsonl"):
        runner.resume_e2e(folder, injections=scripted_injections())
    result = CliRunner().invoke(main, ["e2e", "--resume", str(folder)])
    assert result.exit_code == 2, result.output
    assert "no samples.jsonl" in result.output and "start a new run" in result.output
    after = {p.name: p.read_bytes() for p in folder.iterdir() if p.is_file() and p.name != ".lock"}
    assert after == {k: v for k, v in before.items() if k != ".lock"}  # the learned skillbook and run.json untouched


def test_a_checkpoint_never_overwrites_an_existing_skillbook(tmp_path: Path) -> None:
    book = Skillbook()
    book.add_skill("context", "Learned elsewhere.", ["airline"], "Keep it.")
    book.save_to_file(tmp_path / "skillbook.json")
    saved = (tmp_path / "skillbook.json").read_bytes()
    reflector, manager = scripted_roles()
    trainer = Trainer(reflector=reflector, skill_manager=manager, config=TrainingConfig(checkpoint_dir=tmp_path))
    result = trainer.run([make_trace(0, "baggage")], Skillbook())  # its snapshot has a file of its own
    assert (tmp_path / "skillbook.json").read_bytes() == saved
    assert Skillbook.load_from_file(tmp_path / "skillbook.snapshot.json").to_dict() == result.skillbook.to_dict()

    (tmp_path / "samples.jsonl").unlink()  # a snapshot without its journal is what a fresh start would overwrite
    snapshot = (tmp_path / "skillbook.snapshot.json").read_bytes()
    with pytest.raises(CheckpointError, match=r"journal is gone.*would overwrite its snapshot.*load_from_file"):
        trainer.run([make_trace(0, "baggage")], Skillbook())
    assert (tmp_path / "skillbook.snapshot.json").read_bytes() == snapshot and not (tmp_path / "samples.jsonl").exists()


# ---------------------------------------------------------------------------------------------- verify
def test_verify_fails_a_journal_with_a_sample_recorded_twice(tmp_path: Path) -> None:
    collection = small_collection(tmp_path / "collection", n=4)
    settings = E2ESettings(traces=collection, no_benchmark=True, output_dir=tmp_path / "out")
    folder = runner.run_e2e(settings, injections=scripted_injections()).folder.path
    cli = CliRunner()
    assert cli.invoke(main, ["verify", str(folder)]).exit_code == 0
    lines = (folder / "samples.jsonl").read_text(encoding="utf-8").splitlines()
    (folder / "samples.jsonl").write_text("\n".join([*lines, lines[1]]) + "\n", encoding="utf-8")
    result = cli.invoke(main, ["verify", str(folder)])
    assert result.exit_code == 1
    assert "FAIL  samples.jsonl records each sample once" in result.output
    assert "index 1 on lines 2, 5" in result.output and "epoch 0 on lines 2, 5" in result.output


def test_verify_fails_the_same_trace_and_epoch_under_two_indices(tmp_path: Path) -> None:
    collection = small_collection(tmp_path / "collection", n=3)
    settings = E2ESettings(traces=collection, no_benchmark=True, output_dir=tmp_path / "out")
    folder = runner.run_e2e(settings, injections=scripted_injections()).folder.path
    lines = [json.loads(line) for line in (folder / "samples.jsonl").read_text(encoding="utf-8").splitlines()]
    lines.append({**lines[0], "index": 7})
    (folder / "samples.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    result = CliRunner().invoke(main, ["verify", str(folder)])
    assert result.exit_code == 1 and f"{lines[0]['trace_uid']} epoch 0 on lines 1, 4" in result.output


# ------------------------------------------------------------------------------------------ collections
def test_an_empty_collection_is_refused_naming_the_file(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    write_collection(empty, [], source_system="demo-test")
    settings = E2ESettings(traces=empty, no_benchmark=True, output_dir=tmp_path / "out")
    with pytest.raises(CollectionError, match=r"empty/traces.jsonl: holds no traces"):
        runner.run_e2e(settings, injections=scripted_injections())
    assert not (tmp_path / "out").exists() or not list((tmp_path / "out").iterdir())  # nothing written


def test_a_deeply_nested_line_is_a_collection_error_naming_the_line(tmp_path: Path) -> None:
    folder = small_collection(tmp_path / "c", n=2)
    traces = folder / "traces.jsonl"
    lines = traces.read_text(encoding="utf-8").splitlines()
    deep = json.loads(lines[1])
    deep["metadata"] = {"x": "PLACEHOLDER"}
    lines[1] = json.dumps(deep).replace('"PLACEHOLDER"', "[" * 100_000 + "]" * 100_000)
    traces.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(
        CollectionError,
        match=r"traces.jsonl, line 2, column \d+: field .metadata.x\[0\].*: nested more than 100 levels deep",
    ):
        read_collection(folder)
    lines[1] = json.dumps(deep).replace('"PLACEHOLDER"', "[" * 200 + "]" * 200)  # parses, but too deep to process
    traces.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(CollectionError, match=r"line 2, column \d+: field .*: nested more than 100 levels deep"):
        read_collection(folder)


def test_the_trace_uid_error_shows_the_values() -> None:
    trace = make_trace(1, "baggage")
    with pytest.raises(ValueError, match=r"'other:t01' must be source_system:trace_id = 'demo-test:t01'") as info:
        Trace.model_validate({**trace, "trace_uid": "other:t01"})
    assert "{uid" not in str(info.value)


# -------------------------------------------------------------------------------------- stale temporaries
_KILLED_SAVE = """
import os, signal, sys
from ace import Skillbook
book = Skillbook()
book.add_skill("context", "Issue.", ["airline"], "Insight.")
os.fsync = lambda fd: os.kill(os.getpid(), signal.SIGKILL)  # die after writing a temporary, before the rename
book.save_to_file(sys.argv[1])
"""


def killed_save(path: Path) -> list[Path]:
    """Kill a process in the middle of saving a skillbook at `path`; the temporaries it left."""
    died = subprocess.run([sys.executable, "-c", _KILLED_SAVE, str(path)], check=False)
    assert died.returncode == -signal.SIGKILL
    return [p for p in path.parent.iterdir() if p.name.endswith(".tmp")]


def test_temporaries_of_a_killed_save_are_removed_at_the_next_save(tmp_path: Path) -> None:
    assert killed_save(tmp_path / "skillbook.json")
    book = Skillbook()
    book.add_skill("context", "Issue.", ["airline"], "Insight.")
    book.save_to_file(tmp_path / "skillbook.json")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["skillbook.json"]


def test_temporaries_of_a_killed_save_are_removed_at_resume(tmp_path: Path) -> None:
    folder = interrupted_folder(tmp_path, after=2)
    assert killed_save(folder / "skillbook.md")  # a file the resume saves only at the very end
    leftover = killed_save(folder / "skillbook.md")
    with pytest.raises(Stop):  # stopped before the export: only the resume itself can have removed them
        runner.resume_e2e(folder, injections=scripted_injections(on_sample=stop_after(1)))
    assert all(not p.exists() for p in leftover) and not [p for p in folder.iterdir() if p.name.endswith(".tmp")]
