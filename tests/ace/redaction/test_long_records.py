"""Long records (a serve request's attribute texts, over `MAX_CHARS` joined): `redact_texts` searches only the texts
`Prefilter.unclean` leaves, and redacts exactly what the full redactor (`redact_data`, every detector on the whole
join) does, on random texts with planted secrets of every built-in kind among many clean ones."""

from __future__ import annotations

import dataclasses

from _planted_secrets import PLANTS, Planting, plantings
from hypothesis import given, settings
from hypothesis import strategies as st
from test_prefilter import ALPHABET, SKILL_TEXTS, SURROUNDINGS

from ace.redaction import NOT_IN_IDS, Redactor
from ace.redaction._prefilter import MAX_CHARS, Prefilter

REDACTOR = Redactor()
IDS = Redactor(detectors=tuple(d for d in REDACTOR.detectors if d.kind not in NOT_IN_IDS))
"""The detectors serve searches span ids and timestamps with (no card check)."""
TURN = (
    '{{"role":"user","parts":[{{"type":"text","content":"Change my flight {b} to tomorrow. Trace {n}."}}]}},'
    '{{"role":"assistant","parts":[{{"type":"tool_call","id":"c{n}","name":"get_reservation",'
    '"arguments":{{"reservation_id":"{b}"}}}}]}},{{"flights":[{{"flight":"HAT{n:03d}","date":"2024-05-01"}}]}}'
)
TEXTS = [
    *(TURN.format(b=f"{n * 7919 % 1_000_000:06X}", n=n) for n in range(30)),
    *(f"{text} ({n})" for n, text in enumerate(SKILL_TEXTS * 4)),
    *(f"key: gen_ai.{name}" for name in ("operation.name", "usage.input_tokens", "tool.call.arguments")),
]
ID_TEXTS = [
    *(f"{n * 0x9E3779B97F4A7C15F39CC0605CEDC835 % 16**32:032x}" for n in range(1, 40)),  # trace ids
    *(str(1_700_000_000_000_000_000 + n) for n in range(20)),
]
FILLER = TEXTS + ID_TEXTS
"""Clean texts as a serve request holds them: conversation turns with booking codes, dates and flight numbers,
prose with numbers, attribute keys, hex ids and nanosecond timestamps; over `MAX_CHARS` joined."""
assert len("\x00".join(FILLER)) > MAX_CHARS
NON_ASCII = [
    f"{text} [{n}]"
    for n, text in enumerate(
        [
            "L'agent doit confirmer la réservation HAT170 avant de modifier le vol du 15 mai à 15 h.",
            "代理应在更改航班之前确认预订，并先向用户询问预订编号 ZFA04Y。",
            "お客様の予約を確認してから、変更内容と料金を伝えてください。",
            "The flight ✈️ is booked 👍 for tomorrow 🙂 at 9:40, gate B12 🚪.",
            "Müller über Straße: größer als ٣ oder ０, Ж и ß.",
        ]
        * 30
    )
]
"""Clean texts beyond ASCII (accented Latin, CJK, emoji, digits of other scripts); over `MAX_CHARS` joined."""
assert len("\x00".join(NON_ASCII)) > MAX_CHARS


def full(redactor: Redactor, texts: list[str]) -> tuple[str, ...] | None:
    """What the full redactor makes of `texts` as one record: `redact_data` on the list, un-numbered."""
    clean, findings = redactor.redact_data(texts, numbered=False)
    return tuple(clean) if findings else None


RECORD = st.lists(
    st.one_of(plantings(SURROUNDINGS).map(lambda p: p.text), SURROUNDINGS, st.sampled_from([p.text for p in PLANTS])),
    max_size=4,
)


