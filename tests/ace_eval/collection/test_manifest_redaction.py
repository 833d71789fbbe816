"""Issue 37: every field of a collection's manifest is redacted in a run folder, and `collection import` redacts
what it writes unless `--no-redact` (fail on e5bcddd: model names and the source file name were written raw)."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from ace.redaction import Redactor
from ace_eval.cli import main
from ace_eval.collection import read_collection, read_manifest
from ace_eval.run.folder import RunFolder
from ace_eval.run.redaction import install_run_collection

KEY = "sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4zAb7cDe0fGh3i"
GITHUB = "ghp_R4nd0mT0k3nV4lu3F0rT3st1ngPurp0s3sXY"
SSN = "536-22-8145"
EMAIL = "jane.doe@example.com"


def _source(tmp_path: Path) -> Path:
    src = tmp_path / f"chats-{SSN}.jsonl"
    record = {
        "id": "t1",
        "messages": [
            {"role": "user", "content": f"I am {EMAIL}, refund order 12"},
            {"role": "assistant", "content": "Done."},
        ],
    }
    src.write_text(json.dumps(record) + "\n", encoding="utf-8")
    return src


def test_collection_import_redacts_the_traces_and_every_manifest_field(tmp_path: Path) -> None:
    out = tmp_path / "coll"
    args = ["collection", "import", "--format", "openai-jsonl", str(_source(tmp_path)), "--out", str(out)]
    result = CliRunner().invoke(main, [*args, "--model", f"agent=openai/{KEY}"])
    assert result.exit_code == 0, result.output
    assert "Redacted 2 values (email: 2)" in result.output
    written = (out / "manifest.json").read_text() + (out / "traces.jsonl").read_text()
    for secret in (KEY, SSN, EMAIL):
        assert secret not in written
    manifest, (trace,) = read_collection(out)
    assert manifest.metadata["source_file"] == "chats-[REDACTED:ssn].jsonl" and manifest.metadata["redacted"] is True
    assert manifest.models == {"agent": "openai/[REDACTED:openai_key]"}
    assert trace.question == "I am [REDACTED:email#1], refund order 12"


def test_no_redact_keeps_the_collection_raw_and_says_so(tmp_path: Path) -> None:
    out = tmp_path / "coll"
    args = ["collection", "import", "--format", "openai-jsonl", str(_source(tmp_path)), "--out", str(out)]
    result = CliRunner().invoke(main, [*args, "--no-redact"])
    assert result.exit_code == 0, result.output
    assert "Not redacted (--no-redact)" in result.output
    manifest, (trace,) = read_collection(out)
    assert manifest.metadata["source_file"] == f"chats-{SSN}.jsonl" and manifest.metadata["redacted"] is False
    assert EMAIL in trace.question


def test_the_runs_collection_manifest_is_redacted_field_by_field(tmp_path: Path) -> None:
    imported = tmp_path / "imported"
    args = ["collection", "import", "--format", "openai-jsonl", str(_source(tmp_path)), "--out", str(imported)]
    out = CliRunner().invoke(
        main, [*args, "--no-redact", "--model", f"agent=openai/{KEY}", "--model", f"user=gh/{GITHUB}"]
    )
    assert out.exit_code == 0, out.output
    manifest, traces = read_collection(imported)
    folder = RunFolder(tmp_path / "run")
    folder.path.mkdir()
    install_run_collection(folder, imported, manifest, traces, redactor=Redactor(), limit=None)
    text = (folder.collection / "manifest.json").read_text()
    for secret in (KEY, GITHUB, SSN, EMAIL):
        assert secret not in text
    installed = read_manifest(folder.collection)
    assert installed.models == {"agent": "openai/[REDACTED:openai_key]", "user": "gh/[REDACTED:github_token]"}
    assert installed.metadata["source_file"] == "chats-[REDACTED:ssn].jsonl"
