"""The skillbook's journal (`ace.core.journal`): a mark, the delta since it, and a saved skillbook + deltas loaded
back as the skillbook after the last delta, idempotently."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ace import Skillbook
from ace.core.journal import JournalGapError, SkillbookMark, check_delta, delta_since
from ace.embeddings.test import TestEmbedder
from ace.exceptions import SkillbookFormatError
from ace.retrieval.index import search_index


def test_snapshot_plus_deltas_loads_as_the_live_skillbook(tmp_path: Path) -> None:
    book = Skillbook()
    book.add_skill("context", "Refunds need the receipt.", ["refund"], "Ask for the receipt first.")
    search_index(book, TestEmbedder()).sync(book)
    book.save_to_file(tmp_path / "skillbook.json")
    mark = SkillbookMark.of(book)
    first = book.add_skill("harness", "The runner times out.", ["runner"])
    one = delta_since(book, mark)
    mark = SkillbookMark.of(book)
    book.update_skill(first.id, "The runner times out after 60 s.", keywords=["runner", "timeout"])
    book.record_keep_pair("context-00001", first.id)
    book.purge("context-00001")
    two = delta_since(book, mark)
    assert [op["type"] for op in one["ops"]] == ["ADD"] and two["purged"] == ["context-00001"]

    loaded = Skillbook.load_from_file(tmp_path / "skillbook.json", journal=[one, two])
    assert loaded.to_dict() == book.to_dict()
    again = Skillbook.load_from_file(tmp_path / "skillbook.json", journal=[one, two, one, two])  # idempotent
    assert again.to_dict() == book.to_dict()
    book.save_to_file(tmp_path / "later.json")  # a snapshot newer than the deltas: they change nothing
    assert Skillbook.load_from_file(tmp_path / "later.json", journal=[one, two]).to_dict() == book.to_dict()


def test_a_gap_or_a_malformed_delta_is_refused(tmp_path: Path) -> None:
    Skillbook().save_to_file(tmp_path / "skillbook.json")
    book = Skillbook()
    book.add_skill("harness", "A.", ["a"])
    mark = SkillbookMark.of(book)
    book.add_skill("harness", "B.", ["b"])
    with pytest.raises(JournalGapError, match="journal line 1 starts at audit-log entry 1 but the skillbook has 0"):
        Skillbook.load_from_file(tmp_path / "skillbook.json", journal=[delta_since(book, mark)])
    with pytest.raises(ValueError, match="the skillbook delta has no skills, purged"):
        check_delta({"ops_before": 0, "ops": [], "keep_pairs": [], "embedding_model": None})


def _log(book: Skillbook) -> list[dict[str, object]]:
    return [op.to_dict() for op in book.operations_since(0)]


def test_the_file_leaves_logged_texts_to_their_skill_and_reads_them_back_exactly(tmp_path: Path) -> None:
    book = Skillbook()
    first = book.add_skill("context", "Refunds need the receipt.", ["refund"], "Ask for the receipt first.")
    kept = book.add_skill("harness", "The runner times out.", ["runner"])
    book.update_skill(first.id, "Refunds need the receipt and the order id.", keywords=["refund", "order"])
    book.update_skill(first.id, "Refunds need the receipt.", keywords=["refund"])  # back to the ADD's texts
    book.tag_skill(kept.id, 1)
    path = tmp_path / "skillbook.json"
    book.save_to_file(path)
    text = path.read_text()
    assert text.count('"The runner times out."') == 1 and text.count('"Ask for the receipt first."') == 1
    assert '"Refunds need the receipt and the order id."' in text  # the middle UPDATE: not the skill's text now
    assert Skillbook.load_from_file(path).to_dict() == book.to_dict()
    assert _log(Skillbook.load_from_file(path)) == _log(book)


def test_a_journal_changing_a_skill_keeps_the_texts_its_logged_add_left_to_it(tmp_path: Path) -> None:
    book = Skillbook()
    skill = book.add_skill("context", "Refunds need the receipt.", ["refund"], "Ask for the receipt first.")
    book.save_to_file(tmp_path / "skillbook.json")  # the ADD's texts are stored once, in the skill
    mark = SkillbookMark.of(book)
    book.update_skill(skill.id, "Refunds need the order id.", insight="Ask for it.", keywords=["order"])
    delta = delta_since(book, mark)
    loaded = Skillbook.load_from_file(tmp_path / "skillbook.json", journal=[delta])
    assert _log(loaded) == _log(book) and _log(loaded)[0]["issue"] == "Refunds need the receipt."
    assert loaded.to_dict() == book.to_dict()
    loaded.save_to_file(tmp_path / "again.json")
    assert _log(Skillbook.load_from_file(tmp_path / "again.json")) == _log(book)


def test_a_log_written_in_full_still_loads_and_a_broken_reference_is_refused(tmp_path: Path) -> None:
    book = Skillbook()
    book.add_skill("context", "Refunds need the receipt.", ["refund"], "Ask for the receipt first.")
    full = {**book.to_dict(), "operations": _log(book)}  # as the previous version wrote it: texts repeated
    path = tmp_path / "skillbook.json"
    path.write_text(json.dumps(full))
    assert _log(Skillbook.load_from_file(path)) == _log(book)
    entry = {k: v for k, v in _log(book)[0].items() if k != "issue"}
    for bad, message in [
        ({**entry, "skill_id": "context-00009", "as_skill": ["issue"]}, "which the file does not hold"),
        ({**entry, "as_skill": ["issue", "timestamp"]}, "must list some of"),
        ({**entry, "insight": "x", "as_skill": ["insight"]}, "also holds"),
    ]:
        path.write_text(json.dumps({**full, "operations": [bad]}))
        with pytest.raises(SkillbookFormatError, match=message):
            Skillbook.load_from_file(path)
