"""`ace-eval scan` on files and folders, with the `[redaction]` table of `ace-eval.toml`; the e2e settings."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from ace.redaction.scan import scan_path
from ace_eval.cli import main
from ace_eval.e2e.config import ConfigError, resolve_settings

TOML = """
[e2e]
redact = false

[redaction]
patterns = { employee_id = 'EMP-\\d{6}' }
allow = ["support@airline.example"]
allow_patterns = ['.*@test\\.example']
"""


def write(folder: Path) -> Path:
    folder.mkdir()
    (folder / "traces.jsonl").write_text(
        json.dumps({"question": "hi", "messages": [{"content": "mail a@x.org or support@airline.example"}]})
        + "\n"
        + json.dumps({"question": "EMP-123456 from qa@test.example"})
        + "\n",
        encoding="utf-8",
    )
    (folder / "notes.md").write_text("clean line\nkey AKIAQ3EGTN7PLMW4ZX2B\n", encoding="utf-8")
    (folder / "run.json").write_text(json.dumps({"config": {"token": "Bearer abcdef0123456789abcdef01"}}))
    (folder / "vectors.npz").write_bytes(b"\x93NUMPY\xff\xfe\x00")
    return folder


def test_scan_lists_file_line_path_kind_and_a_masked_preview(tmp_path: Path) -> None:
    folder = write(tmp_path / "c")
    result = scan_path(folder)
    assert [(p.file.name, p.line, p.json_path, p.kind, p.preview) for p in result.locations] == [
        ("notes.md", 2, "", "aws_access_key", "AKIA…[20 chars]"),
        ("run.json", None, "$.config.token", "bearer_token", "abcd…[24 chars]"),
        ("traces.jsonl", 1, "$.messages[0].content", "email", "a@x.…[7 chars]"),
        ("traces.jsonl", 1, "$.messages[0].content", "email", "supp…[23 chars]"),
        ("traces.jsonl", 2, "$.question", "email", "qa@t…[15 chars]"),
    ]
    assert result.files == 3 and [p.name for p in result.skipped] == ["vectors.npz"]


def test_the_scan_command_applies_the_config_and_exits_1_0_or_2(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = write(tmp_path / "c")
    (tmp_path / "ace-eval.toml").write_text(TOML, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    cli = CliRunner()
    found = cli.invoke(main, ["scan", str(folder)])
    assert found.exit_code == 1
    kinds = [line.split("  ")[1] for line in found.stdout.splitlines()]
    assert kinds == ["aws_access_key", "bearer_token", "email", "employee_id"]  # allow-listed e-mails left out
    assert "a@x.org" not in found.output and "4 found in 3 file(s)" in found.output
    assert cli.invoke(main, ["scan", str(folder / "notes.md")]).exit_code == 1
    (folder / "notes.md").write_text("clean\n", encoding="utf-8")
    clean = cli.invoke(main, ["scan", str(folder / "notes.md")])
    assert clean.exit_code == 0 and "no secret found in 1 file(s)" in clean.output
    assert cli.invoke(main, ["scan", str(tmp_path / "nope")]).exit_code == 2
    (tmp_path / "bad.toml").write_text("[redaction]\npatterns = { x = '(' }\n", encoding="utf-8")
    bad = cli.invoke(main, ["scan", str(folder), "--config", str(tmp_path / "bad.toml")])
    assert bad.exit_code == 2 and "not a valid regular expression" in bad.output


def test_the_settings_read_redaction_from_the_config_and_flags(tmp_path: Path) -> None:
    config = tmp_path / "ace-eval.toml"
    config.write_text(TOML, encoding="utf-8")
    settings = resolve_settings({}, config=config, environ={})
    assert settings.redact is False and settings.redactor() is None
    assert settings.redaction_patterns == {"employee_id": r"EMP-\d{6}"}
    on = resolve_settings({"redact": True}, config=config, environ={})
    redactor = on.redactor()
    assert redactor is not None and redactor.redact_text("EMP-123456 a@x.org qa@test.example") == (
        "[REDACTED:employee_id] [REDACTED:email] qa@test.example"
    )
    assert resolve_settings({}, environ={}, cwd=tmp_path / "elsewhere").redact is True  # on by default
    assert type(on).from_dict(on.to_dict()) == on
    config.write_text("[redaction]\npatterns = { Bad = 'x' }\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="lowercase letters"):
        resolve_settings({}, config=config, environ={})


def test_span_and_trace_ids_are_not_searched(tmp_path: Path) -> None:
    span = {"trace_id": "4539148803436467", "span_id": "6451000000000007", "parent_span_id": "4111111111111111"}
    (tmp_path / "spans.jsonl").write_text(json.dumps({**span, "attributes": {}}) + "\n", encoding="utf-8")
    assert scan_path(tmp_path).locations == []


def test_text_that_is_not_utf8_is_still_searched_and_an_all_binary_path_is_an_error(tmp_path: Path) -> None:
    # Audit 13 #8: these three files each hid an OpenAI key ("no secret found in 0 file(s)", exit 0).
    key = "sk-proj-" + "Qw1Er2Ty3Ui4Op5As6Df7Gh8Jk9L"
    (tmp_path / "notes-latin1.txt").write_bytes(f"café {key}\n".encode("latin-1"))
    (tmp_path / "notes-utf16.txt").write_text(f"key: {key}\n", encoding="utf-16")
    (tmp_path / "traces.jsonl.gz").write_bytes(gzip.compress(json.dumps({"question": key}).encode() + b"\n"))
    result = scan_path(tmp_path)
    assert [(p.file.name, p.line, p.json_path, p.kind) for p in result.locations] == [
        ("notes-latin1.txt", 1, "", "openai_key"),
        ("notes-utf16.txt", 1, "", "openai_key"),
        ("traces.jsonl.gz", 1, "$.question", "openai_key"),
    ]
    assert result.files == 3 and result.skipped == []
    cli = CliRunner()
    found = cli.invoke(main, ["scan", str(tmp_path)])
    assert found.exit_code == 1 and "3 found in 3 file(s)" in found.output and key not in found.output
    binary = tmp_path / "binary"
    binary.mkdir()
    (binary / "vectors.npz").write_bytes(b"PK\x03\x04\x00\x00" + bytes(range(256)))
    skipped = cli.invoke(main, ["scan", str(binary)])
    assert skipped.exit_code == 2 and "nothing was searched" in skipped.output and "are binary" in skipped.output


def test_a_secret_written_with_json_escapes_is_found_in_any_file_parsed_or_not(tmp_path: Path) -> None:
    """`\\u0040` for @, `\\/` inside a key or a URL, `\\u002d` in an OpenAI key: found by decoding the JSON, in a
    `.json` file, a torn `.jsonl` line, a temporary file and a log; the raw text is searched too."""
    aws = "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
    url = "https://admin:S3cretPassw0rd@db.example.com/x"
    escaped = json.dumps({"aws": aws, "url": url}).replace("/", "\\/")  # as PHP's json_encode writes them
    (tmp_path / "run.json").write_text(escaped, encoding="utf-8")
    (tmp_path / "samples.jsonl").write_text('{"ok": 1}\n{"error": "mail jane.doe\\u0040example.com, the', "utf-8")
    key = "sk-proj-" + "Qw1Er2Ty3Ui4Op5As6Df7Gh8Jk9L"
    (tmp_path / ".run.json.1.x.tmp").write_text(json.dumps({"k": key}).replace("-", "\\u002d"), encoding="utf-8")
    log = 'called with {"to": "ops\\u0040example.com"} and Bearer abcdef0123456789abcdef01'
    (tmp_path / "agent.log").write_text(log, encoding="utf-8")
    found = [(p.file.name, p.line, p.json_path, p.kind) for p in scan_path(tmp_path).locations]
    assert found == [
        (".run.json.1.x.tmp", 1, "", "openai_key"),
        ("agent.log", 1, "", "bearer_token"),
        ("agent.log", 1, "", "email"),
        ("run.json", None, "$.aws", "aws_secret_key"),
        ("run.json", None, "$.url", "url_credentials"),
        ("run.json", 1, "", "email"),  # the raw text: the escaped slashes hide the URL, not the user@host in it
        ("samples.jsonl", 2, "", "email"),
    ]
