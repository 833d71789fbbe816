"""Property-based tests: keyword normalisation and lossless save/load of arbitrary skillbooks."""

from __future__ import annotations

import re
import tempfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ace import InsightSource, Skillbook, SkillbookError, normalize_keywords
from ace.core.skill import MAX_KEYWORD_LENGTH

_LABEL = re.compile(r"^[\w.]+$")

keyword_lists = st.lists(st.text(max_size=30), max_size=8)


@given(keyword_lists)
def test_normalisation_is_idempotent_and_well_formed(raw: list[str]) -> None:
    try:
        out = normalize_keywords(raw)
    except SkillbookError:
        return
    assert out, "a successful normalisation never returns an empty list"
    assert normalize_keywords(out) == out
    assert len(set(out)) == len(out)
    for label in out:
        assert label == label.strip()
        assert _LABEL.match(label), label
        assert not label.startswith(("_", ".")) and not label.endswith(("_", "."))
        assert "__" not in label
        assert len(label) <= MAX_KEYWORD_LENGTH


@given(keyword_lists)
def test_normalisation_keeps_first_occurrence_order(raw: list[str]) -> None:
    try:
        out = normalize_keywords(raw)
    except SkillbookError:
        return
    singles: list[str] = []
    for r in raw:
        try:
            singles.extend(normalize_keywords([r]))
        except SkillbookError:
            continue
    assert out == list(dict.fromkeys(singles))


@given(st.lists(st.from_regex(r"[A-Za-z][A-Za-z0-9 _-]{0,20}", fullmatch=True), min_size=1, max_size=6))
def test_ordinary_labels_always_normalise(raw: list[str]) -> None:
    out = normalize_keywords(raw)
    assert all(label == label.lower() for label in out)


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (["Booking API"], ["booking_api"]),  # lower case, spaces to one underscore
        (["  Tau-Bench  "], ["tau_bench"]),  # trimmed; punctuation to underscore
        (["rate__limit", "a - b"], ["rate_limit", "a_b"]),  # runs of underscores collapse
        (["_cabin_class_", ".v2."], ["cabin_class", "v2"]),  # no leading or trailing _ or .
        (["api.v1.2", "Airline", "airline", "AIRLINE!"], ["api.v1.2", "airline"]),  # dots kept; de-duplicated
        (["réservation", "ÉTÉ"], ["réservation", "été"]),  # letters of any script are word characters
        (["!!!", "ok"], ["ok"]),  # a label with nothing left is dropped
    ],
)
def test_normalisation_by_example(raw: list[str], expected: list[str]) -> None:
    assert normalize_keywords(raw) == expected


def test_the_longest_label_is_kept_and_one_more_character_is_refused() -> None:
    assert normalize_keywords(["k" * MAX_KEYWORD_LENGTH]) == ["k" * MAX_KEYWORD_LENGTH]
    with pytest.raises(SkillbookError, match=f"too long \\({MAX_KEYWORD_LENGTH + 1} > {MAX_KEYWORD_LENGTH}"):
        normalize_keywords(["k" * (MAX_KEYWORD_LENGTH + 1)])
    assert MAX_KEYWORD_LENGTH == 40


@pytest.mark.parametrize("bad", [[], [""], "airline"])
def test_normalisation_errors_name_the_fix(bad: object) -> None:
    with pytest.raises(SkillbookError, match="keywords"):
        normalize_keywords(bad)


# Prose a skill may hold: no control, format (bidi), separator or surrogate characters except newline and tab.
prose = st.characters(exclude_categories=("Cc", "Cf", "Cs", "Zl", "Zp"), include_characters="\n\t")
text = st.text(prose, min_size=1, max_size=40).filter(lambda s: s.strip())
optional_text = st.none() | st.text(max_size=40)
sources = st.builds(
    InsightSource,
    trace_uid=st.text(max_size=20),
    source_system=st.text(max_size=20),
    trace_id=st.text(max_size=20),
    sample_question=optional_text,
    epoch=st.none() | st.integers(0, 1000),
    error_identification=optional_text,
    learning_text=optional_text,
)


@given(sources)
def test_insight_source_dict_round_trip(source: InsightSource) -> None:
    assert InsightSource.from_dict(source.to_dict()) == source


ops = st.lists(
    st.tuples(
        st.sampled_from(["add", "update", "tag", "remove", "embed", "purge"]),
        st.integers(0, 50),
        text,
        st.lists(st.from_regex(r"[a-z][a-z0-9_]{0,10}", fullmatch=True), min_size=1, max_size=4),
        st.sampled_from(["context", "harness"]),
        st.integers(-1, 1),
        sources,
    ),
    max_size=25,
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops, st.integers(1, 16))
def test_save_load_round_trip_of_random_histories(history: list[tuple[object, ...]], dim: int) -> None:
    sb = Skillbook()
    sb.embedding_model = "m"
    rng = np.random.default_rng(0)
    for kind, pick, words, keywords, section, delta, source in history:
        assert isinstance(words, str) and isinstance(pick, int) and isinstance(source, InsightSource)
        ids = [s.id for s in sb.skills()]
        target = ids[pick % len(ids)] if ids else None
        if kind == "add" or target is None:
            sb.add_skill(str(section), words, keywords, words, insight_source=source)  # type: ignore[arg-type]
        elif kind == "update":
            sb.update_skill(target, words, keywords=keywords, insight_source=source)  # type: ignore[arg-type]
        elif kind == "tag":
            sb.tag_skill(target, int(delta), insight_source=source)  # type: ignore[call-overload]
        elif kind == "remove":
            sb.remove_skill(target, words, insight_source=source)
        elif kind == "embed":
            sb.set_embedding(target, rng.standard_normal(dim).astype(np.float32))
        else:
            sb.purge(target)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "skillbook.json"
        sb.save_to_file(path)
        loaded = Skillbook.load_from_file(path)
    assert loaded.to_dict() == sb.to_dict()
    assert loaded.operations == sb.operations
    for a, b in zip(sb.skills(include_inactive=True), loaded.skills(include_inactive=True), strict=True):
        assert a.occurrences == b.occurrences
        assert (a.embedding is None) == (b.embedding is None)
        if a.embedding is not None and b.embedding is not None:
            assert a.embedding.tobytes() == b.embedding.tobytes()
