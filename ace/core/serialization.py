"""The skillbook document (schema v2): its dict form, and the `skillbook.json` + `.embeddings.npz` pair on disk.

`Skillbook.to_dict` / `from_dict` / `save_to_file` / `load_from_file` are thin wrappers over these functions; the
skillbook keeps state, queries and mutations, this module owns the format and its checks.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import ace.json_safe as json_safe
from ace.core.journal import apply_deltas
from ace.core.mutations import checked_vector
from ace.core.shared_values import SharedValues
from ace.core.skill import Embedding, Section, Skill, embedding_input_hash, validate_section
from ace.core.source_table import SourceRecords, SourceTable
from ace.core.storage import (
    FileState,
    PathLike,
    Writer,
    atomic_write_many,
    bytes_writer,
    commit_files,
    format_errors,
    json_bytes,
    read_json_with_digest,
    recover_commit,
    sidecar_path,
)
from ace.core.text_rules import skill_id_number
from ace.core.update_operation import UpdateOperation, compact_entry
from ace.core.vectors import embeddings_writer, read_embeddings
from ace.exceptions import SkillbookError, SkillbookFormatError
from ace.json_safe import iter_object

__all__ = [
    "SCHEMA_VERSION",
    "SECTION_ORDER",
    "SkillbookDocument",
    "commit_intent",
    "held_vector",
    "pair_key",
    "read_skillbook",
    "write_skillbook",
]

SCHEMA_VERSION = "2"
SECTION_ORDER: tuple[Section, ...] = ("context", "harness")
_LIST_FIELDS = ("sources", "skills", "operations")
_TOP_KEYS = frozenset(
    {
        "schema_version",
        "embedding_model",
        "embedding_dim",
        "next_ids",
        "sources",
        "skills",
        "operations",
        "dedup_keep_pairs",
    }
)
_REQUIRED_KEYS = ("schema_version", "skills")
_SKILL_DEFAULTS: dict[str, object] = {
    "active": True,
    "used_count": 0,
    "helpful_count": 0,
    "harmful_count": 0,
    "neutral_count": 0,
}
"""Fields a skill in a file leaves out when they hold these values (a reader takes them as these)."""
_OP_DEFAULTS: dict[str, object] = dict.fromkeys(
    ("skill_id", "section", "issue", "insight", "keywords", "delta", "reason", "trace_uid")
)
"""Fields an audit-log entry in a file leaves out when they are null."""


@dataclass(kw_only=True)
class SkillbookDocument:
    """A skillbook's stored state, checked: what `Skillbook.from_dict` builds a skillbook from."""

    skills: dict[str, Skill] = field(default_factory=dict)
    operations: list[UpdateOperation] = field(default_factory=list)
    next_ids: dict[Section, int] = field(default_factory=lambda: dict.fromkeys(SECTION_ORDER, 1))
    keep_pairs: dict[tuple[str, str], None] = field(default_factory=dict)
    embedding_model: str | None = None
    digest: str | None = None
    """SHA-256 of the file this document was read from, when it is exactly that file (no journal applied)."""

    def to_dict(self) -> dict[str, Any]:
        """The JSON document: stable key and skill order, no embeddings, each trace's provenance record once
        (`ace.core.source_table`); `dedup_keep_pairs` only when non-empty."""
        table = SourceTable(s.occurrences for s in self.skills.values())
        doc: dict[str, Any] = {
            "schema_version": SCHEMA_VERSION,
            "embedding_model": self.embedding_model,
            "embedding_dim": embedding_dim(self.skills.values()),
            "next_ids": dict(self.next_ids),
            "sources": table.rows(),
            "skills": [_without_defaults(s.to_dict(table), _SKILL_DEFAULTS) for s in self.skills.values()],
            "operations": [
                _without_defaults(compact_entry(op.to_dict(), self.skills.get(op.skill_id or "")), _OP_DEFAULTS)
                for op in self.operations
            ],
        }
        if self.keep_pairs:
            doc["dedup_keep_pairs"] = [list(k) for k in self.keep_pairs]
        return doc

    @classmethod
    def from_dict(cls, data: Any, *, source: str = "skillbook") -> SkillbookDocument:
        """Check `data` against schema v2 and every invariant of the stored state."""
        _check_top(data, source)
        doc = cls(embedding_model=data.get("embedding_model"))
        shared = SharedValues()
        records = SourceRecords(shared)
        for raw in _check_sources(data, source):
            _add_record(records, raw, source)
        raw_skills = data["skills"]
        for i, raw in enumerate(raw_skills):
            doc._add_skill(i, raw, shared, records, source)
        for raw in _check_operations(data, source):
            doc._add_operation(raw, shared, source)
        doc._finish(data, source)
        return doc

    @classmethod
    def from_text(cls, text: str, *, source: str = "skillbook") -> tuple[SkillbookDocument, dict[str, Any]]:
        """`from_dict` of the JSON document `text`, its skills and operations parsed and checked one at a time
        (`json_safe.iter_object`), so their dicts are never all alive at once; returns the document and the
        top-level fields but those two. Raises on every file `from_dict(json_safe.loads(text))` refuses, and on a
        few it takes (a repeated top-level key): read those with it, which names the problem."""
        doc = cls()
        shared = SharedValues()
        records = SourceRecords(shared)
        top: dict[str, Any] = {}
        counts = dict.fromkeys(_LIST_FIELDS, 0)
        for key, value, item in iter_object(text, split=_LIST_FIELDS):
            if not item:
                top[key] = value
            elif key == "sources":
                if counts["skills"]:
                    raise SkillbookFormatError(f"{source}: 'sources' after 'skills'", path=source)  # read whole
                _add_record(records, value, source)
            elif key == "skills":
                doc._add_skill(counts[key], value, shared, records, source)
                counts[key] += 1
            else:
                doc._add_operation(value, shared, source)
        _check_top(top, source)
        _check_sources(top, source)
        _check_operations(top, source)
        doc.embedding_model = top.get("embedding_model")
        doc._finish(top, source)
        return doc, top

    def _add_skill(self, i: int, raw: Any, shared: SharedValues, records: SourceRecords, source: str) -> None:
        try:
            skill = Skill.from_dict(raw, shared=shared, sources=records)
        except ValueError as e:
            raise SkillbookFormatError(f"{source}: skills[{i}]: {e}", path=source) from None
        if skill.id in self.skills:
            raise SkillbookFormatError(f"{source}: skills[{i}]: duplicate id {skill.id!r}", path=source)
        self.skills[skill.id] = skill

    def _add_operation(self, raw: Any, shared: SharedValues, source: str) -> None:
        try:
            self.operations.append(UpdateOperation.from_dict(raw, shared=shared, skills=self.skills))
        except ValueError as e:
            raise SkillbookFormatError(f"{source}: operations: {e}", path=source) from None

    def _finish(self, data: dict[str, Any], source: str) -> None:
        self.next_ids = _next_ids(self, data.get("next_ids"), source)
        self.keep_pairs = _keep_pairs(self, data.get("dedup_keep_pairs", []), source)


