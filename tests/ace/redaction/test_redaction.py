"""The redactor: what each detector finds and what it leaves alone, placeholders, the allow-list, extra patterns."""

from __future__ import annotations

import re

import pytest

from ace.redaction import (
    PLACEHOLDER,
    RedactionConfigError,
    RedactionSession,
    Redactor,
    count_kinds,
    iban_valid,
    id_placeholder,
    luhn_valid,
    mask,
)

FOUND = [
    (
        "openai_key",
        "key sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4zAb7cDe0fGh3i here",
        "sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4zAb7cDe0fGh3i",
    ),
    ("openai_key", "legacy sk-Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z", "sk-Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z"),
    (
        "anthropic_key",
        "sk-ant-api03-Zy9xWv8uTs7rQp6oNm5lKj4iHg3fEd2cBa1-QQ",
        "sk-ant-api03-Zy9xWv8uTs7rQp6oNm5lKj4iHg3fEd2cBa1-QQ",
    ),
    ("aws_access_key", "id=AKIAQ3EGTN7PLMW4ZX2B;", "AKIAQ3EGTN7PLMW4ZX2B"),
    (
        "aws_secret_key",
        'aws_secret_access_key = "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"',
        "wJalrXUtnFEMIK7MDENGbPxRfiCY9q2LmZ8ksTab",
    ),
    ("aws_secret_key", "secret: wJalrXUtnFEMI/K7MDENG/bPxRfiCY9q2LmZ8ksT.", "wJalrXUtnFEMI/K7MDENG/bPxRfiCY9q2LmZ8ksT"),
    ("google_api_key", "AIzaSyD-9tSrke72PouQMnMX-a7eZSW0jkFMBWY", "AIzaSyD-9tSrke72PouQMnMX-a7eZSW0jkFMBWY"),
    ("github_token", "ghp_R4nd0mT0k3nV4lu3F0rT3st1ngPurp0s3sXY", "ghp_R4nd0mT0k3nV4lu3F0rT3st1ngPurp0s3sXY"),
    (
        "github_token",
        "github_pat_11ABCDEFG0123456789_abcdefghijKLMNOP",
        "github_pat_11ABCDEFG0123456789_abcdefghijKLMNOP",
    ),
    ("slack_token", "xoxb-123456789012-1234567890123-AbCdEfGhIjKl", "xoxb-123456789012-1234567890123-AbCdEfGhIjKl"),
    ("stripe_key", "sk_live_4eC39HqLyjWDarjtT1zdp7dc", "sk_live_4eC39HqLyjWDarjtT1zdp7dc"),
    (
        "jwt",
        "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
        "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
    ),
    ("bearer_token", "Authorization: Bearer abcdef0123456789abcdef0123456789", "abcdef0123456789abcdef0123456789"),
    ("basic_auth", "Authorization: Basic YWxhZGRpbjpvcGVuc2VzYW1l", "YWxhZGRpbjpvcGVuc2VzYW1l"),
    ("url_credentials", "postgres://admin:s3cret@db.example.com:5432/app", "admin:s3cret"),
    ("email", "write to Jane.Doe+ace@mail.example.org.", "Jane.Doe+ace@mail.example.org"),
    ("phone", "call +1 415 555 0132 now", "+1 415 555 0132"),
    ("phone", "or (415) 555-0132", "(415) 555-0132"),
    ("card_number", "card 4111-1111-1111-1111 exp", "4111-1111-1111-1111"),
    ("iban", "IBAN DE89 3704 0044 0532 0130 00 ok", "DE89 3704 0044 0532 0130 00"),
    # audit 13 #9
    ("password", "db password=hunter22 ok", "hunter22"),
    ("password", 'PASSWD: "s3cr3t!x"', "s3cr3t!x"),
    ("phone", "ring 020 7946 0958 today", "020 7946 0958"),
    ("phone", "Manchester 0161 496 0000.", "0161 496 0000"),
    ("card_number", "card 4111.1111.1111.1111 exp", "4111.1111.1111.1111"),
    (
        "base64_key",
        "token: c2stcHJvai1BYjNkRWY2aElqOWtMbTJuT3A1cVJzOHRVdjF3WHk0eg==",
        "c2stcHJvai1BYjNkRWY2aElqOWtMbTJuT3A1cVJzOHRVdjF3WHk0eg==",
    ),
    ("base64_key", "aws QUtJQUlPU0ZPRE5ON0VYQU1QTEU", "QUtJQUlPU0ZPRE5ON0VYQU1QTEU"),
]


