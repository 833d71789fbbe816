"""`ace-eval e2e --traces FILE`: a trace file of a known format is imported into the run folder and replayed;
`--traces` alone never runs the benchmark; the refusals name the fix and write nothing."""

from __future__ import annotations

import functools
import json
from pathlib import Path

import pytest
from _e2e_support import scripted_injections
from _otel_agent import record_agent_runs
from click.testing import CliRunner

from ace_eval.cli import main
from ace_eval.collection import read_collection
from ace_eval.e2e import runner

ROOT = Path(__file__).resolve().parents[3]
CHATS = ROOT / "examples" / "chats.jsonl"


@pytest.fixture
def offline(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(
        "ace_eval.commands.e2e.run_e2e", functools.partial(runner.run_e2e, injections=scripted_injections())
    )
    for var in ("ACE_MODEL", "ACE_E2E_OUTPUT_DIR", "ACE_TAU_BENCH_DATA"):
        monkeypatch.delenv(var, raising=False)
    return tmp_path / "out"


def test_an_openai_jsonl_file_is_replayed_without_a_manual_import(offline: Path) -> None:
    result = CliRunner().invoke(main, ["e2e", "--traces", str(CHATS), "--output-dir", str(offline)])
    assert result.exit_code == 0, result.output
    assert (
        f"Plan: replay 3 trace(s) imported from {CHATS} (openai-jsonl: JSON lines, one chat record per line), learn "
        "a skillbook (no benchmark" in result.stderr
    )
    (run,) = offline.iterdir()
    manifest, traces = read_collection(run / "collection")
    assert manifest.source_system == "openai-jsonl" and manifest.metadata["importer"] == "openai-jsonl"
    assert [t.trace_id for t in traces] == ["chat-1", "chat-2", "chat-3"]
    assert "Skillbook: 0 active skills" not in result.stdout


def test_otel_spans_of_a_logfire_instrumented_agent_become_skills(offline: Path, tmp_path: Path) -> None:
    """Three runs of a pydantic-ai agent on FunctionModel, exported by Logfire -> import -> replay -> skills."""
    spans = record_agent_runs(tmp_path / "spans.jsonl", ["Weather in Paris?", "And in Oslo?", "Lima, please"])
    imported = tmp_path / "coll"
    assert (
        CliRunner()
        .invoke(main, ["collection", "import", "--format", "otel", str(spans), "--out", str(imported)])
        .exit_code
        == 0
    )
    for source in (imported, spans):
        result = CliRunner().invoke(main, ["e2e", "--traces", str(source), "--output-dir", str(offline)])
        assert result.exit_code == 0, result.output
        assert "Trained on 3 traces x 1 epoch: 3 samples, 0 errors" in result.stdout
        assert "Skillbook: 0 active skills" not in result.stdout


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--traces", "missing.jsonl"], "missing.jsonl: no such collection folder or trace file"),
        (["--traces", "notes.txt"], "notes.txt: not valid JSON at line 1, column 1 (Expecting value)"),
        (["--traces", "garbage.json"], "garbage.json: not valid JSON at line 3, column 13 (Expecting ':' delimiter)"),
        (
            ["--traces", "numbers.json"],
            "but item 1 is a number: expected JSON lines of chat records, or one JSON array of them",
        ),
        (["--traces", "other.json"], "cannot tell the format of this file: pass --format"),
        (["--traces", str(CHATS), "--format", "otel"], "not an OTLP JSON export"),
        (["--traces", "mixed.json"], "item 2 is a message and item 1 a record: expected JSON lines of chat records"),
    ],
)
def test_trace_file_refusals(offline: Path, tmp_path: Path, args: list[str], says: str) -> None:
    (tmp_path / "notes.txt").write_text("just some notes\n")
    (tmp_path / "garbage.json").write_text('{\n  "messages": [\n    {"role" "user"}\n  ]\n}\n')
    (tmp_path / "numbers.json").write_text("[1, 2, 3]\n")
    (tmp_path / "other.json").write_text('{"id": 1, "text": "a JSON object, not a trace"}\n')
    (tmp_path / "mixed.json").write_text(json.dumps([{"messages": []}, {"role": "user", "content": "hi"}]))
    result = CliRunner().invoke(main, ["e2e", *args, "--output-dir", str(offline)])
    assert result.exit_code == 2 and says in result.output, result.output
    assert not offline.exists()


def test_a_json_array_of_chat_records_is_read_as_records_and_says_so(offline: Path, tmp_path: Path) -> None:
    """`[{"question": ..., "messages": [...]}]`, pretty-printed or on one line: one trace per record."""
    records = [
        {
            "question": "Where is order 7?",
            "messages": [
                {"role": "user", "content": "Where is order 7?"},
                {"role": "assistant", "content": "It shipped."},
            ],
        },
        {
            "id": "r-2",
            "question": "Refund order 8",
            "messages": [{"role": "user", "content": "Refund order 8"}],
            "reward": 0.0,
            "feedback": "The refund was never issued.",
        },
    ]
    for name, text in (("chats.json", json.dumps(records, indent=2)), ("one-line.json", json.dumps(records))):
        (tmp_path / name).write_text(text)
        result = CliRunner().invoke(main, ["e2e", "--traces", name, "--output-dir", str(offline)])
        assert result.exit_code == 0, result.output
        assert f"imported from {name} (openai-jsonl: a JSON array of chat records)" in result.stderr
        run = max(offline.iterdir(), key=lambda p: p.stat().st_mtime_ns)
        manifest, traces = read_collection(run / "collection")
        assert manifest.metadata["shape"] == "a JSON array of chat records"
        assert [(t.trace_id, t.question) for t in traces] == [
            ("record-1", "Where is order 7?"),
            ("r-2", "Refund order 8"),
        ]
        assert traces[1].feedback == "The refund was never issued." and traces[1].reward == 0.0
    imported = CliRunner().invoke(
        main, ["collection", "import", "chats.json", "--format", "openai-jsonl", "--out", "c"]
    )
    assert imported.exit_code == 0 and "(openai-jsonl: a JSON array of chat records)" in imported.output
    (tmp_path / "bad.json").write_text(json.dumps([records[0], {"question": "q"}], indent=2))
    refused = CliRunner().invoke(main, ["e2e", "--traces", "bad.json", "--output-dir", str(offline)])
    assert refused.exit_code == 2 and "field '[1].messages': missing (required)" in refused.output, refused.output


def test_every_session_stopped_without_an_edit_exits_1(offline: Path) -> None:
    demo = ROOT / "examples" / "demo-collection"
    result = CliRunner().invoke(
        main, ["e2e", "--traces", str(demo), "--limit", "2", "--sm-request-limit", "1", "--output-dir", str(offline)]
    )
    assert result.exit_code == 1, result.output
    assert "every skill-manager session stopped without an edit (2 of 2)" in result.output
    assert "raise --sm-request-limit or --sm-tool-calls" in result.output
