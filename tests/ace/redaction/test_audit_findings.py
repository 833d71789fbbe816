"""Issue 24's redaction findings: keyword forms, boundaries, ids built from e-mails, the US SSN (fail on 6bc720a)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from _planted_secrets import (
    AWS_KEYWORD_FORMS,
    AWS_SECRET,
    AWS_SECRET_SLASHED,
    BOUNDARIES,
    PASSWORD,
    PASSWORD_FORMS,
    PLANTS,
    Plant,
)

from ace.redaction import Redactor, id_placeholder
from ace.redaction.scan import ID_KEYS, scan_path


@pytest.mark.parametrize("form", AWS_KEYWORD_FORMS)
def test_an_aws_secret_key_is_found_after_its_keyword_in_every_form(form: str) -> None:
    redacted, findings = Redactor().redact(form.format(v=AWS_SECRET))
    assert redacted == form.format(v="[REDACTED:aws_secret_key#1]")
    assert [f.kind for f in findings] == ["aws_secret_key"]


@pytest.mark.parametrize("form", PASSWORD_FORMS)
def test_a_password_is_found_after_its_keyword_in_every_form(form: str) -> None:
    assert Redactor().redact(form.format(v=PASSWORD))[0] == form.format(v="[REDACTED:password#1]")


def test_an_aws_secret_key_in_a_dotenv_file_is_found_by_scan(tmp_path: Path) -> None:
    env = tmp_path / ".env"
    env.write_text(f"AWS_ACCESS_KEY_ID=AKIAQ3EGTN7PLMW4ZX2B\nexport AWS_SECRET_ACCESS_KEY={AWS_SECRET}\n")
    assert [(loc.line, loc.kind) for loc in scan_path(env).locations] == [(1, "aws_access_key"), (2, "aws_secret_key")]


@pytest.mark.parametrize(
    ("text", "redacted"),
    [
        ("stopped early on user-x.y@mail.io-trial-0", "stopped early on [REDACTED:email#1]-trial-0"),
        ("a@b.com_3 and a@b.com-4", "[REDACTED:email#1]_3 and [REDACTED:email#1]-4"),
        ("id .user@mail.io.", "id .[REDACTED:email#1]."),
    ],
)
def test_an_email_followed_by_a_dash_or_underscore_is_found(text: str, redacted: str) -> None:
    assert Redactor().redact(text)[0] == redacted


def test_an_id_built_from_an_email_keeps_its_suffix_and_loses_the_address(tmp_path: Path) -> None:
    trace = {"trace_id": "user-x.y@mail.io-trial-0", "user-x.y@mail.io_3": "ok", "messages": ["hi user-x.y@mail.io"]}
    redacted, findings = Redactor().redact_data(trace, skip_keys=ID_KEYS)
    placeholder = id_placeholder("email", "user-x.y@mail.io")
    assert redacted == {
        "trace_id": f"{placeholder}-trial-0",
        f"{placeholder}_3": "ok",
        "messages": ["hi [REDACTED:email#1]"],
    }
    assert sorted(f.path for f in findings) == ["$", "$.messages[0]", "$.trace_id"]
    traces = tmp_path / "traces.jsonl"
    traces.write_text(json.dumps(trace) + "\n")
    assert sorted(loc.json_path for loc in scan_path(traces).locations) == ["$", "$.messages[0]", "$.trace_id"]


@pytest.mark.parametrize(
    "text",
    ["536-22-8145", "ssn: 536-22-8145.", "SSN 536228145", "536 22 8145", "id_536228145", "ssn=536-22-8145-x"],
)
def test_a_us_social_security_number_is_found_in_each_spelling(text: str) -> None:
    findings = Redactor().find(text)
    assert [(f.kind, text[f.start : f.end].replace("-", "").replace(" ", "")) for f in findings] == [
        ("ssn", "536228145")
    ]


def test_the_spellings_of_one_ssn_get_one_placeholder_and_an_integer_one_is_found() -> None:
    redactor = Redactor()
    assert redactor.redact("536-22-8145 = 536228145")[0] == "[REDACTED:ssn#1] = [REDACTED:ssn#1]"
    assert redactor.redact_data({"ssn": 536228145})[0] == {"ssn": "[REDACTED:ssn#1]"}


@pytest.mark.parametrize(
    "text",
    [
        "000-22-8145, 666-22-8145, 900-22-8145, 999-22-8145",  # areas the SSA never issues
        "536-00-8145, 536-22-0000, 000228145, 536000145",  # group 00, serial 0000
        "reservation ZFA04Y flight HAT123 on 2024-05-15 for $1,234.56, payment credit_card_7815826",
        "amount 536228145.5, version 1.536228145, 5362281450, 1536228145, 536-22-81456, 536-22-8145-7",
        "hash e73afad4d201deb426303159f08, timestamp 1700000000123, span 0af7651916cd43dd8448eb211c80319c",
    ],
)
def test_numbers_that_are_no_ssn_are_left_alone(text: str) -> None:
    assert Redactor().redact(text) == (text, [])


def test_file_paths_are_not_aws_secret_keys_but_a_key_between_path_segments_is() -> None:
    paths = "src/Main1.java path/To/file9 a/b/C1 /Users/Ann2/Library/x"
    assert Redactor().redact(paths) == (paths, [])
    text = f"s3://bucket/{AWS_SECRET_SLASHED}/part-0"
    assert Redactor().redact(text)[0] == "s3://bucket/[REDACTED:aws_secret_key#1]/part-0"


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("order 2024-05-15-4111111111111111", "4111111111111111"),
        ("card=12-5500000000000004", "5500000000000004"),
        ("call_+1 415 555 0132-ext", "+1 415 555 0132"),
        ("ph.415-555-0132_home", "415-555-0132"),
    ],
)
def test_a_number_after_or_before_an_id_part_is_found(text: str, value: str) -> None:
    findings = Redactor().find(text)
    assert [text[f.start : f.end] for f in findings] == [value]


@pytest.mark.parametrize("plant", PLANTS, ids=[f"{p.kind}-{i}" for i, p in enumerate(PLANTS)])
def test_every_kind_is_found_at_every_boundary(plant: Plant) -> None:
    redactor = Redactor()
    missed = []
    for left in BOUNDARIES:
        for right in BOUNDARIES:
            text = f"ab{left}{plant.text}{right}ab"
            redacted, findings = redactor.redact(text)
            if plant.secret in redacted or plant.kind not in {f.kind for f in findings}:
                missed.append(text)
    assert missed == []
