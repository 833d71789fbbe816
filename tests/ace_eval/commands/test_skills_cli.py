"""`ace-eval skills stats|quarantine|release` on a run whose default pipeline quarantined a skill (scripted reflector
and skill manager), and on a skillbook file: KPIs, a person's decisions in the audit log, refusals that write
nothing."""

from __future__ import annotations

import functools
import json
import threading
from pathlib import Path

import pytest
from _ace_scripts import make_trace, reflector_function, skill_manager_function
from click.testing import CliRunner, Result
from pydantic_ai.models.function import FunctionModel

from ace import Skillbook
from ace.embeddings.test import TestEmbedder
from ace_eval.cli import main
from ace_eval.collection import Trace, write_collection
from ace_eval.e2e import runner
from ace_eval.e2e.runner import RunInjections
from ace_eval.run.checkpoint import read_checkpoint
from ace_eval.run.lock import folder_lock

SID = "context-00001"


def _run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A replay run: the first trace adds a refunds skill, the next two fail with it in context (harmful)."""
    traces = [
        make_trace(1, "refunds"),
        make_trace(2, "refunds", skills_in_context=[SID]),
        make_trace(3, "refunds", skills_in_context=[SID]),
    ]
    collection = tmp_path / "collection"
    write_collection(collection, [Trace.model_validate(t) for t in traces], source_system="demo-test")
    injections = RunInjections(
        models={
            "reflector": FunctionModel(reflector_function(), model_name="scripted-reflector"),
            "skill_manager": FunctionModel(skill_manager_function(), model_name="scripted-sm"),
        },
        embedder=TestEmbedder(),
        show_progress=False,
    )
    monkeypatch.setattr("ace_eval.commands.e2e.run_e2e", functools.partial(runner.run_e2e, injections=injections))
    out = tmp_path / "out"
    result = CliRunner().invoke(
        main, ["e2e", "--traces", str(collection), "--no-benchmark", "--output-dir", str(out), "--no-preflight"]
    )
    assert result.exit_code == 0, result.output
    [folder] = [p for p in out.iterdir() if p.is_dir()]
    return folder


def _cli(*args: str) -> Result:
    return CliRunner().invoke(main, ["skills", *args])


def test_a_run_quarantines_by_default_and_a_person_releases_and_quarantines_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = _run(tmp_path, monkeypatch)
    record = json.loads((folder / "run.json").read_text())
    assert ("quarantine", "after_update") in [(s["name"], s["phase"]) for s in record["pipeline"]["steps"]]
    assert record["training"]["skillbook"]["quarantined"] == 1
    last = json.loads((folder / "samples.jsonl").read_text().splitlines()[-1])
    assert [op["type"] for op in last["operations"]][-1] == "QUARANTINE"
    assert "## Quarantined skills (1)" in (folder / "skillbook.md").read_text()

    journal = folder / "samples.jsonl"
    with journal.open("a", encoding="utf-8") as f:
        f.write('{"trace_uid": "a line a running trainer is still wri')
    written = journal.read_bytes()
    stats = _cli("stats", str(folder))
    assert stats.exit_code == 0, stats.output
    assert journal.read_bytes() == written  # a reader leaves the journal as it is (no lock, no truncation)
    row = next(line.split() for line in stats.output.splitlines() if line.startswith(SID))
    assert row == [SID, "quarantined", "2", "0", "2", "0", "2"]
    assert f"{SID} quarantined: harmful on 2 distinct traces (demo-test:t02, demo-test:t03)" in stats.output
    rows = json.loads(_cli("stats", str(folder), "--json").output)
    assert rows[0]["window_harmful_traces"] == ["demo-test:t02", "demo-test:t03"]

    why = "reviewed: the refunds policy changed, it is right now"
    released = _cli("release", str(folder), SID, "--reason", why)
    assert released.exit_code == 0, released.output
    book = Skillbook.load_from_file(folder / "skillbook.json")
    skill = book.require_skill(SID)
    assert skill.visible and SID in book.as_prompt()
    op = book.operations[-1]
    assert (op.type, op.trace_uid, op.reason) == ("RELEASE", "manual", why)
    assert skill.occurrences[-1].source_system == "ace-eval skills"
    assert "Quarantined skills" not in (folder / "skillbook.md").read_text()

    again = _cli("quarantine", str(folder), SID, "--reason", "a reviewer keeps it out")
    assert again.exit_code == 0, again.output
    book = Skillbook.load_from_file(folder / "skillbook.json")
    assert book.require_skill(SID).quarantine is not None
    assert [o.type for o in book.operations if o.skill_id == SID][-3:] == ["QUARANTINE", "RELEASE", "QUARANTINE"]
    assert "a reviewer keeps it out" in (folder / "skillbook.md").read_text()
    resumed_from = read_checkpoint(folder)  # what a --resume rebuilds holds the person's decisions too
    assert [o.type for o in resumed_from.operations if o.skill_id == SID][-3:] == [
        "QUARANTINE",
        "RELEASE",
        "QUARANTINE",
    ]
    verify = CliRunner().invoke(main, ["verify", str(folder)])
    assert verify.exit_code == 0, verify.output


def test_refusals_name_the_fix_and_write_nothing(tmp_path: Path) -> None:
    book = Skillbook()
    book.add_skill("context", "The agent refunds without checking the fare rules.", ["refunds"], "Check them.")
    path = tmp_path / "skillbook.json"
    book.save_to_file(path)
    before = path.read_bytes()
    unknown = _cli("release", str(path), "context-00002", "--reason", "x")
    assert unknown.exit_code == 2 and "Did you mean 'context-00001'" in unknown.output
    not_held = _cli("release", str(path), SID, "--reason", "x")
    assert not_held.exit_code == 2 and "not quarantined" in not_held.output
    blank = _cli("quarantine", str(path), SID, "--reason", " ")
    assert blank.exit_code == 2 and "--reason" in blank.output
    missing = _cli("quarantine", str(path), SID)
    assert missing.exit_code == 2 and "--reason" in missing.output
    (tmp_path / "empty").mkdir()
    nowhere = _cli("stats", str(tmp_path / "empty"))
    assert nowhere.exit_code == 2 and "neither a run folder (it has no run.json) nor a skillbook file" in nowhere.output
    assert path.read_bytes() == before

    done = _cli("quarantine", str(path), SID, "--reason", "misleading")
    assert done.exit_code == 0, done.output
    assert Skillbook.load_from_file(path).require_skill(SID).quarantine is not None
    twice = _cli("quarantine", str(path), SID, "--reason", "again")
    assert twice.exit_code == 2 and "already quarantined" in twice.output


def test_a_decision_on_a_run_folder_in_use_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = _run(tmp_path, monkeypatch)
    before = (folder / "skillbook.json").read_bytes()
    held, done = threading.Event(), threading.Event()

    def hold() -> None:
        with folder_lock(folder):  # stands for a running `e2e` (another thread is refused like another process)
            held.set()
            done.wait(10)

    holder = threading.Thread(target=hold)
    holder.start()
    try:
        assert held.wait(10)
        refused = _cli("release", str(folder), SID, "--reason", "reviewed")
        assert refused.exit_code == 2, refused.output
        assert _cli("stats", str(folder)).exit_code == 0  # reading needs no lock
    finally:
        done.set()
        holder.join()
    assert (folder / "skillbook.json").read_bytes() == before
