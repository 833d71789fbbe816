"""A kill at every write of `publish` and `rollback` leaves `current` at the old or the new version, never neither,
and no half-written version visible; two publishers at once get distinct numbers."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from subprocess import PIPE

import pytest
from _kill_worker import WORKER, worker
from _store_support import skillbook_file, store_with

from ace_eval.store import SkillbookStore


def write_count(tmp_path: Path, *args: object) -> int:
    """How many writes the operation makes when nothing kills it (run on a copy of the store)."""
    count = tmp_path / "count.txt"
    done = worker(*args, ACE_TEST_COUNT=str(count))
    assert done.returncode == 0, done.stderr
    return int(count.read_text().split()[0])


def after_kill(root: Path, before: tuple[int, bytes]) -> tuple[int, bytes]:
    """The store's state after a kill: verified, `current` readable; returns (current, its skillbook bytes)."""
    store = SkillbookStore(root)
    assert store.verify() == []
    assert [p.name for p in (root / "versions").iterdir() if not p.name.startswith(".")] == [
        f"{n:04d}" for n in store.numbers()
    ]
    current = store.current_number()
    assert current is not None
    return current, store.skillbook_path().read_bytes()


def test_a_kill_at_every_write_of_publish_leaves_the_old_or_the_new_current(tmp_path: Path) -> None:
    source = skillbook_file(tmp_path / "new" / "skillbook.json", "The new one", vectors=True)
    probe = store_with(tmp_path / "probe", tmp_path, 1)
    writes = write_count(tmp_path, "publish", probe.root, source)
    assert writes >= 10  # mkdir, 3 files x (fsync, chmod), folder fsync, rename, fsyncs, the pointer's rename
    seen: set[int] = set()
    for kill_at in range(1, writes + 1):
        root = tmp_path / f"st{kill_at}"
        store = store_with(root, tmp_path / f"src{kill_at}", 1)
        old = (1, store.skillbook_path().read_bytes())
        killed = worker("publish", root, source, ACE_TEST_KILL_AT=str(kill_at))
        assert killed.returncode == -signal.SIGKILL, (kill_at, killed.stderr)
        current, data = after_kill(root, old)
        assert (current, data) == old or (current == 2 and data == source.read_bytes()), kill_at
        seen.add(current)
        again = SkillbookStore(root).publish(source, produced_by=store.version(1).produced_by, ungated_reason="r")
        assert again.number in (2, 3) and SkillbookStore(root).verify() == []
        assert not [p for p in (root / "versions").iterdir() if p.name.startswith(".")]  # temporaries cleaned
    assert seen == {1, 2}  # some kills came before the pointer moved, some after


def test_a_kill_at_every_write_of_rollback_leaves_the_old_or_the_new_current(tmp_path: Path) -> None:
    writes = write_count(tmp_path, "rollback", store_with(tmp_path / "probe", tmp_path, 2).root)
    assert writes >= 3  # the pointer's fsync, its rename, the folder's fsync
    for kill_at in range(1, writes + 1):
        store = store_with(tmp_path / f"st{kill_at}", tmp_path / f"src{kill_at}", 2)
        versions = {n: store.skillbook_path(n).read_bytes() for n in (1, 2)}
        killed = worker("rollback", store.root, ACE_TEST_KILL_AT=str(kill_at))
        assert killed.returncode == -signal.SIGKILL, (kill_at, killed.stderr)
        current, data = after_kill(store.root, (2, versions[2]))
        assert data == versions[current]
        assert sorted(store.numbers()) == [1, 2]


@pytest.mark.parametrize("publishers", [2, 3])
def test_concurrent_publishers_get_distinct_numbers_and_every_version_verifies(tmp_path: Path, publishers: int) -> None:
    SkillbookStore.create(tmp_path / "st")
    go = tmp_path / "go"
    sources = [skillbook_file(tmp_path / f"s{n}.json", f"Publisher {n}") for n in range(publishers)]
    command = [sys.executable, str(WORKER), "publish", str(tmp_path / "st")]
    env = {**os.environ, "ACE_TEST_START": str(go)}
    procs = [
        subprocess.Popen([*command, str(s), f"publisher {n}"], stdout=PIPE, stderr=PIPE, text=True, env=env)
        for n, s in enumerate(sources)
    ]
    deadline = time.monotonic() + 120
    while len(list(tmp_path.glob("go.ready.*"))) < publishers and time.monotonic() < deadline:
        time.sleep(0.01)  # every worker has imported the store and waits for the signal
    go.write_text("go")
    numbers = []
    for proc in procs:
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
        numbers.append(int(out.split()[-1]))
    assert sorted(numbers) == list(range(1, publishers + 1))
    store = SkillbookStore(tmp_path / "st")
    assert store.verify() == [] and store.current_number() == publishers
    assert [v.parent for v in store.versions()] == [None, *range(1, publishers)]  # each saw the one before
    assert sorted(v.ungated_reason or "" for v in store.versions()) == [f"publisher {n}" for n in range(publishers)]
