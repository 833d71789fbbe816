"""A skillbook file is read item by item, and the result is the one the whole-document reader gives: the same
skills, log and counters, the same refusals; equal values read once are stored once."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ace import InsightSource, Skillbook, SkillbookFormatError, json_safe
from ace.core import serialization, storage
from ace.core.serialization import SkillbookDocument
from ace.exceptions import SkillbookError


def book() -> Skillbook:
    sb = Skillbook()
    source = InsightSource(trace_uid="t:1", source_system="t", trace_id="1", sample_question="Q?")
    for i in range(12):
        skill = sb.add_skill("context" if i % 3 else "harness", f"Issue {i}.", [f"kw{i % 4}", "shared"], f"Do {i}.")
        if i % 2:
            sb.tag_skill(skill.id, 1, insight_source=source)
        if i % 4 == 1:
            sb.update_skill(skill.id, f"Issue {i}, wider.", insight_source=source)
        if i % 5 == 0:
            sb.remove_skill(skill.id, "outdated")
    sb.purge("harness-00004")
    sb.quarantine_skill("context-00002", "misleads", evidence=["t:1"])
    sb.record_keep_pair("context-00001", "context-00002")
    return sb


def whole(text: str) -> SkillbookDocument:
    return SkillbookDocument.from_dict(json_safe.loads(text))


def same(a: SkillbookDocument, b: SkillbookDocument) -> None:
    assert a.to_dict() == b.to_dict()
    assert list(a.skills.values()) == list(b.skills.values()) and a.operations == b.operations


def test_the_stream_reads_what_the_whole_reader_reads(tmp_path: Path) -> None:
    path = tmp_path / "skillbook.json"
    book().save_to_file(path)
    text = path.read_text(encoding="utf-8")
    streamed, top = SkillbookDocument.from_text(text)
    same(streamed, whole(text))
    assert top["schema_version"] == "2" and top["skills"] == [] and streamed.next_ids == {"context": 9, "harness": 5}
    assert Skillbook.load_from_file(path).to_dict() == json.loads(text) | {}  # and the file round-trips


@pytest.mark.parametrize(
    "rewrite",
    [
        lambda d: json.dumps(d, indent=2),  # another layout
        lambda d: json.dumps(dict(reversed(list(d.items())))),  # the lists before the schema version
        lambda d: json.dumps(d)[:-1] + ', "embedding_model": "m"}',  # a repeated key: the last one wins
    ],
    ids=["indented", "reordered", "repeated-key"],
)
def test_other_layouts_load_as_the_whole_reader_reads_them(tmp_path: Path, rewrite: Any) -> None:
    path = tmp_path / "skillbook.json"
    book().save_to_file(path)
    path.write_text(rewrite(json.loads(path.read_text(encoding="utf-8"))), encoding="utf-8")
    loaded = Skillbook.load_from_file(path)
    assert loaded.to_dict() == Skillbook.from_dict(json_safe.loads(path.read_bytes())).to_dict()


def test_a_normal_file_never_needs_the_whole_reader(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "skillbook.json"
    book().save_to_file(path)

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("the whole-document reader was used")

    monkeypatch.setattr(serialization.json_safe, "loads", refuse)
    assert len(Skillbook.load_from_file(path)) == 11


@pytest.mark.parametrize(
    ("tail", "error", "message"),
    [
        (', "operations": [{"type": "ADD", "timestamp": 5}]}', SkillbookFormatError, "operations: operation field"),
        (', "operations": "none"}', SkillbookFormatError, "'operations' must be a list"),
        (', "extra": 1}', SkillbookFormatError, r"unknown top-level field\(s\) \['extra'\]"),
        (', "operations": [}', SkillbookFormatError, r", line 1, column \d+: malformed JSON"),
        (', "operations": [' + "[" * 101 + "]" * 101 + "]}", SkillbookFormatError, "nested more than 100 levels"),
        (', "operations": [1' + "0" * 120 + "]}", SkillbookFormatError, "more than 100 digits"),
    ],
)
def test_a_broken_file_is_refused_as_the_whole_reader_refuses_it(
    tmp_path: Path, tail: str, error: type[Exception], message: str
) -> None:
    path = tmp_path / "skillbook.json"
    path.write_text('{"schema_version": "2", "skills": []' + tail, encoding="utf-8")
    with pytest.raises(error, match=message):
        Skillbook.load_from_file(path)
    with pytest.raises(error, match=message):  # the whole-document reader's own words
        SkillbookDocument.from_dict(storage.read_json_with_digest(path)[0], source=str(path))


def test_bad_skills_are_refused_naming_the_skill(tmp_path: Path) -> None:
    path = tmp_path / "skillbook.json"
    book().save_to_file(path)
    doc = json.loads(path.read_text(encoding="utf-8"))
    doc["skills"][3]["keywords"] = ["Not Normal"]
    path.write_text(json.dumps(doc), encoding="utf-8")
    with pytest.raises(ValueError, match=r"skills\[3\]: skill harness-00002: keywords \['Not Normal'\] are not normal"):
        Skillbook.load_from_file(path)
    doc["skills"][3]["keywords"] = ["ok", "ok"]
    path.write_text(json.dumps(doc), encoding="utf-8")
    with pytest.raises(ValueError, match="are not normalised"):  # a repeat of a label seen before is refused too
        Skillbook.load_from_file(path)
    doc["skills"][3]["section"] = "other"
    path.write_text(json.dumps(doc), encoding="utf-8")
    with pytest.raises(SkillbookError, match="section must be one of"):
        Skillbook.load_from_file(path)


def test_equal_values_read_once_are_stored_once(tmp_path: Path) -> None:
    path = tmp_path / "skillbook.json"
    book().save_to_file(path)
    loaded = Skillbook.load_from_file(path)
    skills = loaded.skills(include_inactive=True)
    labels = [k for s in skills for k in s.keywords if k == "shared"]
    assert len(labels) == len(skills) and all(k is labels[0] for k in labels)
    untouched = loaded.require_skill("context-00003")
    added = next(op for op in loaded.operations if op.type == "ADD" and op.skill_id == untouched.id)
    assert added.issue is untouched.issue and added.keywords is untouched.keywords
    assert added.skill_id is untouched.id and added.timestamp is untouched.created_at is untouched.updated_at
    assert untouched.occurrences[0].timestamp is untouched.created_at  # made at the same instant, read as one
    tags = [s.occurrences[1] for s in skills if len(s.occurrences) > 1 and s.occurrences[1].operation_type == "TAG"]
    assert len(tags) > 2 and all(t.sample_question is tags[0].sample_question for t in tags)