@pytest.mark.parametrize(("kind", "text", "value"), FOUND, ids=[f"{k}-{i}" for i, (k, _, _) in enumerate(FOUND)])
def test_each_detector_finds_its_kind_and_replaces_only_the_value(kind: str, text: str, value: str) -> None:
    redacted, findings = Redactor().redact(text)
    assert [(f.kind, text[f.start : f.end]) for f in findings] == [(kind, value)]
    assert redacted == text.replace(value, f"[REDACTED:{kind}#1]")


def test_a_private_key_block_is_replaced_whole_even_without_its_end_line() -> None:
    block = (
        "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\nAAAEbm9uZQ==\n-----END OPENSSH PRIVATE KEY-----"
    )
    assert Redactor().redact(f"key:\n{block}\nthanks")[0] == "key:\n[REDACTED:private_key#1]\nthanks"
    cut = "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEAvQ7pXk2Jb9Yw"
    assert Redactor().redact(cut)[0] == "[REDACTED:private_key#1]"


LEFT_ALONE = [
    "reservation ZFA04Y for user mia_li_3668 on flight HAT001 from JFK to LAX on 2024-05-15",
    "total $1,234.56 paid with credit_card_7815826 and gift_card_4421",
    "task-12-trial-0 sk-learn-compatible-estimators-library",
    "timestamp 1700000000123 and 4111 1111 1111 1112 (fails Luhn)",
    "DE88 3704 0044 0532 0130 00 (fails mod-97)",
    "sha1 2fd4e1c67a2d28fced849ee1bb76e7391b93eb12 and a uuid 123e4567-e89b-12d3-a456-426614174000",
    "dates 2024-05-15, 05/15/2024, version 1.2.3, price 415.55, order 555-0132",
    "span 0af7651916cd43dd8448eb211c80319c",
    "[REDACTED:email#1] and [REDACTED:card_number]",
    "the password is wrong; reset your password: see the pwd command",
    "amounts 0.5 1.25 100 250 and 020 7946 (too short), ids 00123 4567 89 (not a phone)",
    "base64 of text: c2stbGVhcm4gaXMgYSBsaWJyYXJ5IGZvciBtYWNoaW5lIGxlYXJuaW5n",
]


@pytest.mark.parametrize("text", LEFT_ALONE)
def test_ids_numbers_dates_and_placeholders_are_left_alone(text: str) -> None:
    assert Redactor().redact(text) == (text, [])


def test_the_same_value_gets_the_same_number_across_a_session_and_spellings() -> None:
    session = RedactionSession()
    redactor = Redactor()
    first, _ = redactor.redact("from a@x.org to b@x.org, card 4111 1111 1111 1111", session=session)
    second, _ = redactor.redact("again A@X.ORG, 4111111111111111", session=session)
    assert first == "from [REDACTED:email#1] to [REDACTED:email#2], card [REDACTED:card_number#1]"
    assert second == "again [REDACTED:email#1], [REDACTED:card_number#1]"
    assert redactor.redact_text("a@x.org b@x.org") == "[REDACTED:email] [REDACTED:email]"


def test_redacting_twice_changes_nothing() -> None:
    once = Redactor().redact_text("key AKIAQ3EGTN7PLMW4ZX2B mail a@x.org card 4111 1111 1111 1111")
    assert Redactor().redact(once) == (once, [])
    assert all(PLACEHOLDER.fullmatch(p) for p in once.split() if p.startswith("[REDACTED"))


def test_a_bare_aws_secret_is_found_once_its_key_id_was_seen_in_the_session() -> None:
    secret = "wJalrXUtnFEMIK7MDENGbPxRfiCY9q2LmZ8ksTab"  # no / or +, no keyword: alone it is not a secret
    assert Redactor().redact(f"value {secret}")[1] == []
    session = RedactionSession()
    Redactor().redact("id AKIAQ3EGTN7PLMW4ZX2B", session=session)
    assert Redactor().redact(f"value {secret}", session=session)[0] == "value [REDACTED:aws_secret_key#1]"


