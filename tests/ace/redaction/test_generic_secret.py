"""Issue 37: a secret-named key with a random value is redacted whatever its provider (fail on e5bcddd)."""

from __future__ import annotations

import string
from pathlib import Path

import pytest
from _planted_secrets import GENERIC_FORMS, GENERIC_SECRET
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from ace.redaction import RedactionSession, Redactor
from ace.redaction._generic import GENERIC_MIN_CHARS, GENERIC_MIN_ENTROPY, random_value, shannon_entropy

REDACTOR = Redactor()
AWS_SECRET_39 = "wJalrXUtnFEMIK7MDENGbPxRfiCY9q2LmZ8ksTa"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (f"AWS_SECRET_ACCESS_KEY={AWS_SECRET_39}", "AWS_SECRET_ACCESS_KEY=[REDACTED:generic_secret#1]"),
        ("OPENAI_API_KEY=Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4zAb7cDe0fGh3i", "OPENAI_API_KEY=[REDACTED:generic_secret#1]"),
        (f"secret: {GENERIC_SECRET}", "secret: [REDACTED:generic_secret#1]"),
    ],
)
def test_the_issues_three_secrets_are_redacted(text: str, expected: str) -> None:
    redacted, findings = REDACTOR.redact(text)
    assert redacted == expected
    assert [f.kind for f in findings] == ["generic_secret"]


@pytest.mark.parametrize("form", GENERIC_FORMS)
def test_every_form_of_a_secret_named_key_is_redacted(form: str) -> None:
    text = form.format(v=GENERIC_SECRET)
    redacted, findings = REDACTOR.redact(text)
    assert redacted == form.format(v="[REDACTED:generic_secret#1]")
    assert [f.kind for f in findings] == ["generic_secret"]


@pytest.mark.parametrize(
    "text",
    [
        "max_tokens: 4096",
        "input_tokens=1234567890123456789",
        "author: John Smith",
        "token_type: bearer_access_token_v2",
        '"payment_id": "credit_card_4421486"',
        "session_token=2024-05-15T10:00:00",
        "oauth: a1b2c3d4e5f6a7b8c9d0",  # `auth` only starts a name
        "secret: remember to check the reservation carefully",
        "api_key: aaaaaaaa1aaaaaaaaaa",  # low entropy
        "auth_url: https://login.example.com/oauth2/authorize",
    ],
)
def test_ordinary_values_after_such_keys_are_kept(text: str) -> None:
    assert REDACTOR.redact(text) == (text, [])


def test_a_specific_kind_names_its_value_before_the_generic_one() -> None:
    aws = "wJalrXUtnFEMIK7MDENGbPxRfiCY9q2LmZ8ksTab"
    assert REDACTOR.redact(f"AWS_SECRET_ACCESS_KEY={aws}-x")[0] == "AWS_SECRET_ACCESS_KEY=[REDACTED:aws_secret_key#1]-x"
    assert REDACTOR.redact(f"DB_PASSWORD={GENERIC_SECRET}")[0] == "DB_PASSWORD=[REDACTED:password#1]"


def test_the_threshold_is_the_one_the_docs_state() -> None:
    assert (GENERIC_MIN_CHARS, GENERIC_MIN_ENTROPY) == (16, 3.0)
    assert random_value("a1b2c3d4e5f6a7b8")  # 16 characters, 4 bits
    assert not random_value("a1b2c3d4e5f6a7b")  # 15
    assert shannon_entropy("aaaaaaaa1aaaaaaaaaa") < GENERIC_MIN_ENTROPY
    assert not random_value("aaaaaaaa1aaaaaaaaaa")
    assert not random_value("abcdefghijklmnopqrstuvwxyz")  # no digit: a word
    assert "16 characters" in DOCS and "3.0 bits" in DOCS


VALUE_CHARS = string.ascii_letters + string.digits + "+/_-"
VALUES = st.text(alphabet=VALUE_CHARS, min_size=16, max_size=64)
BOUNDS = st.sampled_from(("", " ", "\n", ",", ";", '"', "'", "\t", "(", ")", "&", "=", "!"))
LEFT = st.text(alphabet=string.ascii_letters + string.digits + " ,;:!?()[]{}<>#*\t\n", max_size=30)


@settings(max_examples=300, deadline=None)
@given(
    form=st.sampled_from(GENERIC_FORMS),
    value=VALUES,
    before=LEFT,
    left=st.sampled_from(("", " ", "\n", "{", ",", "(", ";")),
    right=BOUNDS,
    after=LEFT,
)
def test_a_random_value_after_a_secret_named_key_is_redacted_at_any_boundary(
    form: str, value: str, before: str, left: str, right: str, after: str
) -> None:
    assume(random_value(value) and value not in before + after)
    assume(not (before[-1:].isalnum() and left == "" and form[0].isalnum()))  # `xsecret` is still a name: kept
    text = before + left + form.format(v=value) + right + after
    # With no boundary after it, the value runs on into `after`: that longer token is the value the text holds.
    run_on = after[: len(after) - len(after.lstrip(VALUE_CHARS))] if right == "" and form.endswith("{v}") else ""
    held = value + run_on
    assume(random_value(held))
    redacted, findings = REDACTOR.redact(text)
    assert value not in redacted
    assert findings


DOCS = (Path(__file__).resolve().parents[3] / "docs" / "redaction.md").read_text(encoding="utf-8")


@settings(max_examples=300, deadline=None)
@given(form=st.sampled_from(GENERIC_FORMS), value=VALUES, before=LEFT, after=LEFT)
def test_the_prefilter_never_calls_clean_a_text_holding_a_generic_secret(
    form: str, value: str, before: str, after: str
) -> None:
    text = before + " " + form.format(v=value) + " " + after
    found = REDACTOR._all_matches(text, RedactionSession())  # the full path, without the prefilter
    assert not (found and REDACTOR._prefilter.clean(text))
    assert bool(REDACTOR.find(text)) == bool(found)


def test_a_secret_named_key_of_a_structure_has_its_value_redacted() -> None:
    """Tool-call arguments as an object: `{"api_key": "<random>"}` is redacted like `api_key: <random>` in text, and
    ordinary values under such keys are kept."""
    secret = "Qm7fK2pLx9RtV4wZ8nB3cY6hJ1sD5gA0"
    data = {
        "arguments": {"api_key": secret, "password": "hunter2x", "max_tokens": "512", "key": "a plain sentence"},
        "content": f"my token: {secret}",
    }
    out, findings = Redactor().redact_data(data)
    assert secret not in str(out) and "hunter2x" not in str(out)
    assert out["arguments"]["api_key"].startswith("[REDACTED:generic_secret")
    assert out["arguments"]["api_key"] == out["content"].removeprefix("my token: ")  # one secret, one placeholder
    assert out["arguments"]["max_tokens"] == "512" and out["arguments"]["key"] == "a plain sentence"
    assert "$.arguments.api_key" in {f.path for f in findings}
