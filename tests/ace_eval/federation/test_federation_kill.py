"""A kill at every write of push, promote and pull leaves the hub (and the project) as before or as after, never half
written; the operation run again completes. Two concurrent pushes both land."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

from _fed_support import CONFIRM, OWN, RATE_LIMIT, RATE_LIMIT_PARAPHRASE, project_book
from _kill_worker import WORKER, worker

from ace.core.skillbook import Skillbook
from ace.embeddings.test import TestEmbedder
from ace_eval.federation import Hub, promote, push, read_state


def writes(tmp: Path, *args: object) -> int:
    count = tmp / "count.txt"
    done = worker(*args, ACE_TEST_COUNT=str(count))
    assert done.returncode == 0, done.stderr
    return int(count.read_text().split()[0])


def three_projects(tmp: Path, promoted: bool = False) -> tuple[Hub, dict[str, Path]]:
    hub, e = Hub(tmp / "hub"), TestEmbedder()
    books = {
        "airline": project_book(tmp / "airline.json", "airline", [RATE_LIMIT, CONFIRM]),
        "retail": project_book(tmp / "retail.json", "retail", [RATE_LIMIT_PARAPHRASE]),
        "telecom": project_book(tmp / "telecom.json", "telecom", [RATE_LIMIT]),
    }
    for name in ("airline", "retail"):
        push(hub, books[name], project=name, embedder=e)
    if promoted:
        push(hub, books["telecom"], project="telecom", embedder=e)
        promote(hub, None, by="ana", reason="r", embedder=e)
    return hub, books


def state(hub: Hub) -> str:
    """Everything a reader sees: the contributions, the global skills and the clusters (times left out)."""
    s = read_state(hub, TestEmbedder())
    assert hub.global_store().verify() == []
    contributions = {p: [e["content_hash"] for e in d["skills"]] for p, d in s.contributions.items()}
    return json.dumps([contributions, sorted(s.globals), s.to_json()], sort_keys=True)


def test_a_kill_at_every_write_of_push_leaves_the_hub_before_or_after(tmp_path: Path) -> None:
    probe, books = three_projects(tmp_path / "probe")
    n = writes(tmp_path, "push", probe.root, books["telecom"], "telecom")
    before, after = None, state(probe)
    for kill_at in range(1, n + 1):
        hub, books = three_projects(tmp_path / f"k{kill_at}")
        before = state(hub)
        killed = worker("push", hub.root, books["telecom"], "telecom", ACE_TEST_KILL_AT=str(kill_at))
        assert killed.returncode == -signal.SIGKILL, killed.stderr
        assert state(hub) in (before, after), kill_at
        assert worker("push", hub.root, books["telecom"], "telecom").returncode == 0
        assert state(hub) == after
    assert before != after


def test_a_kill_at_every_write_of_promote_leaves_the_old_or_the_new_global_version(tmp_path: Path) -> None:
    def ready(tmp: Path) -> Hub:
        hub, books = three_projects(tmp)
        push(hub, books["telecom"], project="telecom", embedder=TestEmbedder())
        return hub

    probe = ready(tmp_path / "probe")
    n = writes(tmp_path, "promote", probe.root)
    after = state(probe)
    for kill_at in range(1, n + 1):
        hub = ready(tmp_path / f"k{kill_at}")
        before = state(hub)
        killed = worker("promote", hub.root, ACE_TEST_KILL_AT=str(kill_at))
        assert killed.returncode == -signal.SIGKILL, killed.stderr
        assert state(hub) in (before, after), kill_at
        assert worker("promote", hub.root).returncode == 0
        assert state(hub) == after and len(hub.global_store().load().skills()) == 1  # promoted once, not twice


def test_a_kill_at_every_write_of_pull_leaves_the_project_before_or_after(tmp_path: Path) -> None:
    hub, _ = three_projects(tmp_path / "hub-side", promoted=True)
    target = project_book(tmp_path / "shop" / "skillbook.json", "shop", [OWN])
    probe = tmp_path / "probe" / "skillbook.json"
    probe.parent.mkdir()
    shutil.copy(target, probe)
    n = writes(tmp_path, "pull", hub.root, probe)
    for kill_at in range(1, n + 1):
        copy = tmp_path / f"k{kill_at}" / "skillbook.json"
        copy.parent.mkdir()
        shutil.copy(target, copy)
        killed = worker("pull", hub.root, copy, ACE_TEST_KILL_AT=str(kill_at))
        assert killed.returncode == -signal.SIGKILL, killed.stderr
        assert len(Skillbook.load_from_file(copy).skills()) in (1, 2), kill_at
        assert worker("pull", hub.root, copy).returncode == 0
        assert len(Skillbook.load_from_file(copy).skills()) == 2


def test_two_concurrent_pushes_both_land(tmp_path: Path) -> None:
    hub, books = three_projects(tmp_path)
    go = tmp_path / "go"
    procs = [
        subprocess.Popen(
            [sys.executable, str(WORKER), "push", str(hub.root), str(books[p.rstrip("2")]), p],
            env={**os.environ, "ACE_TEST_START": str(go)},
            stderr=subprocess.PIPE,
            text=True,
        )
        for p in ("telecom", "airline2")
    ]
    go.write_text("go")
    for p in procs:
        assert p.wait(timeout=120) == 0, p.stderr.read() if p.stderr else ""
    assert sorted(hub.contributions()) == ["airline", "airline2", "retail", "telecom"]
    assert len([line for line in hub.journal_lines() if line["event"] == "push"]) == 4
