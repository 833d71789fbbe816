"""A skillbook saved together with other files (a review queue): all or nothing, even against a kill; and a
skillbook document without its required keys is refused, naming the key."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import IO, Any

import pytest

from ace import Skillbook
from ace.core.serialization import commit_intent
from ace.core.storage import commit_files, recover_commit
from ace.exceptions import SkillbookFormatError
from ace.json_safe import JsonInputError


class Killed(BaseException):
    """Stands for a kill: nothing on the way catches it."""


def writer(text: str) -> Any:
    def write(f: IO[bytes]) -> None:
        f.write(text.encode("utf-8"))

    return write


def book_with(issue: str) -> Skillbook:
    book = Skillbook()
    book.add_skill("harness", issue, ["x"])
    return book


@pytest.mark.parametrize("kill_at", [1, 2, 3])
def test_a_kill_at_any_rename_leaves_old_or_new_files_once_the_next_reader_ran(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kill_at: int
) -> None:
    path, other = tmp_path / "skillbook.json", tmp_path / "other.json"
    book_with("old").save_to_file(path)
    other.write_text("old", encoding="utf-8")
    real = os.replace
    calls: list[object] = []

    def replace(src: Any, dst: Any) -> None:
        calls.append(dst)
        if len(calls) == kill_at:
            raise Killed
        real(src, dst)

    monkeypatch.setattr(os, "replace", replace)
    with pytest.raises(Killed):
        book_with("new").save_to_file(path, also=[(other, writer("new"))])
    monkeypatch.setattr(os, "replace", real)
    loaded = Skillbook.load_from_file(path)  # the reader finishes a decided commit first
    issue = loaded.skills()[0].issue
    assert (issue, other.read_text(encoding="utf-8")) in {("old", "old"), ("new", "new")}
    assert (issue == "new") == (kill_at > 1)  # the commit is decided once its intent record is in place
    assert not commit_intent(path).exists()


def test_a_commit_whose_writer_still_runs_is_left_to_it(tmp_path: Path) -> None:
    intent = tmp_path / ".skillbook.json.commit"
    (tmp_path / ".a.1.x.commit").write_text("new", encoding="utf-8")
    intent.write_text(json.dumps({"pid": os.getpid() + 10**9, "renames": [[".a.1.x.commit", "a"]]}), encoding="utf-8")
    assert recover_commit(intent) and (tmp_path / "a").read_text(encoding="utf-8") == "new" and not intent.exists()
    (tmp_path / ".b.1.x.commit").write_text("new", encoding="utf-8")
    intent.write_text(json.dumps({"pid": os.getppid(), "renames": [[".b.1.x.commit", "b"]]}), encoding="utf-8")
    assert not recover_commit(intent) and not (tmp_path / "b").exists()  # its writer (alive) finishes it
    intent.write_text(json.dumps({"pid": 1, "renames": [["../../etc/x", "b"]]}), encoding="utf-8")
    with pytest.raises(JsonInputError, match="not a commit record"):
        recover_commit(intent)


def test_commit_files_refuses_a_file_outside_the_intent_folder(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    with pytest.raises(ValueError, match="into the folder of its intent record"):
        commit_files([(tmp_path / "sub" / "a", writer("x"))], intent=tmp_path / ".a.commit")
    assert not list(tmp_path.rglob("*.commit"))


@pytest.mark.parametrize("key", ["skills", "schema_version"])
def test_a_skillbook_without_a_required_key_is_refused_naming_it(tmp_path: Path, key: str) -> None:
    path = tmp_path / "skillbook.json"
    book_with("x").save_to_file(path)
    data = json.loads(path.read_text(encoding="utf-8"))
    del data[key]
    path.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(SkillbookFormatError, match=key):
        Skillbook.load_from_file(path)
    if key == "skills":
        with pytest.raises(SkillbookFormatError, match=r"the required field 'skills' is missing"):
            Skillbook.from_dict(data)


def test_the_temporaries_of_a_commit_killed_before_deciding_go_on_the_next_read(tmp_path: Path) -> None:
    path = tmp_path / "skillbook.json"
    book_with("old").save_to_file(path)
    dead = tmp_path / f".skillbook.json.{os.getpid() + 10**9}.ab_1.commit"
    live = tmp_path / f".skillbook.json.{os.getppid()}.cd_2.commit"
    for temp in (dead, live):
        temp.write_text("half a skillbook", encoding="utf-8")
    assert Skillbook.load_from_file(path).skills()[0].issue == "old"
    assert not dead.exists() and live.exists()  # a running writer's temporaries are its own
