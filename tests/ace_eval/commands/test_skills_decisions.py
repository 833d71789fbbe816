"""A person's quarantine or release records who decided, through the redaction sink."""

from __future__ import annotations

import getpass
from pathlib import Path

import pytest
from _run_support import SOURCE, good_book
from click.testing import CliRunner, Result

from ace import InsightSource, Skillbook
from ace_eval.cli import main


def skills(*args: object) -> Result:
    return CliRunner().invoke(main, ["skills", *[str(a) for a in args]])


@pytest.fixture
def book_file(tmp_path: Path) -> Path:
    path = tmp_path / "skillbook.json"
    good_book().save_to_file(path)
    return path


def test_quarantine_and_release_record_who_decided_redacted(book_file: Path) -> None:
    email = "ana.lopez@example.com"
    done = skills("quarantine", book_file, "context-00001", "--reason", f"wrong, says {email}", "--by", email)
    assert done.exit_code == 0, done.output
    skill = Skillbook.load_from_file(book_file).require_skill("context-00001")
    last = skill.occurrences[-1]
    assert last.operation_type == "QUARANTINE" and last.reviewer == "[REDACTED:email]"
    assert last.reviewed_at is not None and skill.quarantine is not None
    assert email not in book_file.read_text(encoding="utf-8")
    released = skills("release", book_file, "context-00001", "--reason", "fixed upstream", "--by", "Ana Lopez")
    assert released.exit_code == 0, released.output
    assert Skillbook.load_from_file(book_file).require_skill("context-00001").occurrences[-1].reviewer == "Ana Lopez"


def test_the_decider_defaults_to_the_login_name_and_may_not_be_blank(
    book_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(getpass, "getuser", lambda: "bob")
    assert skills("quarantine", book_file, "harness-00001", "--reason", "flaky").exit_code == 0
    assert Skillbook.load_from_file(book_file).require_skill("harness-00001").occurrences[-1].reviewer == "bob"
    before = book_file.read_bytes()
    blank = skills("release", book_file, "harness-00001", "--reason", "ok", "--by", "  ")
    assert blank.exit_code == 2 and "--by is blank" in blank.output and book_file.read_bytes() == before


def test_a_reviewer_name_in_any_commit_passes_the_skillbook_redaction_sink() -> None:
    book = Skillbook()
    source = InsightSource(**{**SOURCE.to_dict(), "reviewer": "carl@example.org", "reviewed_at": "2026-12-01"})
    skill = book.add_skill("harness", "The runner retries slowly.", ["rate_limit"], insight_source=source)
    assert skill.occurrences[-1].reviewer == "[REDACTED:email]"
