"""The prefilter: it never calls a text clean that the detectors find something in, and it does call prose clean.

The fast path (`Redactor._matches`: prefilter, then the detectors) is compared with the full path
(`Redactor._all_matches`: every detector's gate and pattern on every text) on texts with a secret of every kind
planted at random boundaries, on random texts, and on texts of several strings redacted as one.
"""

from __future__ import annotations

import re
import string

import pytest
from _planted_secrets import AWS_SECRET, PLANTS, Planting, plantings
from hypothesis import given, settings
from hypothesis import strategies as st

from ace.redaction import Detector, RedactionSession, Redactor
from ace.redaction._prefilter import MAX_CHARS, Prefilter, literal_pattern, split_literals

REDACTOR = Redactor()
OTHER_DIGITS = "٠١٢٣٤٥٦٧٨٩０５"  # Arabic-Indic and full-width digits: `\d` matches them, the shapes do not
ALPHABET = string.ascii_letters + string.digits + " ,;:!?()[]{}<>#*\t\n-_./=+@\"'\\" + OTHER_DIGITS + "éßЖ\x00"
SURROUNDINGS = st.text(alphabet=ALPHABET, max_size=40)
# the separators and pieces that the gates look at: runs of digits, capitals, base64 and `/`, `(000)`
PIECES = st.sampled_from(["4111", "0000", "415", "(415)", "555-0132", "GB82", "WEST", "AKIA", "/", "+", "=", "@", ":"])


def agree(text: str) -> None:
    """The fast and the full path find the same; the prefilter says "clean" only when the full path finds nothing."""
    full = REDACTOR._all_matches(text, RedactionSession())
    assert REDACTOR._matches(text, None) == full
    if full:
        assert not REDACTOR._prefilter.clean(text), text


@settings(max_examples=400, deadline=None)
@given(planting=plantings(SURROUNDINGS))
def test_the_prefilter_never_hides_a_planted_secret(planting: Planting) -> None:
    agree(planting.text)


@settings(max_examples=400, deadline=None)
@given(st.lists(st.one_of(SURROUNDINGS, PIECES, st.sampled_from([p.text for p in PLANTS])), max_size=8))
def test_the_fast_and_the_full_path_agree_on_random_texts(parts: list[str]) -> None:
    agree("".join(parts))
    agree(" ".join(parts))


@settings(max_examples=200, deadline=None)
@given(st.lists(st.one_of(SURROUNDINGS, st.sampled_from([p.text for p in PLANTS]), st.none()), max_size=5))
def test_redact_texts_redacts_a_records_texts_as_redact_data_does(texts: list[str | None]) -> None:
    present = [t for t in texts if t is not None]
    clean, findings = REDACTOR.redact_data(present, numbered=False)
    replaced = iter(clean)
    expected = tuple(None if t is None else next(replaced) for t in texts) if findings else None
    assert REDACTOR.redact_texts(texts) == expected
    assert REDACTOR.redact_texts(tuple(texts), remember=True) == expected
    assert REDACTOR.redact_texts(tuple(texts), remember=True) == expected  # remembered


def test_a_detector_waiting_on_a_kind_the_session_saw_still_searches_a_clean_text() -> None:
    text = f"and the other one is {AWS_SECRET}."
    assert REDACTOR._prefilter.clean(text)  # a bare 40-character secret: no gate of the first detectors opens
    assert REDACTOR.redact(text)[1] == []
    session = RedactionSession()
    REDACTOR.redact("id AKIAQ3EGTN7PLMW4ZX2B", session=session)
    assert [f.kind for f in REDACTOR.redact(text, session=session)[1]] == ["aws_secret_key"]


SKILL_TEXTS = [
    "Issue 12: in tau-airline's update_reservation_flights the agent skipped confirmation step 12.",
    "Before calling the update tool, list the changes and the price, and wait for a yes (12).",
    "Confirm the fare difference ($120.50) for 2 passengers on flight HAT170 before 2024-05-15 15:00 EST.",
    "Reservation ZFA04Y: the user asked to cancel within 24 hours; refund 3 bags to the original payment method.",
    "Gold members get 3 free checked bags per passenger in economy, regular members get 1, and/or a credit.",
    "ka2 ka0 ka0 lo12 mi3 ze299 ka0 nu45\x00ka7 ka1 pe20\x00topic_3\x00topic_0",
]


