"""The skillbook's journal (`ace.core.journal`): a mark, the delta since it, and a saved skillbook + deltas loaded
back as the skillbook after the last delta, idempotently."""

from __future__ import annotations

from pathlib import Path

import pytest

from ace import Skillbook
from ace.core.journal import JournalGapError, SkillbookMark, check_delta, delta_since
from ace.embeddings.test import TestEmbedder
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
