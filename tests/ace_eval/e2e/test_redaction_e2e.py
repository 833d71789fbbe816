"""Acceptance: secrets planted in a collection never reach a file of the run folder or a span; with `--no-redact`
they do, and `ace-eval verify` and `ace-eval scan` catch them.

The scripted models copy trace text: the recursive reflector reads every message in full (`read_message`) and
puts the task and what it read into its reflection; the skill manager copies the reflection into the issue and
insight of the skill it adds. Content recording is on (`--logfire-content`), so prompts and completions are spans.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

import pytest
from _copying_roles import copying_models
from click.testing import CliRunner, Result

from ace.embeddings.test import TestEmbedder
from ace_eval.cli import main
from ace_eval.collection import Trace, write_collection
from ace_eval.e2e import runner
from ace_eval.e2e.runner import RunInjections

OPENAI = "sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4zAb7cDe0fGh3iJk6lMn9oPq2rSt5uVw8xYz1aBc"
ANTHROPIC = "sk-ant-api03-Zy9xWv8uTs7rQp6oNm5lKj4iHg3fEd2cBa1Zy9xWv8uTs7rQp6oNm5lKj4iHg3fEd2cBa1-QQ"
AWS_ID = "AKIAQ3EGTN7PLMW4ZX2B"
AWS_SECRET = "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"
JWT = (
    "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiJ1c2VyLTQyIiwicm9sZSI6ImFkbWluIiwiaWF0IjoxNzAwMDAwMDAwfQ"
    ".q8hTZ3mN0pLkV7xR2sW9yB4cD6fG1jH5"
)
GITHUB = "ghp_R4nd0mT0k3nV4lu3F0rT3st1ngPurp0s3sXY"
EMAIL = "olivia.martin.1987@example-mail.com"
CARD = "4539 1488 0343 6467"
IBAN = "GB82 WEST 1234 5698 7654 32"
PHONE = "+44 20 7946 0958"
DB_PASSWORD = "hunter2-Sup3rS3cret"
PRIVATE_KEY_BODY = "MIIEowIBAAKCAQEAvQ7pXk2Jb9YwPlantedPrivateKeyBodyLine0123456789abcd"
PLANTED = {
    "openai_key": OPENAI,
    "anthropic_key": ANTHROPIC,
    "aws_access_key": AWS_ID,
    "aws_secret_key": AWS_SECRET,
    "jwt": JWT,
    "github_token": GITHUB,
    "email": EMAIL,
    "card_number": CARD,
    "iban": IBAN,
    "phone": PHONE,
    "url_credentials": DB_PASSWORD,
    "private_key": PRIVATE_KEY_BODY,
}


def planted_collection(directory: Path) -> Path:
    """Four traces carrying twelve kinds of secret, in the question, user text, tool arguments and tool output."""

    def trace(n: int, question: str, messages: list[dict[str, Any]]) -> Trace:
        return Trace(source_system="support-bot", trace_id=f"s{n}", question=question, messages=messages, reward=0.0)

    traces = [
        trace(
            1,
            f"My key {OPENAI} stopped working, reach me at {EMAIL}",
            [
                {"role": "user", "content": f"Here are my AWS credentials: id {AWS_ID} secret {AWS_SECRET}"},
                {
                    "role": "assistant",
                    "content": "",
                    "tool_calls": [
                        {
                            "id": "c1",
                            "type": "function",
                            "function": {"name": "call_api", "arguments": json.dumps({"auth": f"Bearer {JWT}"})},
                        }
                    ],
                },
                {"role": "tool", "tool_call_id": "c1", "content": "401 Unauthorized"},
            ],
        ),
        trace(
            2,
            "Refund to my card please",
            [
                {"role": "user", "content": f"Card {CARD}, or wire it to {IBAN}; call me on {PHONE}"},
                {"role": "assistant", "content": f"Noted {CARD}; the refund goes to {IBAN}."},
            ],
        ),
        trace(
            3,
            "The deploy fails",
            [
                {"role": "user", "content": f"token {GITHUB} and DATABASE_URL=postgres://app:{DB_PASSWORD}@db:5432/x"},
                {
                    "role": "user",
                    "content": f"-----BEGIN RSA PRIVATE KEY-----\n{PRIVATE_KEY_BODY}\n-----END RSA PRIVATE KEY-----",
                },
            ],
        ),
        trace(4, f"Claude key {ANTHROPIC} is rejected", [{"role": "user", "content": f"mail {EMAIL} again"}]),
    ]
    write_collection(directory, traces, source_system="support-bot")
    return directory


def run_cli(monkeypatch: pytest.MonkeyPatch, collection: Path, out: Path, *extra: str) -> Path:
    injections = RunInjections(
        models=copying_models(
            quote_chars=1500,
            tail_chars=400,
            issue="Support agent echoed user data",
            insight="Do not repeat what the user sent",
            keywords=["support", "credentials"],
        ),
        embedder=TestEmbedder(),
        show_progress=False,
    )
    monkeypatch.setattr("ace_eval.commands.e2e.run_e2e", functools.partial(runner.run_e2e, injections=injections))
    args = ["e2e", "--traces", str(collection), "--no-benchmark", "--reflector-type", "rr", "--logfire-content"]
    result = CliRunner().invoke(main, [*args, "--output-dir", str(out), *extra])
    assert result.exit_code == 0, result.output
    [line] = [line for line in result.stdout.splitlines() if line.startswith("Run folder: ")]
    return Path(line.removeprefix("Run folder: "))


def leaks(folder: Path) -> dict[str, list[str]]:
    """Planted value -> the files (relative) whose bytes contain it, raw or JSON-escaped."""
    found: dict[str, list[str]] = {}
    for file in sorted(p for p in folder.rglob("*") if p.is_file()):
        data = file.read_bytes()
        for kind, value in PLANTED.items():
            forms = {value.encode(), json.dumps(value)[1:-1].encode()}
            if any(form in data for form in forms):
                found.setdefault(kind, []).append(str(file.relative_to(folder)))
    return found


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("LOGFIRE_TOKEN", raising=False)
    for var in ("ACE_MODEL", "ACE_REFLECTOR_MODEL", "ACE_SKILL_MANAGER_MODEL", "ACE_EMBEDDING_MODEL"):
        monkeypatch.delenv(var, raising=False)


def test_planted_secrets_reach_no_file_and_no_span(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, clean_env: None
) -> None:
    collection = planted_collection(tmp_path / "collection")
    assert set(leaks(collection)) == set(PLANTED)  # every value is really in the input
    folder = run_cli(monkeypatch, collection, tmp_path / "out")

    assert leaks(folder) == {}
    spans = (folder / "spans.jsonl").read_text(encoding="utf-8")
    # content was recorded: the prompts and the copied texts are in the spans, as placeholders
    assert "gen_ai" in spans or "all_messages" in spans
    for kind in ("openai_key", "aws_access_key", "aws_secret_key", "jwt", "email", "card_number", "iban"):
        assert f"[REDACTED:{kind}" in spans, kind
    skillbook = (folder / "skillbook.json").read_text(encoding="utf-8")
    assert "[REDACTED:email#1]" in skillbook and "[REDACTED:card_number#1]" in skillbook  # the skills quote them
    record = json.loads((folder / "run.json").read_text(encoding="utf-8"))
    assert record["redaction"]["enabled"] is True
    counts = record["redaction"]["collection"]  # the run's copy of the collection is redacted when installed ...
    assert set(counts) == set(PLANTED) and counts["email"] == 2 and counts["card_number"] == 2
    assert record["redaction"]["redact_step"] == {}  # ... so the redact step finds nothing left in it

    verify = CliRunner().invoke(main, ["verify", str(folder)])
    assert verify.exit_code == 0, verify.output
    scan = CliRunner().invoke(main, ["scan", str(folder)])
    assert scan.exit_code == 0 and "no secret found" in scan.output, scan.output


@pytest.mark.parametrize("off", [["--no-redact"], ["--no-step", "redact"]])
def test_without_the_redact_step_verify_and_scan_catch_the_secrets(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, clean_env: None, off: list[str]
) -> None:
    collection = planted_collection(tmp_path / "collection")
    folder = run_cli(monkeypatch, collection, tmp_path / "out", *off)
    steps = json.loads((folder / "run.json").read_text(encoding="utf-8"))["pipeline"]["steps"]
    assert [s["name"] for s in steps] == ["reflect", "update", "quarantine", "checkpoint", "export_markdown", "persist"]

    leaked = leaks(folder)
    assert set(leaked) == set(PLANTED)
    assert {"skillbook.json", "skillbook.md", "samples.jsonl", "run.json", "spans.jsonl"} <= set(leaked["email"])
    assert json.loads((folder / "run.json").read_text(encoding="utf-8"))["redaction"]["enabled"] is False

    verify: Result = CliRunner().invoke(main, ["verify", str(folder)])
    assert verify.exit_code == 1
    assert "FAIL  no detectable secret in the run folder" in verify.output
    scan = CliRunner().invoke(main, ["scan", str(folder)])
    assert scan.exit_code == 1
    listed = {line.split("  ")[1] for line in scan.stdout.splitlines() if "  " in line}
    assert set(PLANTED) <= listed, listed
    for value in PLANTED.values():
        assert value not in scan.output  # masked previews only
    assert CliRunner().invoke(main, ["scan", str(collection)]).exit_code == 1
    assert CliRunner().invoke(main, ["scan", str(tmp_path / "missing")]).exit_code == 2


def test_a_resume_cannot_switch_redaction_off(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, clean_env: None) -> None:
    collection = planted_collection(tmp_path / "collection")
    folder = run_cli(monkeypatch, collection, tmp_path / "out")
    result = CliRunner().invoke(main, ["e2e", "--resume", str(folder), "--no-redact"])
    assert result.exit_code == 2 and "redact: True in the run, False now" in result.output, result.output
    result = CliRunner().invoke(main, ["e2e", "--resume", str(folder), "--no-step", "redact"])
    assert result.exit_code == 2 and "cannot resume" in result.output, result.output


def test_the_redact_step_and_no_redact_together_are_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, clean_env: None
) -> None:
    collection = planted_collection(tmp_path / "collection")
    args = ["e2e", "--traces", str(collection), "--no-benchmark", "--output-dir", str(tmp_path / "out")]
    result = CliRunner().invoke(main, [*args, "--step", "redact", "--no-redact"])
    assert result.exit_code == 2 and "the step 'redact' is asked for" in result.output, result.output
    assert not (tmp_path / "out").exists()
