"""`ace-eval verify`: each smoke-test check passes on a good run folder and fails, naming the skill, on a bad one."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from _run_support import good_book, write_run
from click.testing import CliRunner

from ace import Skillbook
from ace.observability import JsonlSpanExporter
from ace_eval.commands.verify import run_checks, verify


def lines_of(folder: Path) -> tuple[int, list[str]]:
    result = CliRunner().invoke(verify, [str(folder)])
    return result.exit_code, result.output.splitlines()


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


def test_invariant_violations_in_the_file_fail_the_v2_check(tmp_path: Path) -> None:
    folder = write_run(tmp_path / "run", good_book())
    data = json.loads((folder / "skillbook.json").read_text(encoding="utf-8"))
    data["skills"][0]["insight"] = None  # a context skill without insight cannot even be loaded
    (folder / "skillbook.json").write_text(json.dumps(data), encoding="utf-8")
    code, lines = lines_of(folder)
    assert code == 1
    assert any(line.startswith("FAIL  skillbook.json conforms to the v2 shape") and "insight" in line for line in lines)
    data["schema_version"] = "1"
    (folder / "skillbook.json").write_text(json.dumps(data), encoding="utf-8")
    assert any("Skillbook format v2 required" in line for line in lines_of(folder)[1])


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
