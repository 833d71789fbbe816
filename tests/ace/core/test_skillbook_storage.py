"""Skillbook files: lossless round trips, atomic writes, the v2 hard break, the sidecar as a cache."""

from __future__ import annotations

import json
import os
import zipfile
from pathlib import Path
from typing import IO, Any

import numpy as np
import pytest

from ace import InsightSource, Skillbook, SkillbookFormatError
from ace.core import serialization as skillbook_module
from ace.core import storage
from ace.core.storage import sidecar_path


def src(i: int) -> InsightSource:
    return InsightSource(
        trace_uid=f"tau-bench-airline:task-{i}-trial-0",
        source_system="tau-bench-airline",
        trace_id=f"task-{i}-trial-0",
        sample_question=f"Question {i} — with ünïcode",
        epoch=i % 3,
        error_identification=f"error {i}",
        learning_text=f"lesson {i}",
    )


def build(n: int, dim: int | None = 384, seed: int = 0) -> Skillbook:
    rng = np.random.default_rng(seed)
    sb = Skillbook()
    sb.embedding_model = "test-model" if dim else None
    for i in range(n):
        section = "context" if i % 3 else "harness"
        insight = f"Do thing {i}" if section == "context" or i % 2 else None
        keywords = [f"kw{i % 17}", "airline"]
        s = sb.add_skill(section, f"Issue {i}: problem text", keywords, insight, insight_source=src(i))
        if i % 5 == 0:
            sb.tag_skill(s.id, (i % 3) - 1, insight_source=src(i + 1))
        if i % 7 == 0:
            sb.update_skill(s.id, f"Issue {i}: wider problem", insight_source=src(i + 2))
        if i % 11 == 0:
            sb.remove_skill(s.id, "outdated", insight_source=src(i + 3))
        if dim:
            sb.set_embedding(s.id, rng.standard_normal(dim).astype(np.float32))
    return sb


def assert_same(a: Skillbook, b: Skillbook) -> None:
    assert a.to_dict() == b.to_dict()
    sa, sb_ = a.skills(include_inactive=True), b.skills(include_inactive=True)
    assert [s.id for s in sa] == [s.id for s in sb_]
    for x, y in zip(sa, sb_, strict=True):
        assert x.occurrences == y.occurrences
        if x.embedding is None:
            assert y.embedding is None
        else:
            assert y.embedding is not None
            assert x.embedding.dtype == y.embedding.dtype == np.float32
            assert x.embedding.tobytes() == y.embedding.tobytes()
    assert a.operations == b.operations
    assert a.embedding_model == b.embedding_model


def test_round_trip_5000_skills_with_384d_embeddings_is_lossless(tmp_path: Path) -> None:
    sb = build(5000)
    path = tmp_path / "skillbook.json"
    sb.save_to_file(path)
    assert sidecar_path(path).name == "skillbook.embeddings.npz"
    loaded = Skillbook.load_from_file(path)
    assert_same(sb, loaded)
    # Saving the loaded book again writes the identical JSON document: the format is stable and diffable.
    path2 = tmp_path / "again.json"
    loaded.save_to_file(path2)
    assert path.read_bytes() == path2.read_bytes()


def test_json_is_diffable_and_carries_no_embeddings(tmp_path: Path) -> None:
    sb = build(3, dim=8)
    path = tmp_path / "skillbook.json"
    sb.save_to_file(path)
    text = path.read_text(encoding="utf-8")
    doc = json.loads(text)
    assert doc["schema_version"] == "2"
    top = ["schema_version", "embedding_model", "embedding_dim", "next_ids", "sources", "skills", "operations"]
    assert list(doc) == top
    assert all("embedding" not in s for s in doc["skills"])
    # One line per top-level field, per provenance record, per skill and per logged operation: a changed skill is a
    # changed line.
    assert text.count("\n") == 6 + 3 * 2 + len(doc["sources"]) + len(doc["skills"]) + len(doc["operations"])
    assert text.splitlines()[8 + len(doc["sources"])].startswith('  {"id": "harness-00001"')
    assert "ünïcode" in text


def test_sidecar_removed_when_no_skill_has_an_embedding(tmp_path: Path) -> None:
    path = tmp_path / "skillbook.json"
    sb = build(4, dim=8)
    sb.save_to_file(path)
    assert sidecar_path(path).exists()
    for s in sb.skills(include_inactive=True):
        sb.set_embedding(s.id, None)
    sb.save_to_file(path)
    assert not sidecar_path(path).exists()
    assert Skillbook.load_from_file(path).stats()["embedded"] == 0