def _without_defaults(entry: dict[str, Any], defaults: Mapping[str, object]) -> dict[str, Any]:
    """`entry` without the fields that hold their default (`is` for `None` and booleans: `0 == False`)."""
    return {
        k: v
        for k, v in entry.items()
        if k not in defaults or not (v is defaults[k] or (type(v) is int and v == defaults[k]))
    }


def _check_top(data: Any, source: str) -> None:
    """The top level of a schema v2 document: version, known and required fields, their types."""
    if not isinstance(data, dict) or data.get("schema_version") != SCHEMA_VERSION:
        found = data.get("schema_version") if isinstance(data, dict) else type(data).__name__
        raise SkillbookFormatError(
            f"Skillbook format v2 required — regenerate ({source}: schema_version is {found!r})", path=source
        )
    unknown = set(data) - _TOP_KEYS
    if unknown:
        raise SkillbookFormatError(f"{source}: unknown top-level field(s) {sorted(unknown)}", path=source)
    missing = [key for key in _REQUIRED_KEYS if key not in data]
    if missing:
        raise SkillbookFormatError(
            f'{source}: the required field {missing[0]!r} is missing (a skillbook with no skills has "skills": [])',
            path=source,
        )
    model = data.get("embedding_model")
    if model is not None and not isinstance(model, str):
        raise SkillbookFormatError(f"{source}: 'embedding_model' must be a string or null", path=source)
    if not isinstance(data["skills"], list):
        raise SkillbookFormatError(f"{source}: 'skills' must be a list", path=source)


