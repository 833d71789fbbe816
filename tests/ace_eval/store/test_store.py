"""`SkillbookStore`: publish, read, roll back, verify; versions immutable; hostile files refused naming the fix."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
from _store_support import BY_TEST, skillbook_file, store_with

from ace import Skillbook
from ace.exceptions import UserError
from ace.integrations.store_format import CurrentSkillbook, StoreFormatError, current_skillbook_path
from ace_eval.store import ProducedBy, SkillbookStore, diff_skillbooks


def test_publish_numbers_versions_records_lineage_and_moves_current(tmp_path: Path) -> None:
    store = store_with(tmp_path / "st", tmp_path, 3)
    assert [v.number for v in store.versions()] == [1, 2, 3]
    assert [v.parent for v in store.versions()] == [None, 1, 2]
    current = store.current()
    assert current is not None and current.number == 3
    assert current.ungated_reason == "test version 3" and current.gate is None and not current.gated
    assert current.produced_by.kind == "test"
    assert current.produced_by.source == str(tmp_path / "src3" / "skillbook.json")
    assert len(store.load().skills()) == 3 and len(store.load(1).skills()) == 1
    assert store.skillbook_path() == tmp_path / "st" / "versions" / "0003" / "skillbook.json"
    assert (tmp_path / "st" / "current").read_text() == "0003\n"
    assert store.verify() == []


def test_sidecars_are_copied_and_hashed(tmp_path: Path) -> None:
    source = skillbook_file(tmp_path / "in" / "book.json", "With vectors", vectors=True)
    assert (tmp_path / "in" / "book.embeddings.npz").is_file()
    version = SkillbookStore.create(tmp_path / "st").publish(source, produced_by=BY_TEST, ungated_reason="r")
    assert sorted(version.files) == ["skillbook.embeddings.npz", "skillbook.json"]
    loaded = Skillbook.load_from_file(version.skillbook_path)
    assert loaded.skills()[0].embedding is not None  # the sidecar is read under its new name


def test_versions_are_read_only_and_a_number_is_never_reused(tmp_path: Path) -> None:
    store = store_with(tmp_path / "st", tmp_path, 2)
    for version in store.versions():
        for path in version.folder.iterdir():
            assert not path.stat().st_mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH), path
    store.rollback(1)
    again = store.publish(skillbook_file(tmp_path / "x.json", "Another"), produced_by=BY_TEST, ungated_reason="r")
    assert (again.number, again.parent) == (3, 1)  # 2 is kept; the next number is past every folder


def test_rollback_restores_the_previous_version_byte_for_byte(tmp_path: Path) -> None:
    store = store_with(tmp_path / "st", tmp_path, 1)
    before = store.skillbook_path().read_bytes()
    store.publish(skillbook_file(tmp_path / "new.json", "Changed"), produced_by=BY_TEST, ungated_reason="r")
    assert store.skillbook_path().read_bytes() != before
    back = store.rollback()
    assert back.number == 1 and store.skillbook_path().read_bytes() == before
    assert [v.number for v in store.versions()] == [1, 2]  # nothing deleted
    with pytest.raises(UserError, match="is the first"):
        store.rollback()
    assert store.rollback(2).number == 2


def test_publish_needs_a_gate_or_a_reason_and_refuses_a_bad_source_before_writing(tmp_path: Path) -> None:
    store = SkillbookStore.create(tmp_path / "st")
    good = skillbook_file(tmp_path / "ok.json", "Fine")
    with pytest.raises(UserError, match="gate's evidence"):
        store.publish(good, produced_by=BY_TEST)
    with pytest.raises(UserError, match="gate's evidence"):
        store.publish(good, produced_by=BY_TEST, gate={"decision": "promote"}, ungated_reason="both")
    bad = tmp_path / "bad.json"
    bad.write_text('{"skills": "nope"}')
    with pytest.raises(UserError, match="does not read as a skillbook"):
        store.publish(bad, produced_by=BY_TEST, ungated_reason="r")
    assert store.versions() == [] and store.current() is None
    assert os.listdir(tmp_path / "st" / "versions") == []


def test_gate_evidence_is_stored_as_given(tmp_path: Path) -> None:
    gate = {"decision": "promote", "delta": {"mean": 0.2, "ci95": [0.05, 0.35]}, "p_value": 0.01, "seed": 20260101}
    store = SkillbookStore.create(tmp_path / "st")
    version = store.publish(skillbook_file(tmp_path / "g.json", "Gated"), produced_by=BY_TEST, gate=gate)
    assert version.gated and dict(store.version(1).gate or {}) == gate  # numbers are not redacted


def test_produced_by_and_reason_are_redacted(tmp_path: Path) -> None:
    key = "sk-ant-api03-" + "a" * 40
    by = ProducedBy(kind="command", command=f"publish --token {key}", details={"who": "ana@example.com"})
    version = SkillbookStore.create(tmp_path / "st").publish(
        skillbook_file(tmp_path / "s.json", "Secret"), produced_by=by, ungated_reason=f"key {key}"
    )
    text = (version.folder / "version.json").read_text()
    assert key not in text and "ana@example.com" not in text and "[REDACTED:" in text


def test_a_run_folder_publishes_its_skillbook_and_names_the_run(tmp_path: Path) -> None:
    run = tmp_path / "run_0123456789ab"
    skillbook_file(run / "skillbook.json", "From a run")
    (run / "run.json").write_text('{"config": {}}')
    version = SkillbookStore.create(tmp_path / "st").publish(run, produced_by=BY_TEST, ungated_reason="r")
    assert version.produced_by.run_id == "run_0123456789ab" and version.produced_by.run_dir == str(run)
    with pytest.raises(UserError, match="not a run folder"):
        SkillbookStore(tmp_path / "st").publish(tmp_path / "st", produced_by=BY_TEST, ungated_reason="r")


def test_a_tampered_file_or_a_stray_file_fails_verify_naming_it(tmp_path: Path) -> None:
    store = store_with(tmp_path / "st", tmp_path, 2)
    book = store.skillbook_path(1)
    os.chmod(book, 0o644)
    book.write_bytes(book.read_bytes().replace(b"Issue number 1", b"Issue number X"))
    (store.version(2).folder / "extra.txt").write_text("x")
    problems = store.verify()
    assert [p.path for p in problems] == [book, store.version(2).folder / "extra.txt"]
    assert "SHA-256" in problems[0].message


def test_opening_a_missing_or_foreign_folder_names_the_fix(tmp_path: Path) -> None:
    with pytest.raises(StoreFormatError, match=r"no such skillbook store.*publish"):
        SkillbookStore(tmp_path / "nope")
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "file.txt").write_text("x")
    with pytest.raises(StoreFormatError, match="not a skillbook store"):
        SkillbookStore(tmp_path / "other")
    with pytest.raises(UserError, match="is a file: a store is a folder"):
        SkillbookStore.open_or_create(tmp_path / "other" / "file.txt")
    with pytest.raises(UserError, match="files in it but not a store"):
        SkillbookStore.create(tmp_path / "other")


@pytest.mark.parametrize(
    ("content", "match"), [("garbage", "not a version number"), ("0009\n", "does not hold"), ("", "not a version")]
)
def test_a_damaged_or_dangling_current_is_refused_naming_the_file_and_fix(
    tmp_path: Path, content: str, match: str
) -> None:
    store = store_with(tmp_path / "st", tmp_path, 1)
    (tmp_path / "st" / "current").write_text(content)
    with pytest.raises(StoreFormatError, match=match) as caught:
        store.current()
    assert str(tmp_path / "st" / "current") in str(caught.value) and "rollback" in str(caught.value)
    assert [p.path.name for p in store.verify()] == ["current"]
    assert store.rollback(1).number == 1  # the fix the message names works


def test_a_malformed_version_json_is_refused_naming_it(tmp_path: Path) -> None:
    store = store_with(tmp_path / "st", tmp_path, 1)
    record = store.version(1).folder / "version.json"
    os.chmod(record, 0o644)
    record.write_text('{"number": 1,')
    with pytest.raises(StoreFormatError, match=r"version.json.*malformed JSON") as caught:
        store.versions()
    assert str(record) in str(caught.value)
    record.write_text('{"number": 2}')
    with pytest.raises(StoreFormatError, match="not a version record"):
        store.version(1)


def test_diff_by_id(tmp_path: Path) -> None:
    a = Skillbook()
    a.add_skill("context", "Kept", ["k"], "Do k")
    a.add_skill("context", "Goes", ["g"], "Do g")
    a.add_skill("context", "Edited", ["e"], "Do e")
    b = Skillbook.from_dict(a.to_dict())
    b.remove_skill("context-00002", "obsolete")
    b.update_skill("context-00003", "Edited more", insight="Do e better")
    b.add_skill("context", "New", ["n"], "Do n")
    diff = diff_skillbooks(a, b)
    assert [s.id for s in diff.added] == ["context-00004"] and [s.id for s in diff.removed] == ["context-00002"]
    assert [(c.skill_id, sorted(c.fields)) for c in diff.changed] == [("context-00003", ["insight", "issue"])]
    assert diff.unchanged == 1 and not diff.empty and diff_skillbooks(a, a).empty


def test_current_skillbook_follows_the_pointer(tmp_path: Path) -> None:
    store = store_with(tmp_path / "st", tmp_path, 2)
    follower = CurrentSkillbook(tmp_path / "st")
    first = follower.get()
    assert follower.version == 2 and follower.get() is first  # unchanged pointer: no reload
    store.rollback()
    assert follower.version == 2 and len(follower.get().skills()) == 1 and follower.version == 1
    assert current_skillbook_path(tmp_path / "st") == store.skillbook_path(1)
    with pytest.raises(StoreFormatError, match="no version yet"):
        current_skillbook_path(SkillbookStore.create(tmp_path / "empty").root)


def test_current_skillbook_keeps_the_loaded_version_when_the_pointer_breaks(tmp_path: Path) -> None:
    store_with(tmp_path / "st", tmp_path, 1)
    follower = CurrentSkillbook(tmp_path / "st")
    (tmp_path / "st" / "current").write_text("0042\n")
    with pytest.warns(RuntimeWarning, match="kept version 1.*does not hold"):
        assert len(follower.get().skills()) == 1
    assert follower.version == 1


def test_a_version_folder_without_its_record_is_named(tmp_path: Path) -> None:
    store = store_with(tmp_path / "st", tmp_path, 1)
    (tmp_path / "st" / "versions" / "0002").mkdir()
    with pytest.raises(StoreFormatError, match=r"0002/version.json is missing: .* is not a whole version"):
        store.versions()
    assert [p.path.name for p in store.verify()] == ["version.json"]


def test_a_source_changed_while_publishing_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from ace_eval.store import _write

    source = skillbook_file(tmp_path / "s.json", "Before")
    real_copy = _write._copy

    def copy_after_a_change(src: Path, target: Path) -> str:
        src.write_bytes(src.read_bytes().replace(b"Before", b"Aftr!!"))
        return real_copy(src, target)

    monkeypatch.setattr(_write, "_copy", copy_after_a_change)
    store = SkillbookStore.create(tmp_path / "st")
    with pytest.raises(UserError, match="changed while it was being published"):
        store.publish(source, produced_by=BY_TEST, ungated_reason="r")
    assert store.numbers() == [] and os.listdir(tmp_path / "st" / "versions") == []


def test_an_in_memory_skillbook_publishes_and_leaves_no_temporary(tmp_path: Path) -> None:
    book = Skillbook()
    book.add_skill("context", "Made in memory", ["memory"], "Publish it")
    store = SkillbookStore.create(tmp_path / "st")
    version = store.publish_skillbook(book, produced_by=ProducedBy(kind="trials"), ungated_reason="best of 3")
    assert [s.issue for s in store.load().skills()] == ["Made in memory"] and version.produced_by.kind == "trials"
    assert sorted(p.name for p in (tmp_path / "st").iterdir()) == [".lock", "current", "store.json", "versions"]
