"""`ace-eval verify`: each smoke-test check passes on a good run folder and fails, naming the skill, on a bad one
(exit 1); a file the checks read that cannot be read is refused (exit 2), naming it, with no check printed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from _run_support import good_book, write_run
from click.testing import CliRunner

from ace import Skillbook
from ace.observability import JsonlSpanExporter
from ace_eval.cli import main
from ace_eval.commands.verify import run_checks


def lines_of(folder: Path) -> tuple[int, list[str]]:
    result = CliRunner().invoke(main, ["verify", str(folder)])
    assert "Traceback" not in result.output and isinstance(result.exception, SystemExit | None), result.exception
    return result.exit_code, result.output.splitlines()


def refused(target: Path) -> str:
    """The one message of a verify that refuses `target` (exit 2): no PASS or FAIL line, nothing written."""
    folder = target.parent if target.is_file() else target
    before = {p: p.read_bytes() for p in folder.rglob("*") if p.is_file()}
    code, lines = lines_of(target)
    assert code == 2, lines
    assert not [line for line in lines if line.startswith(("PASS", "FAIL", "verify:"))], lines
    assert {p: p.read_bytes() for p in folder.rglob("*") if p.is_file()} == before
    return "\n".join(lines)


def test_a_good_run_passes_every_check(tmp_path: Path) -> None:
    code, lines = lines_of(write_run(tmp_path / "run", good_book()))
    assert code == 0, lines
    assert [line.split("  ")[0] for line in lines[:-1]] == ["PASS"] * 9
    assert lines[-1].startswith("verify: all 9 checks passed")
    assert any("skillbook.embeddings.npz present: 2 vectors of dimension 64" in line for line in lines)


def test_missing_sidecar_fails_with_a_clear_message(tmp_path: Path) -> None:
    code, lines = lines_of(write_run(tmp_path / "run", good_book(), embed=False))
    assert code == 1
    [fail] = [line for line in lines if line.startswith("FAIL")]
    assert "skillbook.embeddings.npz present" in fail and "is missing" in fail


def test_skill_without_occurrence_or_keyword_or_insight_is_named(tmp_path: Path) -> None:
    book = good_book()
    data = book.to_dict()
    data["skills"][0]["occurrences"] = []
    data["skills"][1]["occurrences"] = []
    folder = tmp_path / "run"
    write_run(folder, Skillbook.from_dict(data))
    code, lines = lines_of(folder)
    assert code == 1
    assert "FAIL  every skill has >= 1 occurrence: no occurrence on context-00001, harness-00001" in lines


def test_a_skillbook_that_breaks_the_v2_shape_is_refused_naming_the_file_and_the_reason(tmp_path: Path) -> None:
    folder = write_run(tmp_path / "run", good_book())
    data = json.loads((folder / "skillbook.json").read_text(encoding="utf-8"))
    data["skills"][0]["insight"] = None  # a context skill without insight cannot even be loaded
    (folder / "skillbook.json").write_text(json.dumps(data), encoding="utf-8")
    message = refused(folder)
    assert message.startswith(f"Error: {folder / 'skillbook.json'} cannot be read (") and "insight" in message
    assert "restore skillbook.json from a copy" in message
    data["schema_version"] = "1"
    (folder / "skillbook.json").write_text(json.dumps(data), encoding="utf-8")
    assert "Skillbook format v2 required" in refused(folder)
    assert "Skillbook format v2 required" in refused(folder / "skillbook.json")  # the file on its own, too
    fix = ": verify cannot read it; fix it or restore it from a copy. Nothing was checked"
    assert refused(folder / "skillbook.json").rstrip().endswith(fix)


def test_a_damaged_run_json_or_samples_journal_is_refused_naming_the_line(tmp_path: Path) -> None:
    folder = write_run(tmp_path / "run", good_book())
    good = (folder / "run.json").read_bytes()
    (folder / "run.json").write_text('{"status": "completed", "config": {}, "training": {"samples": "two"}}')
    assert "run.json: field 'training.samples'" in refused(folder)
    assert "run.json: field 'training.samples'" in refused(folder / "skillbook.json")
    (folder / "run.json").write_bytes(good)
    (folder / "samples.jsonl").write_text("[[[\n{}\n", encoding="utf-8")  # not the last line: not a torn write
    message = refused(folder)
    assert "samples.jsonl, line 1: not a sample record (" in message and "): the journal is damaged" in message
    assert "restore samples.jsonl from a copy, or start a new run" in message


def test_a_run_that_saved_no_skillbook_yet_fails_its_check(tmp_path: Path) -> None:
    """Nothing is damaged: the run stopped before its first snapshot, a failed check (exit 1), not a refusal."""
    folder = write_run(tmp_path / "run", good_book(), status="interrupted")
    (folder / "skillbook.json").unlink()
    code, lines = lines_of(folder)
    assert code == 1, lines
    [fail] = [line for line in lines if line.startswith("FAIL  skillbook.snapshot.json")]
    assert "holds no skillbook yet" in fail and "ace-eval e2e --resume" in fail


def test_empty_skillbook_crashed_run_and_missing_spans_fail(tmp_path: Path) -> None:
    code, lines = lines_of(write_run(tmp_path / "run", Skillbook(), spans=False, status="failed"))
    assert code == 1
    failed = {line.split(":")[0] for line in lines if line.startswith("FAIL")}
    assert failed == {
        "FAIL  run finished without crashing",
        "FAIL  skillbook.embeddings.npz present",
        "FAIL  the run learned skills",
        "FAIL  spans.jsonl holds sm.session spans with their tool calls",
    }


def test_sessions_without_edits_fail_the_span_check(tmp_path: Path) -> None:
    folder = write_run(tmp_path / "run", good_book())
    (folder / "spans.jsonl").write_text(
        json.dumps({"name": "sm.session", "span_id": "s1", "parent_span_id": None}) + "\n", encoding="utf-8"
    )
    checks = {c.name: c for c in run_checks(folder)}
    span_check = checks["spans.jsonl holds sm.session spans with their tool calls"]
    assert not span_check.passed and "no add/update/tag/remove_skill call" in span_check.detail
    (folder / "spans.jsonl").write_text("", encoding="utf-8")  # readable, but empty: a failed check, not a refusal
    code, lines = lines_of(folder)
    assert code == 1 and "FAIL  spans.jsonl holds sm.session spans with their tool calls: " in "\n".join(lines)
    assert any(
        line.endswith("holds no span: the run stopped before its first span ended, or it was emptied") for line in lines
    )


def test_a_skillbook_file_can_be_verified_directly(tmp_path: Path) -> None:
    folder = write_run(tmp_path / "run", good_book(), spans=False)
    checks = run_checks(folder / "skillbook.json")
    assert all(c.passed for c in checks) and len(checks) == 8


@pytest.mark.parametrize("name", ["spans.jsonl"])
def test_jsonl_exporter_output_is_what_verify_reads(tmp_path: Path, name: str) -> None:
    """The span check reads the file format ace.observability writes (parent links through pydantic-ai spans)."""
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor

    folder = write_run(tmp_path / "run", good_book(), spans=False)
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(JsonlSpanExporter(folder / name)))
    tracer = provider.get_tracer("test")
    with tracer.start_as_current_span("sm.session"), tracer.start_as_current_span("update_skill"):
        pass
    provider.shutdown()
    assert all(c.passed for c in run_checks(folder))


def test_a_damaged_or_suspicious_sidecar_fails_with_the_problem(tmp_path: Path) -> None:
    folder = write_run(tmp_path / "run", good_book())
    (folder / "skillbook.embeddings.npz").write_bytes(b"not a zip")
    code, lines = lines_of(folder)
    [fail] = [line for line in lines if line.startswith("FAIL")]
    assert code == 1 and "skillbook.embeddings.npz: not a readable .npz (BadZipFile" in fail
    assert fail.endswith("delete it and the vectors are recomputed")


def test_a_secret_written_with_json_escapes_fails_the_secret_check_naming_the_file(tmp_path: Path) -> None:
    """A temporary file of a killed save holding an OpenAI key with escaped dashes, and a torn last span line holding
    an e-mail with an escaped @: neither is searched as JSON values (a `.tmp` file, a line that does not parse)."""
    folder = write_run(tmp_path / "run", good_book())
    key = "sk-proj-" + "Qw1Er2Ty3Ui4Op5As6Df7Gh8Jk9L"
    escaped_key = key.replace("-", "\\u002d")
    (folder / ".run.json.4242.k3j2.tmp").write_text('{"config": {"api_key": "' + escaped_key + '"}}', "utf-8")
    with (folder / "spans.jsonl").open("a", encoding="utf-8") as f:
        f.write('{"name": "sm.session", "attributes": {"ace.user": "jane.doe\\u0040example.com, then')
    code, lines = lines_of(folder)
    assert code == 1, lines
    [fail] = [line for line in lines if line.startswith("FAIL  no detectable secret")]
    assert "2 found" in fail and ".run.json.4242.k3j2.tmp:1  openai_key" in fail, fail
    assert "spans.jsonl:4  email" in fail, fail
    output = "\n".join(lines)
    for secret in (key, escaped_key, "jane.doe", "0040example"):
        assert secret not in output, output