def _check_sources(data: dict[str, Any], source: str) -> list[Any]:
    raw = data.get("sources", [])
    if not isinstance(raw, list):
        raise SkillbookFormatError(f"{source}: 'sources' must be a list", path=source)
    return raw


def _add_record(records: SourceRecords, raw: Any, source: str) -> None:
    try:
        records.add(raw)
    except ValueError as e:
        raise SkillbookFormatError(f"{source}: {e}", path=source) from None


def _check_operations(data: dict[str, Any], source: str) -> list[Any]:
    raw_ops = data.get("operations", [])
    if not isinstance(raw_ops, list):
        raise SkillbookFormatError(f"{source}: 'operations' must be a list", path=source)
    return raw_ops


def write_skillbook(
    path: str | os.PathLike[str],
    doc: SkillbookDocument,
    *,
    version: int = 0,
    sidecars: Callable[[FileState], Sequence[tuple[Path, Writer]]] | None = None,
    also: Sequence[tuple[PathLike, Writer]] = (),
) -> FileState:
    """Write `path` (JSON) and its `.embeddings.npz` sidecar atomically; drop a sidecar with no vectors.

    `sidecars(saved)` names more files to write in the same all-or-nothing step (e.g. the search index), given the
    file about to be saved: its path, the SHA-256 of its bytes and the skillbook's `version`. `also`: more files of
    the same folder (a review queue) committed with them by `commit_files`, all or nothing even against a kill; the
    next `read_skillbook` finishes a commit a kill interrupted. Returns the saved file's state.
    """
    data = json_bytes(doc.to_dict(), one_per_line=_LIST_FIELDS)
    saved = FileState(str(path), hashlib.sha256(data).hexdigest(), version)
    embedded = [s for s in doc.skills.values() if s.embedding is not None]
    vectors = [s.embedding for s in embedded if s.embedding is not None]
    sidecar = sidecar_path(path)
    files: list[tuple[str | os.PathLike[str], Writer]] = [*(sidecars(saved) if sidecars is not None else ())]
    if vectors:
        ids = [s.id for s in embedded]
        hashes = [embedding_input_hash(s.embedding_text()) for s in embedded]
        cache = embeddings_writer(ids=ids, hashes=hashes, matrix=vectors, model=doc.embedding_model)
        files.append((sidecar, cache))
    files.append((path, bytes_writer(data)))  # the skillbook last: renamed once all are written
    if also:
        commit_files([*files, *also], intent=commit_intent(path))
    else:
        atomic_write_many(files)
    if not vectors:
        sidecar.unlink(missing_ok=True)
    return saved


def commit_intent(path: str | os.PathLike[str]) -> Path:
    """`skillbook.json` -> `.skillbook.json.commit`: the record of a commit of the skillbook with other files."""
    p = Path(path)
    return p.with_name(f".{p.name}.commit")


def read_skillbook(path: str | os.PathLike[str], *, journal: Sequence[Mapping[str, Any]] = ()) -> SkillbookDocument:
    """Read a skillbook file (schema v2 only), apply `journal` deltas, reuse every cached vector whose text is
    unchanged."""
    recover_commit(commit_intent(path))  # a kill interrupted a commit with other files: finish it first
    if journal:
        data, _ = read_json_with_digest(path)
        if isinstance(data, dict):
            data = apply_deltas(data, journal, source=str(path))
        doc = SkillbookDocument.from_dict(data, source=str(path))
    else:
        doc, data = _read_document(Path(path))
    stored_dim = data.get("embedding_dim")
    dim = stored_dim if isinstance(stored_dim, int) and not isinstance(stored_dim, bool) else None
    del data  # the parsed JSON: the skills hold what they need of it; free it before the vectors come in
    cached = read_embeddings(sidecar_path(path), model=doc.embedding_model, dim=dim, max_rows=len(doc.skills))
    if cached is not None:
        for skill in doc.skills.values():
            hit = cached.get(skill.id)
            if hit is not None and hit[0] == embedding_input_hash(skill.embedding_text()):
                object.__setattr__(skill, "embedding", hit[1])
    return doc


