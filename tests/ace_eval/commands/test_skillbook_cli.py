"""`ace-eval skillbook publish|versions|path|diff|rollback` on real stores, and their exit codes on bad input."""

from __future__ import annotations

import json
import os
from pathlib import Path

from _store_support import cli, skillbook_file, store_with


def test_publish_versions_path_diff_rollback(tmp_path: Path) -> None:
    store = tmp_path / "st"
    first = skillbook_file(tmp_path / "a" / "skillbook.json", "Refunds need the booking id")
    second = skillbook_file(tmp_path / "b" / "skillbook.json", "Refunds need the booking id", "Bags depend on cabin")
    done = cli("skillbook", "publish", first, "--to", store)
    assert done.exit_code == 0, done.output
    assert "published version 1 (the first)" in done.output and "without the gate" in done.output
    done = cli("skillbook", "publish", second, "--to", store, "--no-gate", "--reason", "trying the bags skill")
    assert done.exit_code == 0 and "version 2 (parent 1)" in done.output and "without the gate" not in done.output

    listed = cli("skillbook", "versions", store)
    assert listed.exit_code == 0
    lines = listed.output.splitlines()
    assert lines[0].startswith("     1  first") and lines[1].startswith("*    2  parent 1")
    assert "ungated: trying the bags skill" in lines[1]
    as_json = json.loads(cli("skillbook", "versions", store, "--json").output)
    assert as_json["current"] == 2 and [v["current"] for v in as_json["versions"]] == [False, True]
    assert as_json["versions"][1]["produced_by"]["command"].startswith("ace-eval skillbook publish")

    path = cli("skillbook", "path", store)
    assert Path(path.output.splitlines()[-1]) == store / "versions" / "0002" / "skillbook.json"
    assert Path(cli("skillbook", "path", store, "--version", 1).output.splitlines()[-1]).read_bytes() == (
        first.read_bytes()
    )

    diff = cli("skillbook", "diff", store, 1, 2)
    assert diff.exit_code == 0
    assert "1 added, 0 removed, 0 changed, 1 unchanged" in diff.output
    assert "+ context-00002 [context] Bags depend on cabin" in diff.output
    assert json.loads(cli("skillbook", "diff", store, 2, 1, "--json").output)["removed"][0]["id"] == "context-00002"

    back = cli("skillbook", "rollback", store)
    assert back.exit_code == 0 and "current: 2 -> 1" in back.output
    assert Path(back.output.splitlines()[-1]).read_bytes() == first.read_bytes()
    assert cli("skillbook", "rollback", store, "--to", 1).exit_code == 2  # current already
    assert (store / "versions" / "0002").is_dir()


def test_publishing_the_same_skillbook_again_says_so(tmp_path: Path) -> None:
    store = tmp_path / "st"
    first = skillbook_file(tmp_path / "a" / "skillbook.json", "Refunds need the booking id")
    other = skillbook_file(tmp_path / "b" / "skillbook.json", "Refunds need the booking id", "Bags depend on cabin")
    assert "byte for byte" not in cli("skillbook", "publish", first, "--to", store, "--no-gate").output
    again = cli("skillbook", "publish", first, "--to", store, "--no-gate")
    assert again.exit_code == 0 and "version 2 (parent 1)" in again.output
    assert "note: its skillbook.json is the same, byte for byte, as version 1's" in again.output
    assert "byte for byte" not in cli("skillbook", "publish", other, "--to", store, "--no-gate").output


def test_a_source_that_is_not_a_skillbook_is_refused_before_anything_is_written(tmp_path: Path) -> None:
    bad = tmp_path / "notes.json"
    bad.write_text('{"hello": "world"}')
    done = cli("skillbook", "publish", bad, "--to", tmp_path / "st")
    assert done.exit_code == 2 and "does not read as a skillbook" in done.output
    assert not (tmp_path / "st").exists()
    missing = cli("skillbook", "publish", tmp_path / "nope.json", "--to", tmp_path / "st")
    assert missing.exit_code == 2 and "no such file or folder" in missing.output


def test_verify_exits_1_naming_a_tampered_file(tmp_path: Path) -> None:
    store = store_with(tmp_path / "st", tmp_path, 2)
    good = cli("skillbook", "versions", store.root, "--verify")
    assert good.exit_code == 0 and "verified" in good.output
    book = store.skillbook_path(1)
    os.chmod(book, 0o644)
    book.write_bytes(book.read_bytes().replace(b"number 1", b"number 9"))
    bad = cli("skillbook", "versions", store.root, "--verify")
    assert bad.exit_code == 1 and f"problem: {book}: SHA-256" in bad.output
    as_json = cli("skillbook", "versions", store.root, "--verify", "--json")
    assert as_json.exit_code == 1 and json.loads(as_json.stdout)["problems"][0]["path"] == str(book)


def test_hostile_store_files_exit_2_naming_the_file_and_the_fix(tmp_path: Path) -> None:
    store = store_with(tmp_path / "st", tmp_path, 2)
    (store.root / "current").write_text("0007\n")
    for args in (("versions", store.root), ("path", store.root), ("rollback", store.root)):
        done = cli("skillbook", *args)
        assert done.exit_code == 2, (args, done.output)
        assert str(store.root / "current") in done.output and "rollback" in done.output
    fixed = cli("skillbook", "rollback", store.root, "--to", 2)
    assert fixed.exit_code == 0 and "current: (damaged) -> 2" in fixed.output
    record = store.version(1).folder / "version.json"
    os.chmod(record, 0o644)
    record.write_text("[1, 2")
    done = cli("skillbook", "versions", store.root)
    assert done.exit_code == 2 and str(record) in done.output and "restore this file" in done.output
    assert cli("skillbook", "versions", tmp_path / "elsewhere").exit_code == 2
    assert cli("skillbook", "path", tmp_path / "st", "--version", 9).exit_code == 2