def test_failed_save_leaves_previous_files_intact(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "skillbook.json"
    old = build(20, dim=8)
    old.save_to_file(path)
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}

    new = build(30, dim=8, seed=1)
    real_bytes_writer = skillbook_module.bytes_writer

    def exploding_json_writer(*args: Any, **kwargs: Any) -> storage.Writer:
        inner = real_bytes_writer(*args, **kwargs)

        def write(f: IO[bytes]) -> None:
            inner(f)  # the whole new document is in the temporary file...
            raise OSError("disk full")  # ...when the write fails

        return write

    # Fail inside the JSON write (after the sidecar's temporary was written), then inside the sidecar write.
    monkeypatch.setattr(skillbook_module, "bytes_writer", exploding_json_writer)
    with pytest.raises(OSError, match="disk full"):
        new.save_to_file(path)
    monkeypatch.undo()
    assert_same(old, Skillbook.load_from_file(path))

    real_write_header = np.lib.format.write_array_header_1_0
    calls = {"n": 0}

    def half_written(fp: object, header: object) -> None:  # the third array of the sidecar fails
        calls["n"] += 1
        if calls["n"] == 3:
            raise OSError("killed mid-write")
        real_write_header(fp, header)  # type: ignore[arg-type]

    monkeypatch.setattr(np.lib.format, "write_array_header_1_0", half_written)
    with pytest.raises(OSError, match="killed mid-write"):
        new.save_to_file(path)
    monkeypatch.undo()
    after = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    assert after.keys() == before.keys(), "no temporary file may be left behind"
    assert after["skillbook.json"] == before["skillbook.json"]
    assert_same(old, Skillbook.load_from_file(path))


@pytest.mark.parametrize(
    "doc",
    [
        {"skills": []},
        {"schema_version": "1", "skills": []},
        {"schema_version": 2, "skills": []},
        {"version": "2", "bullets": []},
        [],
    ],
    ids=["missing", "v1", "int", "old-keys", "list"],
)
def test_non_v2_files_are_refused(tmp_path: Path, doc: object) -> None:
    path = tmp_path / "skillbook.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(ValueError, match="Skillbook format v2 required — regenerate"):
        Skillbook.load_from_file(path)


def test_malformed_json_names_file_and_position(tmp_path: Path) -> None:
    path = tmp_path / "skillbook.json"
    path.write_text('{\n  "schema_version": "2",\n  "skills": [\n    {"id": "context-00001",,}\n  ]\n}')
    with pytest.raises(SkillbookFormatError, match=r"skillbook\.json, line 4, column 28: malformed JSON"):
        Skillbook.load_from_file(path)


def test_missing_file_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(SkillbookFormatError, match="no such skillbook file"):
        Skillbook.load_from_file(tmp_path / "nope.json")


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda s: s.update(section="strategies"), "section must be one of"),
        (lambda s: s.update(insight=None), "insight is required for a context skill"),
        (lambda s: s.update(keywords=[]), "at least one label"),
        (lambda s: s.update(keywords=["Airline"]), "not normalised"),
        (lambda s: s.update(issue=" "), "issue is required"),
        (lambda s: s.update(content="old field"), "unknown skill field"),
        (lambda s: s.update(helpful_count=-1), "non-negative integer"),
        (lambda s: s.pop("occurrences"), "missing skill field"),
    ],
    ids=["section", "insight", "keywords-empty", "keywords-raw", "issue", "v1-field", "counter", "occurrences"],
)
def test_invalid_skill_in_file_is_refused_with_position(tmp_path: Path, mutate: object, message: str) -> None:
    sb = Skillbook()
    sb.add_skill("context", "Issue", ["airline"], "Insight")
    doc = sb.to_dict()
    mutate(doc["skills"][0])  # type: ignore[operator]
    path = tmp_path / "skillbook.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(SkillbookFormatError, match=r"skills\[0\]") as err:
        Skillbook.load_from_file(path)
    assert message in str(err.value)


def test_duplicate_ids_are_refused(tmp_path: Path) -> None:
    sb = Skillbook()
    sb.add_skill("harness", "Issue", ["tau2"])
    doc = sb.to_dict()
    doc["skills"].append(doc["skills"][0])
    path = tmp_path / "skillbook.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(SkillbookFormatError, match="duplicate id 'harness-00001'"):
        Skillbook.load_from_file(path)


def _saved(tmp_path: Path) -> tuple[Skillbook, Path]:
    sb = build(10, dim=8)
    path = tmp_path / "skillbook.json"
    sb.save_to_file(path)
    return sb, path


def test_sidecar_missing_means_recompute_later(tmp_path: Path) -> None:
    _, path = _saved(tmp_path)
    sidecar_path(path).unlink()
    assert Skillbook.load_from_file(path).stats()["embedded"] == 0


