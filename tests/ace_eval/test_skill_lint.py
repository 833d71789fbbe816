"""Degenerate skills: named with every reason, warned about by `ace-eval verify`, failed only with --strict."""

from __future__ import annotations

from pathlib import Path

import pytest
from _run_support import SOURCE, good_book, write_run
from click.testing import CliRunner

from ace import Skillbook
from ace_eval.commands.verify import skill_warnings, verify
from ace_eval.skill_lint import degenerate_reasons, degenerate_skills


def book_with_15() -> Skillbook:
    """The skill SmolLM2 learned on real traces: issue, insight and keyword all "15.0"."""
    book = good_book()
    book.add_skill("context", "15.0", ["15.0"], "15.0", insight_source=SOURCE)
    return book


def test_the_15_skill_is_degenerate_for_every_reason() -> None:
    skill = book_with_15().skills()[-1]
    assert degenerate_reasons(skill) == [
        "issue and insight are the same text",
        "issue is numbers and punctuation only ('15.0')",
        "insight is numbers and punctuation only ('15.0')",
        "every keyword is numbers only (15.0)",
    ]


@pytest.mark.parametrize(
    ("issue", "insight", "keywords", "expected"),
    [
        (
            "Wrong card refunded.",
            "Ask which card.",
            ["refund"],
            ["issue has under 4 words ('Wrong card refunded.')", "insight has under 4 words ('Ask which card.')"],
        ),
        (
            "Cancels a basic economy booking.",
            "cancels a basic  economy booking",
            ["cancel"],
            ["issue and insight are the same text"],
        ),
        (
            "update_reservation_flights charged the first card",
            "Ask which payment method",
            ["2024", "payment"],
            ["keywords are numbers only (2024)"],
        ),
        ("update_reservation_flights charged the first card", "Ask which payment method", ["payment"], []),
    ],
)
def test_each_rule(issue: str, insight: str, keywords: list[str], expected: list[str]) -> None:
    book = Skillbook()
    skill = book.add_skill("context", issue, keywords, insight, insight_source=SOURCE)
    assert degenerate_reasons(skill, min_words=4) == expected


def test_harness_skill_without_insight_and_removed_skills() -> None:
    book = Skillbook()
    harness = book.add_skill("harness", "The runner retries 429s slowly.", ["rate_limit"], insight_source=SOURCE)
    removed = book.add_skill("context", "15.0", ["15.0"], "15.0", insight_source=SOURCE)
    book.remove_skill(removed.id, "degenerate")
    assert degenerate_reasons(harness) == []
    assert degenerate_skills(book.skills(include_inactive=True)) == []
    with pytest.raises(ValueError, match="min_words must be at least 1"):
        degenerate_reasons(harness, min_words=0)


def test_verify_warns_per_degenerate_skill_and_still_passes(tmp_path: Path) -> None:
    folder = write_run(tmp_path / "run", book_with_15())
    result = CliRunner().invoke(verify, [str(folder)])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert sum(line.startswith("PASS") for line in lines) == 9
    warns = [line for line in lines if line.startswith("WARN")]
    assert warns == [
        "WARN  context-00002 is degenerate: issue and insight are the same text; issue is numbers and punctuation "
        "only ('15.0'); insight is numbers and punctuation only ('15.0'); every keyword is numbers only (15.0)"
    ]
    assert lines[-1].startswith("verify: all 9 checks passed; 1 degenerate skill for")
    assert "--strict makes them fail" in lines[-1]


def test_verify_strict_fails_on_degenerate_skills(tmp_path: Path) -> None:
    folder = write_run(tmp_path / "run", book_with_15())
    result = CliRunner().invoke(verify, [str(folder), "--strict"])
    assert result.exit_code == 1
    assert "verify: 0 of 9 checks failed; 1 degenerate skill" in result.output
    assert "(--strict)" in result.output


def test_verify_strict_passes_a_good_run_and_min_words_is_an_option(tmp_path: Path) -> None:
    folder = write_run(tmp_path / "run", good_book())
    assert CliRunner().invoke(verify, [str(folder), "--strict"]).exit_code == 0
    # "Cancels without confirmation." has 3 words: degenerate only when 4 are required
    short = CliRunner().invoke(verify, [str(folder), "--strict", "--min-words", "4"])
    assert short.exit_code == 1 and "context-00001 is degenerate: issue has under 4 words" in short.output
    assert [w.skill_id for w in skill_warnings(folder / "skillbook.json", min_words=4)] == ["context-00001"]
    assert skill_warnings(tmp_path / "nowhere") == []