def test_the_structure_walker_redacts_ids_stably_and_names_paths() -> None:
    trace = {
        "trace_uid": "bot:a@x.org",
        "question": "mail a@x.org",
        "messages": [{"role": "user", "content": "card 4111 1111 1111 1111 or a@x.org"}, {"n": 4111111111111111}],
        "reward": 1.0,
    }
    out, findings = Redactor().redact_data(trace, skip_keys=frozenset({"trace_uid"}))
    stable = id_placeholder("email", "a@x.org")
    assert re.fullmatch(r"\[REDACTED:email#\d{8}\]", stable)
    assert out == {
        "trace_uid": f"bot:{stable}",  # audit 13 #7: an id is redacted too, the same way in every sink
        "question": "mail [REDACTED:email#1]",
        "messages": [
            {"role": "user", "content": "card [REDACTED:card_number#1] or [REDACTED:email#1]"},
            {"n": "[REDACTED:card_number#1]"},
        ],
        "reward": 1.0,
    }
    assert [(f.path, f.kind) for f in findings] == [
        ("$.trace_uid", "email"),
        ("$.question", "email"),
        ("$.messages[0].content", "card_number"),
        ("$.messages[0].content", "email"),
        ("$.messages[1].n", "card_number"),
    ]
    assert count_kinds(findings) == {"card_number": 2, "email": 3}
    assert trace["question"] == "mail a@x.org"  # the input is not changed
    again = Redactor().redact_data(out, numbered=False, skip_keys=frozenset({"trace_uid"}))
    assert again == (out, [])  # a sink that redacts the redacted trace changes nothing, the id included


def test_secret_keys_are_redacted_and_ids_are_not_searched_for_cards() -> None:
    key = "sk-proj-" + "Ab1Cd2Ef3Gh4Ij5Kl6Mn7Op8"
    data = {"metadata": {key: 1, "note": {key: "x"}}, "span_id": "4111111111111111", "trace_id": "u@example.com"}
    out, findings = Redactor().redact_data(data, numbered=False, skip_keys=frozenset({"span_id", "trace_id"}))
    shown = id_placeholder("openai_key", key)
    assert out == {
        "metadata": {shown: 1, "note": {shown: "x"}},
        "span_id": "4111111111111111",  # 16 decimal digits that pass Luhn: a span id, not a card
        "trace_id": id_placeholder("email", "u@example.com"),
    }
    assert key not in repr(out) and all(key not in f.path for f in findings)
    assert [(f.path, f.kind) for f in findings] == [
        ("$.metadata", "openai_key"),
        ("$.metadata.note", "openai_key"),
        ("$.trace_id", "email"),
    ]
    assert Redactor().redact_data({"a": "no secret"}) == ({"a": "no secret"}, [])

    once = Redactor()  # keys and ids are remembered: the second pass gives the same result and the same findings
    first = once.redact_data(data, numbered=False, skip_keys=frozenset({"span_id", "trace_id"}))
    assert (
        once.redact_data(data, numbered=False, skip_keys=frozenset({"span_id", "trace_id"}))
        == first
        == (
            out,
            findings,
        )
    )


def test_the_allow_list_and_extra_patterns_apply() -> None:
    redactor = Redactor(
        extra_patterns={"employee_id": r"EMP-\d{6}", "ticket": r"ticket #(\d{5})"},
        allow=["support@airline.example"],
        allow_patterns=[r".*@test\.example"],
    )
    text = "EMP-123456 wrote from support@airline.example, qa@test.example and a@x.org about ticket #12345"
    assert redactor.redact(text)[0] == (
        "[REDACTED:employee_id#1] wrote from support@airline.example, qa@test.example and [REDACTED:email#1] "
        "about ticket #[REDACTED:ticket#1]"
    )


@pytest.mark.parametrize(
    ("patterns", "message"),
    [
        ({"Bad Name": "x"}, "must be lowercase letters"),
        ({"ok": "("}, "not a valid regular expression"),
        ({"ok": "a*"}, "matches empty text"),
    ],
)
def test_an_unusable_extra_pattern_is_refused_with_the_fix(patterns: dict[str, str], message: str) -> None:
    with pytest.raises(RedactionConfigError, match=message):
        Redactor(extra_patterns=patterns)


def test_checks_and_mask() -> None:
    assert luhn_valid("4111111111111111") and not luhn_valid("4111111111111112")
    assert iban_valid("GB82 WEST 1234 5698 7654 32") and not iban_valid("GB82 WEST 1234 5698 7654 33")
    assert mask("sk-proj-abcdef") == "sk-p…[14 chars]"
    assert all(f.preview.endswith("chars]") for f in Redactor().find("a@x.org AKIAQ3EGTN7PLMW4ZX2B"))
