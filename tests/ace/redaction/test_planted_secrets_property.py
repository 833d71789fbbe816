"""Property: a secret of any kind, planted in random text at a random boundary, is redacted and `scan` finds it."""

from __future__ import annotations

import json
import string

import pytest
from _planted_secrets import DIGIT_KINDS, PLANTS, Plant, Planting, plantings
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from ace.redaction import Redactor
from ace.redaction.scan import ID_KEYS, scan_path

REDACTOR = Redactor()
SURROUNDINGS = st.text(alphabet=string.ascii_letters + string.digits + " ,;:!?()[]{}<>#*\t\n-_./=\"'\\", max_size=40)


def test_the_plants_cover_at_least_fourteen_kinds() -> None:
    assert len({p.kind for p in PLANTS}) >= 14


def _continues_the_number(plant: Plant, outside: str, boundary: str) -> bool:
    """A digit beyond `.`, `-` or a space extends a number (`4111...-12`): no boundary for a digit kind."""
    return plant.kind in DIGIT_KINDS and outside[-1:].isdigit() and boundary in ".- \n"


@settings(max_examples=300, deadline=None)
@given(planting=plantings(SURROUNDINGS))
def test_a_planted_secret_is_redacted_and_scan_finds_it(
    tmp_path_factory: pytest.TempPathFactory, planting: Planting
) -> None:
    plant, left, right = planting.plant, planting.left, planting.right
    assume(
        not _continues_the_number(plant, planting.before, left)
        and not _continues_the_number(plant, planting.after[::-1], right)
    )
    text = planting.text

    redacted, findings = REDACTOR.redact(text)
    assert plant.secret not in redacted
    assert plant.kind in {f.kind for f in findings}

    # ids are searched for every kind but card numbers (a span id of 16 decimal digits can pass the Luhn check)
    trace_id = "task-1" if plant.kind == "card_number" else f"{left}{plant.text}{right}"
    record = {"trace_id": trace_id, "messages": [{"role": "user", "content": text}]}
    clean, _ = REDACTOR.redact_data(record, skip_keys=ID_KEYS)
    assert plant.secret not in json.dumps(clean, ensure_ascii=False)

    folder = tmp_path_factory.mktemp("planted")
    (folder / "note.txt").write_text(text, encoding="utf-8")
    (folder / "traces.jsonl").write_text(json.dumps(record) + "\n", encoding="utf-8")
    found = {(loc.file.name, loc.json_path, loc.kind) for loc in scan_path(folder).locations}
    assert ("note.txt", "", plant.kind) in found
    assert ("traces.jsonl", "$.messages[0].content", plant.kind) in found
    assert ("traces.jsonl", "$.trace_id", plant.kind) in found or plant.kind == "card_number"


def test_an_access_key_between_slashes_in_a_run_of_forty_is_named_an_access_key() -> None:
    """Found by the property above: `000000000/AKIA.../00000000a` is 40 base64 characters with `/`s (an AWS secret
    key's shape), but one of its segments is an access key id, which is what it carries."""
    text = "000000000/AKIAQ3EGTN7PLMW4ZX2B/00000000a"
    redacted, findings = REDACTOR.redact(text)
    assert "AKIAQ3EGTN7PLMW4ZX2B" not in redacted
    assert [f.kind for f in findings] == ["aws_access_key"]
