"""`ace-eval gate run` end to end on a third party's benchmark (the toy `toy-support` plugin, a scripted agent, no
network): a candidate with a harmful skill (the agent escalates, and fails, every request of its topics) is held
and the store's `current` does not move; a helpful one is promoted and published with the gate's evidence."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from _plugins import install_toy_benchmark
from click.testing import CliRunner, Result

from ace.core.skillbook import Skillbook
from ace_eval.cli import main
from ace_eval.store import ProducedBy, SkillbookStore

ALL_TASKS = ",".join(
    [
        "refund-1",
        "cancel-1",
        "address-1",
        "password-1",
        "upgrade-1",
        "refund-2",
        "refund-3",
        "cancel-2",
        "address-2",
        "password-2",
        "upgrade-2",
        "refund-4",
    ]
)


def skillbook(path: Path, skills: list[tuple[list[str], str]]) -> Path:
    book = Skillbook()
    for keywords, insight in skills:
        book.add_skill("context", f"{keywords[0]} requests go wrong.", keywords, insight)
    book.save_to_file(path)
    return path


def gate_run(*args: str | Path) -> Result:
    base = [
        "gate",
        "run",
        "--benchmark",
        "toy-support",
        "--benchmark-option",
        "flakiness=0.2",
        "--tasks",
        ALL_TASKS,
        "--num-trials",
        "4",
    ]
    return CliRunner().invoke(main, [*base, *map(str, args)])


@pytest.fixture
def store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> SkillbookStore:
    install_toy_benchmark(tmp_path / "site", monkeypatch)
    monkeypatch.chdir(tmp_path)
    made = SkillbookStore.open_or_create(tmp_path / "store")
    made.publish(
        skillbook(tmp_path / "empty.json", []),
        produced_by=ProducedBy(kind="command"),
        ungated_reason="the first version: nothing to compare with",
    )
    return made


def test_a_harmful_skill_is_held_and_current_does_not_move(store: SkillbookStore, tmp_path: Path) -> None:
    harmful = skillbook(tmp_path / "harmful.json", [(["cancel", "password", "upgrade"], "Escalate these to a human.")])
    result = gate_run(
        "--candidate", harmful, "--publish", store.root, "--output-dir", tmp_path / "g1", "--json", tmp_path / "g1.json"
    )
    assert result.exit_code == 1, result.output
    verdict = json.loads((tmp_path / "g1.json").read_text())
    assert verdict["decision"] == "hold" and verdict["delta"]["ci95"][1] < 0
    worse = {t["task"] for t in verdict["per_task"] if t["delta"] < 0}
    assert worse == {"cancel-1", "cancel-2", "password-1", "password-2", "upgrade-1", "upgrade-2"}
    assert all(t["delta"] == 0 for t in verdict["per_task"] if t["task"] not in worse)  # same seeds: paired
    assert verdict["baseline"]["skillbook"] == f"{store.root} version 1"
    assert f"nothing published: {store.root} stays at version 1" in result.output
    assert store.current_number() == 1 and store.numbers() == [1]


def test_a_helpful_skill_is_promoted_and_published_with_the_evidence(store: SkillbookStore, tmp_path: Path) -> None:
    helpful = skillbook(
        tmp_path / "helpful.json",
        [(["refund"], "Ask for a photo of the damage first."), (["address"], "Confirm the postcode back.")],
    )
    result = gate_run("--candidate", helpful, "--publish", store.root, "--output-dir", tmp_path / "g2")
    assert result.exit_code == 0, result.output
    assert "decision: PROMOTE" in result.output and f"published {store.root} version 2" in result.output
    current = store.current()
    assert current is not None and current.number == 2 and current.parent == 1
    assert current.gate is not None and current.gate["decision"] == "promote"
    assert current.gate["test"] == {"method": "exact", "nonzero": 6, "patterns": 64, "seed": None}
    assert current.gate["p_value"] == pytest.approx(2 / 64) and current.produced_by.kind == "gate"
    assert current.skillbook_path.read_bytes() == helpful.read_bytes()
    assert json.loads((tmp_path / "g2" / "gate.json").read_text()) == current.gate
    # the store page's rollback puts the incumbent back; the gated version stays on record
    assert store.rollback().number == 1 and store.numbers() == [1, 2]


def test_gate_run_refuses_before_scoring_anything(store: SkillbookStore, tmp_path: Path) -> None:
    helpful = skillbook(tmp_path / "h.json", [(["refund"], "Ask for a photo.")])
    result = gate_run("--candidate", tmp_path / "missing.json", "--incumbent", "none", "--output-dir", tmp_path / "x")
    assert result.exit_code == 2 and "no such file or folder" in result.output
    result = gate_run("--candidate", helpful, "--output-dir", tmp_path / "x")
    assert result.exit_code == 2 and "pass --incumbent" in result.output
    result = gate_run(
        "--candidate", helpful, "--incumbent", "none", "--tasks", "refund-9", "--output-dir", tmp_path / "x"
    )
    assert result.exit_code == 2 and "neither a split nor a task id" in result.output
    assert not (tmp_path / "x").exists()
    first = gate_run("--candidate", helpful, "--incumbent", "none", "--output-dir", tmp_path / "y")
    assert first.exit_code in (0, 1), first.output
    other = gate_run("--candidate", helpful, "--incumbent", str(store.root), "--output-dir", tmp_path / "y")
    assert other.exit_code == 2 and "holds a gate run of another comparison" in other.output


def test_off_a_terminal_both_sides_show_their_progress(
    store: SkillbookStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A gate on a slow benchmark runs for minutes: in a log (no terminal) each side writes `done/total` lines."""
    monkeypatch.setattr("ace_eval.run.progress.HEARTBEAT_SECONDS", 0.0)
    helpful = skillbook(tmp_path / "helpful.json", [(["refund"], "Ask for a photo of the damage first.")])
    result = gate_run("--candidate", helpful, "--incumbent", "none", "--output-dir", tmp_path / "g3")
    assert result.exit_code in (0, 1), result.output
    episodes = 12 * 4
    for side in ("baseline", "candidate"):
        lines = [line for line in result.output.splitlines() if line.startswith(f"{side}: ")]
        assert len(lines) == episodes, result.output
        assert lines[0].startswith(f"{side}: 1/{episodes} done (") and "last: " in lines[0]
        assert lines[-1].startswith(f"{side}: {episodes}/{episodes} done")