@pytest.mark.parametrize("garbage", [b"", b"not a zip", b"PK\x03\x04truncated"])
def test_corrupt_sidecar_means_recompute_later(tmp_path: Path, garbage: bytes) -> None:
    _, path = _saved(tmp_path)
    sidecar_path(path).write_bytes(garbage)
    with pytest.warns(RuntimeWarning, match="not a readable .npz.*ignored"):
        loaded = Skillbook.load_from_file(path)
    assert loaded.stats()["embedded"] == 0
    assert loaded.stats()["skills"] == 10


def test_sidecar_with_unknown_ids_or_changed_text_is_ignored_per_skill(tmp_path: Path) -> None:
    sb, path = _saved(tmp_path)
    first = sb.skills(include_inactive=True)[0].id
    doc = json.loads(path.read_text())
    doc["skills"][0]["issue"] = "edited by hand after the vectors were computed"
    renamed, doc["skills"][1]["id"] = doc["skills"][1]["id"], f"{doc['skills'][1]['section']}-09999"
    for op in doc["operations"]:  # the log follows the rename (its entries may take texts from the skill)
        op["skill_id"] = doc["skills"][1]["id"] if op["skill_id"] == renamed else op["skill_id"]
    doc["next_ids"][doc["skills"][1]["section"]] = 10000
    path.write_text(json.dumps(doc))
    loaded = Skillbook.load_from_file(path)
    assert loaded.require_skill(first).embedding is None  # stale text: not reused
    assert loaded.require_skill(doc["skills"][1]["id"]).embedding is None  # unknown to the cache
    assert loaded.stats()["embedded"] == 8


def test_sidecar_of_other_model_or_dimension_is_ignored(tmp_path: Path) -> None:
    _, path = _saved(tmp_path)
    doc = json.loads(path.read_text())
    doc["embedding_model"] = "another-model"
    path.write_text(json.dumps(doc))
    assert Skillbook.load_from_file(path).stats()["embedded"] == 0
    doc["embedding_model"] = "test-model"
    doc["embedding_dim"] = 16
    path.write_text(json.dumps(doc))
    with pytest.warns(RuntimeWarning, match="vectors of dimension 8, expected 16"):
        assert Skillbook.load_from_file(path).stats()["embedded"] == 0
    doc["embedding_dim"] = 8
    path.write_text(json.dumps(doc))
    assert Skillbook.load_from_file(path).stats()["embedded"] == 10


def test_sidecar_is_a_standard_npz(tmp_path: Path) -> None:
    sb, path = _saved(tmp_path)
    with zipfile.ZipFile(sidecar_path(path)) as zf:
        assert sorted(zf.namelist()) == ["embeddings.npy", "hashes.npy", "ids.npy", "model.npy"]
    with np.load(sidecar_path(path)) as npz:
        assert npz["embeddings"].dtype == np.float32
        assert npz["embeddings"].shape == (10, 8)
        assert npz["ids"].dtype.kind == npz["hashes"].dtype.kind == "S"  # ASCII: one byte a character
        assert [i.decode() for i in npz["ids"]] == [s.id for s in sb.skills(include_inactive=True)]


def test_a_vector_cache_of_unicode_text_arrays_still_loads(tmp_path: Path) -> None:
    """Caches written before ids and fingerprints were stored as ASCII bytes hold them as `U` arrays."""
    sb, path = _saved(tmp_path)
    with np.load(sidecar_path(path)) as npz:
        arrays = {k: npz[k] for k in npz.files}
    arrays["ids"], arrays["hashes"] = (arrays[k].astype(np.str_) for k in ("ids", "hashes"))
    np.savez(sidecar_path(path), **arrays)
    loaded = Skillbook.load_from_file(path)
    assert loaded.stats()["embedded"] == 10
    for skill in sb.skills(include_inactive=True):
        got = loaded.get_skill(skill.id)
        assert got is not None and np.array_equal(got.embedding, skill.embedding)


def test_save_creates_parent_folders_and_leaves_no_temp_files(tmp_path: Path) -> None:
    path = tmp_path / "a" / "b" / "skillbook.json"
    build(3, dim=4).save_to_file(path)
    assert sorted(os.listdir(path.parent)) == ["skillbook.embeddings.npz", "skillbook.json"]


def test_saved_files_get_the_ordinary_file_mode(tmp_path: Path) -> None:
    path = tmp_path / "skillbook.json"
    build(2, dim=4).save_to_file(path)
    umask = os.umask(0)
    os.umask(umask)
    for p in (path, sidecar_path(path)):
        assert p.stat().st_mode & 0o777 == 0o666 & ~umask
