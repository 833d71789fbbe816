"""`ace-eval collection import | stats | repair`, run through click's CliRunner on the group."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from ace_eval.collection import TRACES_FILE, read_collection
from ace_eval.commands.collection import collection

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"
CHAT = [{"role": "user", "content": "Where is my order?"}, {"role": "assistant", "content": "It shipped."}]


def test_import_tau_bench_and_stats(airline_data: Path, tmp_path: Path) -> None:
    out = tmp_path / "col"
    runner = CliRunner()
    result = runner.invoke(
        collection,
        [
            "import",
            "--format",
            "tau-bench",
            str(airline_data / "trajectories-gpt-4o-tasks-0-29.json"),
            "--out",
            str(out),
            "--model",
            "agent=gpt-4o",
            "--model",
            "user=gpt-4o",
        ],
    )
    assert result.exit_code == 0, result.output
    assert "Imported 120 traces" in result.output and "36 successes of 120 with a reward, 30 tasks" in result.output
    manifest, _ = read_collection(out)
    assert manifest.models == {"agent": "gpt-4o", "user": "gpt-4o"}
    assert manifest.metadata["importer"] == "tau-bench" and "ace_eval_version" in manifest.metadata

    stats = runner.invoke(collection, ["stats", str(out)])
    assert stats.exit_code == 0, stats.output
    assert "traces            120 (120 with a reward)" in stats.output
    assert "successes         36 (30.0%, reward >= 1)" in stats.output
    assert "models            agent=gpt-4o, user=gpt-4o" in stats.output
    lines = stats.output.splitlines()
    header = lines.index(next(line for line in lines if line.split()[:2] == ["task", "runs"]))
    assert [line.split()[0] for line in lines[header + 1 :]] == [str(i) for i in range(30)]
    assert lines[header + 13].split() == ["12", "4", "4", "1.00"]

    again = runner.invoke(
        collection,
        ["import", "--format", "tau-bench", str(airline_data / "tasks_test.json"), "--out", str(out.parent / "b")],
    )
    assert again.exit_code == 2
    assert "tasks_test.json: field '[0].task_id': missing (required)" in again.output


def test_stats_json_on_the_demo_collection() -> None:
    result = CliRunner().invoke(collection, ["stats", str(EXAMPLES / "demo-collection"), "--json"])
    assert result.exit_code == 0, result.output
    payload = json.loads(result.output)
    stats = payload["stats"]
    assert payload["manifest"]["source_system"] == "demo-airline"
    assert (stats["traces"], stats["successes"], stats["success_rate"]) == (10, 5, 0.5)
    assert stats["tools"]["get_user_details"] == 10
    assert stats["tool_calls"]["min"] >= 2
    assert {t["task_id"]: t["traces"] for t in stats["tasks"]}["cancel-basic-economy"] == 2


def test_import_openai_jsonl_with_names(tmp_path: Path) -> None:
    src = tmp_path / "chats.jsonl"
    src.write_text(json.dumps(CHAT) + "\n" + json.dumps({"messages": CHAT, "reward": 0.0}) + "\n")
    out = tmp_path / "col"
    result = CliRunner().invoke(
        collection,
        [
            "import",
            "--format",
            "openai-jsonl",
            str(src),
            "--out",
            str(out),
            "--source-system",
            "support-bot",
            "--benchmark",
            "support",
        ],
    )
    assert result.exit_code == 0, result.output
    manifest, traces = read_collection(out)
    assert (manifest.source_system, manifest.benchmark, manifest.counts.with_reward) == ("support-bot", "support", 1)
    assert [t.trace_uid for t in traces] == ["support-bot:line-1", "support-bot:line-2"]
    again = CliRunner().invoke(collection, ["import", "--format", "openai-jsonl", str(src), "--out", str(out)])
    assert again.exit_code == 2 and f"{out} already holds a trace collection: choose another folder" in again.output
    assert "mode=" not in again.output
    assert read_collection(out)[0].source_system == "support-bot"  # untouched


def test_cli_errors_are_one_clear_line(tmp_path: Path) -> None:
    src = tmp_path / "chats.jsonl"
    src.write_text(json.dumps(CHAT) + "\n" + '{"messages": [\n')
    runner = CliRunner()
    bad = runner.invoke(collection, ["import", "--format", "openai-jsonl", str(src), "--out", str(tmp_path / "c")])
    assert bad.exit_code == 2
    assert "Error: " in bad.output and "chats.jsonl, line 2, column 15: not valid JSON" in bad.output
    assert not (tmp_path / "c").exists()  # nothing written when the source is refused
    model = runner.invoke(collection, ["import", "--format", "openai-jsonl", str(src), "--out", "x", "--model", "gpt"])
    assert model.exit_code == 2 and "write ROLE=MODEL" in model.output
    missing = runner.invoke(collection, ["stats", str(tmp_path / "nothing")])
    assert missing.exit_code == 2 and "not a trace collection" in missing.output


def test_repair_command(tmp_path: Path) -> None:
    src = tmp_path / "chats.jsonl"
    src.write_text(json.dumps(CHAT) + "\n")
    out = tmp_path / "col"
    runner = CliRunner()
    assert runner.invoke(collection, ["import", "--format", "openai-jsonl", str(src), "--out", str(out)]).exit_code == 0
    with (out / TRACES_FILE).open("ab") as f:
        f.write(b'{"trace_id": "line-2", "mess')
    stats = runner.invoke(collection, ["stats", str(out)])
    assert stats.exit_code == 2 and "line 2: truncated" in stats.output and "collection repair" in stats.output
    repaired = runner.invoke(collection, ["repair", str(out)])
    assert repaired.exit_code == 0, repaired.output
    assert "Dropped the unfinished last line" in repaired.output and "traces 1, successes 0" in repaired.output
    assert runner.invoke(collection, ["stats", str(out)]).exit_code == 0


def test_repair_writes_a_missing_manifest(tmp_path: Path) -> None:
    folder = tmp_path / "hand-written"
    folder.mkdir()
    trace = {
        "source_system": "my-agent",
        "trace_id": "1",
        "question": "Hi?",
        "messages": [{"role": "user", "content": "Hi?"}],
    }
    (folder / TRACES_FILE).write_text(json.dumps(trace) + "\n")
    runner = CliRunner()
    refused = runner.invoke(collection, ["stats", str(folder)])
    assert refused.exit_code == 2 and "no manifest.json" in refused.output
    repaired = runner.invoke(collection, ["repair", str(folder)])
    assert repaired.exit_code == 0, repaired.output
    assert "Wrote the missing manifest.json (source_system 'my-agent')" in repaired.output
    assert read_collection(folder)[0].counts.traces == 1
    (folder / "manifest.json").unlink()
    (folder / TRACES_FILE).write_text(json.dumps({k: v for k, v in trace.items() if k != "source_system"}) + "\n")
    bad = runner.invoke(collection, ["repair", str(folder)])
    assert bad.exit_code == 2 and "line 1: field 'source_system': missing" in bad.output
    assert not (folder / "manifest.json").exists()