def _read_document(path: Path) -> tuple[SkillbookDocument, Any]:
    """The document in the file (with its digest) and its top-level fields: streamed (`SkillbookDocument.from_text`),
    or, when the stream refuses it, parsed whole and checked by `from_dict`, which names what is wrong."""
    with format_errors(path):
        raw = json_safe.read_bytes(path)
    digest = hashlib.sha256(raw).hexdigest()
    try:
        text: str | bytes = raw.decode("utf-8")
    except UnicodeDecodeError:
        text = raw  # `loads` says where
    del raw  # the file's bytes go before its skills are built
    if isinstance(text, str):
        try:
            doc, top = SkillbookDocument.from_text(text, source=str(path))
        except Exception:
            pass
        else:
            doc.digest = digest
            return doc, top
    with format_errors(path):
        data = json_safe.loads(text, file=str(path))
    doc = SkillbookDocument.from_dict(data, source=str(path))
    doc.digest = digest
    return doc, data


def held_vector(skill_id: str, embedding: Embedding, skills: Iterable[Skill]) -> Embedding:
    """`embedding` checked for `skill_id` (`checked_vector`, against the dimension of the other skills' vectors), as
    the skill holds it: read-only, a copy of a writable array (the caller's, which could change behind the checks)."""
    vector = checked_vector(skill_id, embedding, embedding_dim(skills, exclude=skill_id))
    if vector.flags.writeable:
        vector = vector.copy()
        vector.flags.writeable = False
    return vector


def embedding_dim(skills: Iterable[Skill], exclude: str | None = None) -> int | None:
    """The dimension of the first cached vector (all vectors of a skillbook share it), or `None`."""
    for s in skills:
        if s.embedding is not None and s.id != exclude:
            return int(s.embedding.shape[0])
    return None


def pair_key(first_id: str, second_id: str) -> tuple[str, str]:
    """Order-free identity of a pair of skill ids; refuses a skill paired with itself."""
    if first_id == second_id:
        raise SkillbookError(f"a pair needs two different skills, got {first_id!r} twice")
    return (first_id, second_id) if first_id < second_id else (second_id, first_id)


def _keep_pairs(doc: SkillbookDocument, raw: Any, source: str) -> dict[tuple[str, str], None]:
    """Stored KEEP pairs: each two distinct ids of skills in this skillbook."""
    if not isinstance(raw, list):
        raise SkillbookFormatError(f"{source}: 'dedup_keep_pairs' must be a list of [id, id] pairs", path=source)
    out: dict[tuple[str, str], None] = {}
    for i, pair in enumerate(raw):
        if (
            not isinstance(pair, list)
            or len(pair) != 2
            or not all(isinstance(x, str) for x in pair)
            or pair[0] == pair[1]
        ):
            raise SkillbookFormatError(
                f"{source}: dedup_keep_pairs[{i}] must be two different skill ids, got {pair!r}", path=source
            )
        missing = [x for x in pair if x not in doc.skills]
        if missing:
            raise SkillbookFormatError(f"{source}: dedup_keep_pairs[{i}] names unknown skill(s) {missing}", path=source)
        out[pair_key(pair[0], pair[1])] = None
    return out


def _next_ids(doc: SkillbookDocument, raw: Any, source: str) -> dict[Section, int]:
    """Stored counters, raised past any id present so ids are never reused."""
    out: dict[Section, int] = dict.fromkeys(SECTION_ORDER, 1)
    if raw is not None:
        if not isinstance(raw, dict) or not all(
            isinstance(v, int) and not isinstance(v, bool) and v >= 1 for v in raw.values()
        ):
            raise SkillbookFormatError(f"{source}: 'next_ids' must map sections to positive integers", path=source)
        for sec, value in raw.items():
            out[validate_section(sec)] = value
    for section in SECTION_ORDER:  # a skill's id is checked: its section, a dash (8 characters) and digits
        numbers = [int(skill_id[8:]) for skill_id, skill in doc.skills.items() if skill.section == section]
        out[section] = max(out[section], max(numbers, default=0) + 1)
    purged = {
        op.skill_id for op in doc.operations if op.type == "ADD" and op.skill_id and op.skill_id not in doc.skills
    }
    for parsed in filter(None, map(skill_id_number, purged)):
        purged_section, number = validate_section(parsed[0]), parsed[1]
        out[purged_section] = max(out[purged_section], number + 1)
    return out