def test_ordinary_skill_texts_are_clean_and_a_long_text_is_left_to_the_detectors() -> None:
    """Prose with numbers, amounts, dates, flight numbers and ids takes the fast path; a whole trace does not."""
    for text in SKILL_TEXTS:
        assert REDACTOR._prefilter.clean(text), text
    long = " ".join(SKILL_TEXTS[:2]) * (MAX_CHARS // 150)
    assert len(long) > MAX_CHARS and not REDACTOR._prefilter.clean(long) and REDACTOR.find(long) == []


def _d(kind: str, pattern: str, *triggers: str, **gates: str | tuple[str, ...]) -> Detector:
    return Detector(kind=kind, pattern=re.compile(pattern), triggers=triggers, **gates)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("detector", "found", "clean"),
    [
        (_d("word", r"zebra\d", "zebra"), "a zebra7 here", "a horse7 here"),
        (_d("shaped", r"pin-\d{4}", "pin-", shapes=("-0000",)), "pin-1234", "pin-abcd and 1234"),
        (_d("digits", r"\d{5}", *"0123456789", shapes=("00000",)), "zip 90210", "zip 9021"),
        (_d("digits", r"N\d\d", *"0123456789"), "N42", "n42"),
        (_d("shape", r"Q{3}", shape_pattern=r"AAA"), "QQQ", "QQ"),
        (_d("shape", r"(a)x\1", shape_pattern=r"(a)x\1"), "axa", "axb"),
        (_d("shape", r"a(a)\1", shape_pattern=r"a(a)\1"), "aaa", "aab"),
        (_d("shape", r"(?i)ox", shape_pattern=r"(?i)OX"), "ox", "xo"),
        (_d("bare", r"qz+q"), "qzzq", "qq"),
    ],
)
def test_the_prefilter_of_any_detector_sees_what_it_finds(detector: Detector, found: str, clean: str) -> None:
    redactor = Redactor(detectors=(detector,), allow_patterns=())
    assert redactor.find(found) and not redactor._prefilter.clean(found)
    assert not redactor.find(clean) and redactor._prefilter.clean(clean)


def test_extra_patterns_are_searched_whatever_the_text() -> None:
    redactor = Redactor(extra_patterns={"employee_id": r"EMP-\d{6}"})
    assert [f.kind for f in redactor.find("by EMP-123456 today")] == ["employee_id"]
    assert redactor._prefilter.patterns and not redactor._prefilter.clean("EMP-123456")


def test_literals_start_at_their_rarest_character_and_a_longer_literal_is_left_out() -> None:
    rare, common = split_literals(["aws", "sk-", "sk-ant-", "@", "ecret", "earer"])
    assert (rare, common) == (["@", "aws", "sk-"], ["earer", "ecret"])
    pattern = literal_pattern(rare)
    assert pattern == r"@|w(?:(?<=aw)s)|\-(?:(?<=sk\-))"
    found = re.compile(pattern)
    assert [bool(found.search(t)) for t in ("an aws key", "sk-ant-x", "a@b", "awesome sk ant")] == [1, 1, 1, 0]
    assert Prefilter.of(()).clean("anything at all")


def test_the_sink_remembers_a_bounded_number_of_records() -> None:
    redactor = Redactor()
    for i in range(600):
        redactor.redact_texts([f"question {i}", "learning"], remember=True)
    redactor.redact_texts(["x" * 10_000], remember=True)  # too long to keep
    assert 0 < len(redactor._texts) <= 256 and ("x" * 10_000,) not in redactor._texts
    assert redactor.redact_texts(["mail olivia@example.com"], remember=True) == ("mail [REDACTED:email]",)
    assert redactor.redact_texts(["mail olivia@example.com"], remember=True) == ("mail [REDACTED:email]",)
