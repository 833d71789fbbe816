"""`ace-eval review` against damaged queues, blank reasons, personal data in names, and a kill mid-accept."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from _review_support import WIDENED_ISSUE, demo_collection, published_skillbook, queue_of, review_run
from click.testing import CliRunner, Result

from ace import Skillbook
from ace_eval.cli import main


@pytest.fixture(scope="module")
def reviewed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One review run of the scenario: its published skillbook and queue (tests decide on copies of `prod/`)."""
    tmp = tmp_path_factory.mktemp("reviewed")
    published = published_skillbook(tmp / "prod" / "skillbook.json")
    review_run(demo_collection(tmp), published, tmp / "out")
    return published.parent


@pytest.fixture
def published(reviewed: Path, tmp_path: Path) -> Path:
    """A copy of the reviewed skillbook and its queue (the collection they cite stays where the run read it)."""
    shutil.copytree(reviewed, tmp_path / "prod")
    return tmp_path / "prod" / "skillbook.json"


def review(*args: object) -> Result:
    return CliRunner().invoke(main, ["review", *[str(a) for a in args]])


def tree(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.mark.parametrize(
    "args",
    [("list",), ("show", "c00001"), ("accept", "c00001"), ("reject", "c00001", "--reason", "no")],
    ids=lambda a: a[0],
)
def test_a_queue_with_a_duplicated_candidate_id_is_refused_on_load(published: Path, args: tuple[str, ...]) -> None:
    queue = published.with_name("skillbook.review.json")
    data = queue_of(published)
    data["candidates"][1]["id"] = data["candidates"][0]["id"]
    queue.write_text(json.dumps(data), encoding="utf-8")
    before = tree(published.parent)
    result = review(args[0], published, *args[1:])
    assert result.exit_code == 2, result.output
    assert (
        str(queue) in result.output and "candidate id 'c00001' of candidates[1] repeats candidates[0]" in result.output
    )
    assert "Traceback" not in result.output and tree(published.parent) == before


@pytest.mark.parametrize(
    "args",
    [
        ("reject", "c00001", "--reason", " "),
        ("accept", "c00001", "--reason", "\t"),
        ("accept-all", "--reason", "  "),
        ("reject", "c00001", "--reviewer", " ", "--reason", "duplicate"),
    ],
)
def test_a_blank_reason_or_reviewer_is_refused_and_nothing_is_written(published: Path, args: tuple[str, ...]) -> None:
    before = tree(published.parent)
    result = review(args[0], published, *args[1:])
    assert result.exit_code == 2, result.output
    assert "is blank" in result.output and tree(published.parent) == before


def test_reviewer_names_and_reasons_pass_the_redaction_sink(published: Path) -> None:
    email = "ana.lopez@example.com"
    accepted = review("accept", published, "c00002", "--reviewer", email, "--reason", f"ok, ask {email} or 536-22-8145")
    rejected = review("reject", published, "c00003", "--reviewer", email, "--reason", f"call {email}")
    assert accepted.exit_code == 0 and rejected.exit_code == 0, accepted.output + rejected.output
    for name in ("skillbook.json", "skillbook.review.json"):
        text = published.with_name(name).read_text(encoding="utf-8")
        assert email not in text and "ana.lopez" not in text, name
    decision = {c["id"]: c["decision"] for c in queue_of(published)["candidates"]}
    assert decision["c00002"]["reviewer"].startswith("[") and decision["c00003"]["reviewer"].startswith("[")


class Killed(BaseException):
    """Stands for a kill: not an `Exception`, so nothing on the way catches it."""


def state(published: Path) -> tuple[str, bool]:
    """The candidate c00002's status in the queue, and whether its edit is in the skillbook."""
    status = {c["id"]: c["decision"] and c["decision"]["status"] for c in queue_of(published)["candidates"]}
    book = Skillbook.load_from_file(published)
    return str(status["c00002"] or "pending"), book.require_skill("context-00001").issue == WIDENED_ISSUE


@pytest.mark.parametrize("kill_at", [1, 2, 3])
def test_a_kill_between_the_writes_of_an_accept_leaves_both_files_consistent(
    published: Path, monkeypatch: pytest.MonkeyPatch, kill_at: int
) -> None:
    """The skillbook and the queue change together: after a kill at any rename the next reader sees the candidate
    accepted and applied, or pending and not applied; accepting again then finishes the job exactly once."""
    real_replace = os.replace
    calls: list[Any] = []

    def replace(src: Any, dst: Any) -> None:
        calls.append(dst)
        if len(calls) == kill_at:
            raise Killed
        real_replace(src, dst)

    monkeypatch.setattr(os, "replace", replace)
    with pytest.raises(Killed):
        review("accept", published, "c00002", "--reviewer", "ana")
    monkeypatch.setattr(os, "replace", real_replace)

    listed = review("list", published, "--status", "all")  # the next reader finishes an interrupted commit
    assert listed.exit_code == 0, listed.output
    status, applied = state(published)
    assert (status, applied) in {("pending", False), ("accepted", True)}, (kill_at, calls)
    again = review("accept", published, "c00002", "--reviewer", "ana")
    assert again.exit_code == (0 if status == "pending" else 2), again.output
    assert state(published) == ("accepted", True)
    ops = [op for op in Skillbook.load_from_file(published).operations if op.skill_id == "context-00001"]
    assert sum(op.type == "UPDATE" for op in ops) == 1  # applied once
    assert not [p for p in published.parent.iterdir() if p.name.endswith((".commit", ".tmp"))]


@pytest.mark.parametrize("kill_at", [1, 2, 3])
def test_a_real_sigkill_between_the_writes_of_an_accept_leaves_both_files_consistent(
    published: Path, kill_at: int
) -> None:
    """The same, with the process killed by SIGKILL at its `kill_at`-th rename (no handler, no `finally` runs)."""
    code = f"""
import os, signal
real, calls = os.replace, []
def replace(src, dst):
    calls.append(dst)
    if len(calls) == {kill_at}:
        os.kill(os.getpid(), signal.SIGKILL)
    real(src, dst)
os.replace = replace
from ace_eval.cli import main
main(["review", "accept", {str(published)!r}, "c00002", "--reviewer", "ana"])
"""
    killed = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False)
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    assert review("list", published, "--status", "all").exit_code == 0
    status, applied = state(published)
    assert (status, applied) == (("accepted", True) if kill_at > 1 else ("pending", False))
    assert review("accept", published, "c00002", "--reviewer", "ana").exit_code == (2 if kill_at > 1 else 0)
    assert state(published) == ("accepted", True)
    assert not [p for p in published.parent.iterdir() if p.name.endswith((".commit", ".tmp"))]
