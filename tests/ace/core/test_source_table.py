"""The provenance table of a skillbook file: each trace's record once, occurrences pointing at it, read back whole."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from ace import InsightSource, Skillbook, SkillbookFormatError


def trace(i: int, *, epoch: int = 0) -> InsightSource:
    return InsightSource(
        trace_uid=f"airline:task-{i}",
        source_system="airline",
        trace_id=f"task-{i}",
        sample_question=f"Question {i}: change my flight and keep the cabin — ünïcode",
        epoch=epoch,
        error_identification=f"finding {i}",
        learning_text=f"lesson {i}",
    )


def book() -> Skillbook:
    sb = Skillbook()
    for i in range(30):
        source = trace(i % 4, epoch=i // 4 % 2)
        s = sb.add_skill("context", f"issue {i}", [f"kw{i % 3}"], f"insight {i}", insight_source=source)
        if i % 3 == 0:
            sb.tag_skill(s.id, 1, insight_source=source.derive("TAG", learning_text="tagged helpful"))
        if i % 5 == 0:
            sb.update_skill(s.id, f"issue {i} wider", insight_source=source.derive("UPDATE", learning_text=None))
    reviewed = dataclasses.replace(trace(9), reviewer="ana", reviewed_at="2026-12-04T10:00:00.000000+00:00")
    sb.update_skill("context-00002", "issue 2 reviewed", insight_source=reviewed)
    sb.update_skill("context-00003", "issue 3 by hand")  # no source: a manual entry
    return sb


def occurrences(sb: Skillbook) -> dict[str, tuple[InsightSource, ...]]:
    return {s.id: s.occurrences for s in sb.skills(include_inactive=True)}


def test_each_trace_record_is_written_once_and_every_occurrence_reads_back_the_same(tmp_path: Path) -> None:
    sb, path = book(), tmp_path / "skillbook.json"
    sb.save_to_file(path)
    doc = json.loads(path.read_text(encoding="utf-8"))
    keys = {(r["trace_uid"], r["epoch"]) for r in doc["sources"]}
    assert len(keys) == len(doc["sources"]) == 4 * 2 + 2  # 4 traces x 2 epochs, the reviewed one, the manual one
    assert all(set(o) >= {"source", "operation_type", "timestamp"} for s in doc["skills"] for o in s["occurrences"])
    assert {"reviewer", "reviewed_at"} <= set(doc["skills"][1]["occurrences"][-1])
    loaded = Skillbook.load_from_file(path)
    assert occurrences(loaded) == occurrences(sb)
    assert loaded.to_dict() == sb.to_dict()


def test_a_mutation_from_a_new_trace_appends_a_record_and_changes_only_its_own_lines(tmp_path: Path) -> None:
    sb, path = book(), tmp_path / "skillbook.json"
    sb.save_to_file(path)
    before = [line.rstrip(",") for line in path.read_text(encoding="utf-8").splitlines()]  # a list's last item
    sb.tag_skill("context-00001", 1, insight_source=trace(99))  # gains a comma when one is appended: not counted
    sb.save_to_file(path)
    after = [line.rstrip(",") for line in path.read_text(encoding="utf-8").splitlines()]
    changed = [line for line in after if line not in before]
    assert len(changed) == 3  # the new record, the skill, the audit-log entry
    assert '"airline:task-99"' in changed[0] and '"id": "context-00001"' in changed[1]
    assert [line for line in before if line not in after] == [next(x for x in before if '"id": "context-00001"' in x)]


def test_a_file_with_occurrences_written_whole_still_loads(tmp_path: Path) -> None:
    sb, path = book(), tmp_path / "skillbook.json"
    doc = sb.to_dict()
    doc.pop("sources")
    for skill in doc["skills"]:  # as an earlier version wrote them: every field, every default
        skill["occurrences"] = [o.to_dict() for o in sb.require_skill(skill["id"]).occurrences]
        skill.setdefault("active", True)
    path.write_text(json.dumps(doc), encoding="utf-8")
    loaded = Skillbook.load_from_file(path)
    assert occurrences(loaded) == occurrences(sb)
    assert loaded.to_dict() == sb.to_dict()


def test_records_after_the_skills_are_read_with_the_whole_document(tmp_path: Path) -> None:
    sb, path = book(), tmp_path / "skillbook.json"
    doc = sb.to_dict()
    doc["sources"] = doc.pop("sources")  # now the last field
    path.write_text(json.dumps(doc), encoding="utf-8")
    assert occurrences(Skillbook.load_from_file(path)) == occurrences(sb)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda d: d["skills"][0]["occurrences"][0].update(source=99), r"names source 99; the file's 'sources' list"),
        (lambda d: d["skills"][0]["occurrences"][0].update(source="0"), r"names source '0'"),
        (lambda d: d["skills"][0]["occurrences"][0].update(extra=1), r"an occurrence with a 'source' has only"),
        (lambda d: d["sources"][0].update(epoch="one"), r"sources\[0\]: .*'epoch' must be an integer"),
        (lambda d: d["sources"][0].update(timestamp="now"), r"sources\[0\] must be an object of"),
        (lambda d: d.update(sources={}), r"'sources' must be a list"),
    ],
)
def test_a_bad_record_or_reference_is_refused_naming_it(tmp_path: Path, change: object, message: str) -> None:
    path = tmp_path / "skillbook.json"
    doc = book().to_dict()
    change(doc)  # type: ignore[operator]
    path.write_text(json.dumps(doc), encoding="utf-8")
    with pytest.raises(SkillbookFormatError, match=message):
        Skillbook.load_from_file(path)


def test_default_counters_and_null_audit_fields_are_left_out_and_read_as_such(tmp_path: Path) -> None:
    sb, path = book(), tmp_path / "skillbook.json"
    sb.save_to_file(path)
    doc = json.loads(path.read_text(encoding="utf-8"))
    tagged, plain = doc["skills"][0], doc["skills"][1]
    assert tagged["helpful_count"] == 1 and "harmful_count" not in tagged and "active" not in plain
    assert all(None not in op.values() for op in doc["operations"])
    loaded = Skillbook.load_from_file(path)
    assert loaded.require_skill("context-00001").helpful_count == 1
    assert loaded.require_skill("context-00002").active and loaded.operations == sb.operations