@settings(max_examples=300, deadline=None)
@given(
    planted=RECORD, at=st.lists(st.integers(0, len(FILLER)), min_size=4, max_size=4), other=st.sampled_from(["", "é"])
)
def test_a_long_record_is_redacted_exactly_as_the_full_redactor_does(
    planted: list[str], at: list[int], other: str
) -> None:
    texts = [f"{text}{other}" if i == 3 else text for i, text in enumerate(FILLER)]  # `é`: not ASCII, text by text
    for text, where in zip(planted, at, strict=False):
        texts.insert(where, text)
    for redactor in (REDACTOR, IDS):
        assert redactor.redact_texts(texts) == full(redactor, texts)


@settings(max_examples=200, deadline=None)
@given(planting=plantings(SURROUNDINGS), where=st.integers(0, len(FILLER)))
def test_the_texts_set_aside_hold_nothing_and_a_planted_secret_never_is(planting: Planting, where: int) -> None:
    texts = [*FILLER[:where], planting.text, *FILLER[where:]]
    left = REDACTOR._prefilter.unclean(texts)
    assert all(not REDACTOR.find(text) for text in texts if text not in left)
    found = bool(REDACTOR.find(planting.text))  # not always: `-4111 1111 1111 1111-0` is a longer number
    assert planting.text in left or not found
    expected = full(REDACTOR, texts)
    assert REDACTOR.redact_texts(texts) == expected and (expected is not None) == found


def test_clean_requests_leave_few_texts_to_the_detectors_and_extra_patterns_search_the_whole_join() -> None:
    assert REDACTOR.redact_texts(FILLER) is None
    assert REDACTOR._prefilter.unclean(TEXTS) == TEXTS[-3:]  # the `key: ...` texts (the generic secret's key word)
    assert IDS._prefilter.unclean(ID_TEXTS) == []
    extra = Redactor(extra_patterns={"employee_id": r"EMP-\d{6}"})
    assert not extra._builtin and REDACTOR._builtin and IDS._builtin
    texts = [*FILLER, "by EMP-123456"]
    assert extra.redact_texts(texts) == full(extra, texts) == (*FILLER, "by [REDACTED:employee_id]")


@settings(max_examples=200, deadline=None)
@given(
    planting=plantings(st.text(alphabet=ALPHABET + "预订確認お客様✈👍🙂", max_size=40)),
    where=st.integers(0, len(NON_ASCII)),
)
def test_a_secret_in_a_non_ascii_record_is_redacted_as_the_full_redactor_does(planting: Planting, where: int) -> None:
    texts = [*NON_ASCII[:where], planting.text, *NON_ASCII[where:]]
    for redactor in (REDACTOR, IDS):
        assert redactor.redact_texts(texts) == full(redactor, texts)
    if REDACTOR.find(planting.text):
        assert planting.text in REDACTOR._prefilter.unclean(texts)


def test_a_non_ascii_record_is_prescanned_as_a_whole_not_text_by_text() -> None:
    """Only the texts a gate opens in are looked at one by one, whatever their script (the shape's and the fold's
    UTF-8 offsets are mapped back to the texts)."""
    looked_at: list[str] = []

    @dataclasses.dataclass(frozen=True)
    class Counting(Prefilter):
        def clean(self, text: str) -> bool:
            looked_at.append(text)
            return super().clean(text)

    prefilter = Counting(**{f.name: getattr(REDACTOR._prefilter, f.name) for f in dataclasses.fields(Prefilter)})
    secrets = [
        "écrivez à jane.doe@example.com",
        "预订的 password=hunter22x 谢谢",
        "IBAN DE89 3704 0044 0532 0130 00 für Müller",
        "卡号 4111 1111 1111 1111 谢谢",
    ]
    texts = [*NON_ASCII[:50], *secrets, *NON_ASCII[50:]]
    assert prefilter.unclean(texts) == looked_at == secrets
    redacted = REDACTOR.redact_texts(texts)
    assert redacted is not None and redacted == full(REDACTOR, texts)
    assert [redacted[50 + i] for i in range(4)] == [
        "écrivez à [REDACTED:email]",
        "预订的 password=[REDACTED:password] 谢谢",
        "IBAN [REDACTED:iban] für Müller",
        "卡号 [REDACTED:card_number] 谢谢",
    ]
