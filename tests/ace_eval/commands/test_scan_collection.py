"""`ace-eval scan DIR` on a collection: validated as `collection stats` validates it, and still searched when it is
refused (the findings first, then the refusal, exit 2 over 1); a plain file is searched as text, unvalidated."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from click.testing import CliRunner, Result

from ace_eval.cli import main
from ace_eval.collection import write_collection

DEMO = Path(__file__).resolve().parents[3] / "examples" / "demo-collection"
KEY = "sk-proj-" + "Qw1Er2Ty3Ui4Op5As6Df7Gh8Jk9L"


def invoke(*args: object) -> Result:
    result = CliRunner().invoke(main, [str(a) for a in args])
    assert "Traceback" not in result.output and isinstance(result.exception, SystemExit | None), result.exception
    return result


def collection_with_a_key(tmp_path: Path, edit: Any = None) -> Path:
    """The demo collection with an OpenAI key in its first trace's question, then `edit(traces)` applied."""
    folder = tmp_path / "c"
    shutil.copytree(DEMO, folder)
    traces = [json.loads(line) for line in (folder / "traces.jsonl").read_text(encoding="utf-8").splitlines()]
    traces[0]["question"] += f" My key is {KEY}."
    if edit is not None:
        edit(traces)
    (folder / "traces.jsonl").write_text("".join(json.dumps(t) + "\n" for t in traces), encoding="utf-8")
    return folder


def test_a_malformed_collection_lists_its_findings_then_is_refused(tmp_path: Path) -> None:
    valid = collection_with_a_key(tmp_path / "valid")
    found = invoke("scan", valid)
    assert found.exit_code == 1 and "Error" not in found.output, found.output
    finding = found.stdout.splitlines()[0]
    assert finding.startswith(f"{valid / 'traces.jsonl'}:1 $.question  openai_key  sk-p")

    duplicate = collection_with_a_key(tmp_path / "dup", lambda traces: traces.insert(1, dict(traces[0])))
    result = invoke("scan", duplicate)
    assert result.exit_code == 2, result.output  # exit 2 wins over 1: the collection cannot be shared as it is
    assert result.stdout.splitlines()[0] == finding.replace(str(valid), str(duplicate))
    stats = invoke("collection", "stats", duplicate)  # the same reader, the same refusal
    assert stats.exit_code == 2 and stats.output.startswith("Error: ")
    reason = stats.output.removeprefix("Error: ").strip()
    assert f"{duplicate / 'traces.jsonl'}, line 2: field 'trace_uid': " in reason
    assert f"Error: {reason} (the collection is refused; its files were still searched)" in result.stderr
    assert "scan: 2 found in 2 file(s)" in result.stderr  # the key, in both copies of the trace

    raw = invoke("scan", duplicate / "traces.jsonl")  # a file is searched as text, not validated
    assert raw.exit_code == 1 and "Error" not in raw.output, raw.output


def test_a_missing_field_or_a_deep_line_is_named_once(tmp_path: Path) -> None:
    missing = collection_with_a_key(tmp_path / "missing", lambda traces: traces[3].pop("question"))
    result = invoke("scan", missing)
    assert result.exit_code == 2 and "openai_key" in result.stdout, result.output
    assert f"Error: {missing / 'traces.jsonl'}, line 4: field 'question': missing (required)" in result.stderr

    deep = collection_with_a_key(tmp_path / "deep", lambda traces: traces[2].update(metadata={"x": "DEEP"}))
    text = (deep / "traces.jsonl").read_text(encoding="utf-8").replace('"DEEP"', "[" * 5_000 + "]" * 5_000)
    (deep / "traces.jsonl").write_text(text, encoding="utf-8")
    result = invoke("scan", deep)
    assert result.exit_code == 2 and "openai_key" in result.stdout, result.output
    [error] = [line for line in result.stderr.splitlines() if line.startswith("Error")]  # not the scan's own too
    assert "traces.jsonl, line 3, column" in error and "nested more than 100 levels deep" in error


def test_an_empty_collection_is_refused_unless_allowed(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    write_collection(empty, [], source_system="demo")
    refused = invoke("scan", empty)
    assert refused.exit_code == 2, refused.output
    assert f"Error: {empty / 'traces.jsonl'}: holds no trace: " in refused.stderr
    assert "pass --allow-empty to scan an empty collection" in refused.stderr
    allowed = invoke("scan", empty, "--allow-empty")
    assert allowed.exit_code == 0 and "no secret found in 2 file(s)" in allowed.output, allowed.output

    emptied = tmp_path / "emptied"  # the manifest still counts ten: --allow-empty does not make that consistent
    shutil.copytree(DEMO, emptied)
    (emptied / "traces.jsonl").write_bytes(b"")
    for extra in ([], ["--allow-empty"]):
        result = invoke("scan", emptied, *extra)
        assert result.exit_code == 2, result.output
        assert "field 'counts.traces': the manifest says 10 but traces.jsonl holds 0" in result.stderr
        assert "`ace-eval collection repair DIR --allow-empty` recounts" in result.stderr  # the fix that works


def test_a_folder_that_is_not_a_whole_collection_is_searched_as_text(tmp_path: Path) -> None:
    """Only a folder with both manifest.json and traces.jsonl is a collection: a web app's manifest.json or a lone
    traces.jsonl is searched, not refused."""
    folder = tmp_path / "app"
    folder.mkdir()
    (folder / "manifest.json").write_text(json.dumps({"name": "app", "contact": "a@x.org"}), encoding="utf-8")
    (folder / "notes.md").write_text("clean\n", encoding="utf-8")
    result = invoke("scan", folder)
    assert result.exit_code == 1 and "Error" not in result.output and "email" in result.output, result.output
    (folder / "manifest.json").unlink()
    (folder / "traces.jsonl").write_text('{"question": "no trace_uid, no source_system"}\n', encoding="utf-8")
    assert invoke("scan", folder).exit_code == 0
