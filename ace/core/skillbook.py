"""`Skillbook`: the flat, thread-safe set of skills, with its invariants, audit log and rendering."""

from __future__ import annotations

import dataclasses
import os
import threading
from collections import deque
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any, assert_never

import numpy as np

from ace.core.insight_source import InsightSource, OperationType, utc_now
from ace.core.journal import apply_deltas
from ace.core.skill import (
    VALID_SECTIONS,
    Embedding,
    Quarantine,
    Section,
    Skill,
    embedding_input_hash,
    normalize_keywords,
    skill_summary,
    validate_insight,
    validate_issue,
    validate_section,
)
from ace.core.storage import (
    atomic_write_many,
    embeddings_writer,
    gc_paused,
    json_writer,
    read_embeddings,
    read_json_file,
    sidecar_path,
)
from ace.core.text_rules import DEFAULT_MAX_TEXT_CHARS, skill_id_number
from ace.core.update_operation import UpdateOperation
from ace.exceptions import SkillbookError, SkillbookFormatError, UnknownSkillError
from ace.redaction import Redactor
from ace.redaction.sink import redact_commit

__all__ = ["SCHEMA_VERSION", "VALID_SECTIONS", "Skill", "Skillbook", "UpdateOperation"]

SCHEMA_VERSION = "2"
_SECTION_ORDER: tuple[Section, ...] = ("context", "harness")
_CHANGELOG_SIZE = 10_000


class Skillbook:
    """A flat set of skills, each mutation checked against the spec's invariants and recorded twice:
    in the skill's own `occurrences` chain and in the skillbook's `operations` log.

    All methods are safe to call from several threads.
    """

    def __init__(self, *, max_text_chars: int | None = DEFAULT_MAX_TEXT_CHARS) -> None:
        """`max_text_chars`: longest `issue`, and longest `insight`, an add or update may write (`None`: no cap)."""
        self.max_text_chars = max_text_chars
        """Cap on new issue / insight text; files are loaded whatever their length."""
        self._lock = threading.RLock()
        self._skills: dict[str, Skill] = {}
        self._sections: dict[Section, dict[str, None]] = {s: {} for s in _SECTION_ORDER}
        self._next_ids: dict[Section, int] = dict.fromkeys(_SECTION_ORDER, 1)
        self._operations: list[UpdateOperation] = []
        self._version = 0
        self._active = 0
        self._changes: deque[tuple[int, str]] = deque(maxlen=_CHANGELOG_SIZE)
        self._keep_pairs: dict[tuple[str, str], None] = {}
        self.redactor: Redactor | None = Redactor()
        """Redacts every text a mutation stores (`ace.redaction.sink`); `None` stores them as given."""
        self.embedding_model: str | None = None
        """Name of the model the cached embeddings came from; a different model means re-embed."""
        self.caches: dict[str, object] = {}
        """Derived data rebuilt on demand (e.g. the search index), keyed by owner; never saved or copied."""

    # ----------------------------------------------------------------- reading
    @property
    def active_count(self) -> int:
        """Number of active skills, kept up to date by every mutation (O(1))."""
        return self._active

    def __len__(self) -> int:
        """Number of stored skills, inactive ones included."""
        return len(self._skills)

    def __contains__(self, skill_id: object) -> bool:
        return skill_id in self._skills

    @property
    def version(self) -> int:
        """Increases by one with every mutation; indexes compare it to know when they are stale."""
        return self._version

    @property
    def operations(self) -> tuple[UpdateOperation, ...]:
        """The audit log, oldest first."""
        with self._lock:
            return tuple(self._operations)

    def operations_since(self, position: int) -> tuple[UpdateOperation, ...]:
        """The audit-log entries from `position` on (`len(operations)` before them), without copying the rest."""
        with self._lock:
            return tuple(self._operations[position:])

    @property
    def operations_count(self) -> int:
        """Length of the audit log."""
        with self._lock:
            return len(self._operations)

    @property
    def keep_pairs(self) -> tuple[tuple[str, str], ...]:
        """Pairs of skills a deduplication decided to keep apart (ids sorted within a pair), oldest first."""
        with self._lock:
            return tuple(self._keep_pairs)

    def is_kept_pair(self, first_id: str, second_id: str) -> bool:
        """Whether a deduplication already decided to keep these two skills apart."""
        return _pair_key(first_id, second_id) in self._keep_pairs

    def get_skill(self, skill_id: str) -> Skill | None:
        """The skill with this id, or `None`."""
        return self._skills.get(skill_id)

    def require_skill(self, skill_id: str) -> Skill:
        """The skill with this id; raises `UnknownSkillError` (with close matches) otherwise."""
        skill = self._skills.get(skill_id)
        if skill is None:
            raise UnknownSkillError(skill_id, list(self._skills))
        return skill

    def skills(self, *, include_inactive: bool = False, section: Section | None = None) -> list[Skill]:
        """Skills in creation order; only the visible ones (active, not quarantined) unless `include_inactive`."""
        with self._lock:
            if section is None:
                pool: Iterator[Skill] = iter(self._skills.values())
            else:
                pool = (self._skills[i] for i in self._sections[validate_section(section)])
            return [s for s in pool if include_inactive or s.visible]

    def changes_since(self, version: int) -> set[str] | None:
        """Ids of skills changed after `version`, or `None` when the change log no longer reaches back."""
        with self._lock:
            if version == self._version:
                return set()
            if not self._changes or self._changes[0][0] > version + 1:
                return None
            changed: set[str] = set()
            for v, sid in reversed(self._changes):  # newest first: stop at the first change already seen
                if v <= version:
                    break
                changed.add(sid)
            return changed

    # --------------------------------------------------------------- mutations
    def add_skill(
        self,
        section: str,
        issue: str,
        keywords: Sequence[str],
        insight: str | None = None,
        *,
        insight_source: InsightSource | None = None,
    ) -> Skill:
        """Add a skill and return it; its id is `<section>-NNNNN`, never reused."""
        op = UpdateOperation(
            type="ADD", section=section, issue=issue, insight=insight, keywords=_keyword_list(keywords)
        )
        with self._lock:
            return self._commit(op, insight_source)

    def update_skill(
        self,
        skill_id: str,
        issue: str,
        keywords: Sequence[str] | None = None,
        insight: str | None = None,
        *,
        insight_source: InsightSource | None = None,
    ) -> Skill:
        """Rewrite a skill's issue (required), and its keywords / insight when given (omit to keep them)."""
        op = UpdateOperation(
            type="UPDATE",
            skill_id=skill_id,
            issue=issue,
            insight=insight,
            keywords=_keyword_list(keywords) if keywords is not None else None,
        )
        with self._lock:
            return self._commit(op, insight_source)

    def tag_skill(self, skill_id: str, delta: int, *, insight_source: InsightSource | None = None) -> Skill:
        """Record one use of a skill: delta 1 helpful, -1 harmful, 0 neutral."""
        with self._lock:
            return self._commit(UpdateOperation(type="TAG", skill_id=skill_id, delta=delta), insight_source)

    def remove_skill(
        self,
        skill_id: str,
        reason: str,
        *,
        insight_source: InsightSource | None = None,
        soft: bool = True,
    ) -> Skill:
        """Deactivate a skill (soft, the default: history kept) or, with `soft=False`, purge it for good."""
        with self._lock:
            if not soft:
                skill = self.require_skill(skill_id)
                self.purge(skill_id, reason)
                return skill
            return self._commit(UpdateOperation(type="REMOVE", skill_id=skill_id, reason=reason), insight_source)

    def quarantine_skill(
        self,
        skill_id: str,
        reason: str,
        *,
        evidence: Sequence[str] = (),
        insight_source: InsightSource | None = None,
    ) -> Skill:
        """Take an active skill out of every prompt and search, keeping it (and its counters) in the skillbook.

        `evidence`: the `trace_uid`s of the harmful traces the decision rests on (none for a person's call).
        """
        op = UpdateOperation(type="QUARANTINE", skill_id=skill_id, reason=reason, evidence=list(evidence))
        with self._lock:
            return self._commit(op, insight_source)

    def release_skill(self, skill_id: str, reason: str, *, insight_source: InsightSource | None = None) -> Skill:
        """Bring a quarantined skill back into prompts and search; the evidence before it no longer counts."""
        with self._lock:
            return self._commit(UpdateOperation(type="RELEASE", skill_id=skill_id, reason=reason), insight_source)

    def purge(self, skill_id: str, reason: str | None = None) -> None:
        """Delete a skill and its history for good. For operators only: no agent tool reaches this."""
        with self._lock:
            self._commit(UpdateOperation(type="PURGE", skill_id=skill_id, reason=reason), None)

    def apply_operations(
        self, operations: Sequence[UpdateOperation], *, insight_source: InsightSource | None = None
    ) -> list[Skill]:
        """Apply a batch all or nothing: if one operation is refused, none of them is applied."""
        with self._lock:
            snapshot = self._snapshot()
            results: list[Skill] = []
            try:
                for i, op in enumerate(operations):
                    try:
                        results.append(self._commit(op, insight_source))
                    except SkillbookError as e:
                        raise SkillbookError(
                            f"operation {i} ({op.type}) refused, so none of the batch was applied: {e}"
                        ) from e
            except BaseException:
                self._restore(snapshot)
                raise
            return results

    def record_keep_pair(self, first_id: str, second_id: str) -> bool:
        """Remember that two skills are distinct enough to keep (a dedup KEEP), so the pair is not asked again.

        Not a content mutation: no occurrence or operation is logged. Returns `False` when already recorded.
        """
        with self._lock:
            key = _pair_key(first_id, second_id)
            for skill_id in key:
                self.require_skill(skill_id)
            if key in self._keep_pairs:
                return False
            self._keep_pairs[key] = None
            return True

    def set_embedding(self, skill_id: str, embedding: Embedding | None) -> None:
        """Cache a skill's vector (float32, 1-D); not a content mutation, so nothing is logged."""
        with self._lock:
            skill = self.require_skill(skill_id)
            if embedding is None:
                object.__setattr__(skill, "embedding", None)  # the one writer of Skill.embedding
                return
            vector = np.asarray(embedding, dtype=np.float32).reshape(-1)
            dim = self._embedding_dim(exclude=skill_id)
            if not np.isfinite(vector).all():
                raise SkillbookError(
                    f"embedding of {skill_id} contains NaN or infinite values: the embedder returned a broken vector; "
                    "re-embed the skill (or check the embedding model)"
                )
            if dim is not None and vector.shape[0] != dim:
                raise SkillbookError(
                    f"embedding of {skill_id} has dimension {vector.shape[0]} but the skillbook's vectors have {dim}: "
                    "clear all embeddings (set_embedding(id, None)) before switching embedding models"
                )
            object.__setattr__(skill, "embedding", vector)

    # ---------------------------------------------------------------- internal
    def _commit(self, op: UpdateOperation, source: InsightSource | None) -> Skill:
        """Validate and apply one operation, append its provenance, log it. Caller holds the lock."""
        op, source = redact_commit(self.redactor, op, source)
        now = utc_now()
        match op.type:
            case "ADD":
                skill = self._build_new(op, now)
            case "UPDATE":
                skill = self._build_update(op, now)
            case "TAG":
                skill = self._build_tag(op, now)
            case "REMOVE":
                skill = self._build_remove(op, now)
            case "QUARANTINE" | "RELEASE":
                skill = self._build_quarantine(op, now)
            case "PURGE":
                skill = self.require_skill(op.skill_id or "")
                del self._skills[skill.id]
                del self._sections[skill.section][skill.id]
                self._active -= skill.active
                self._keep_pairs = {k: None for k in self._keep_pairs if skill.id not in k}
                self._log(dataclasses.replace(op, section=skill.section, timestamp=now), skill.id)
                return skill
            case _ as unreachable:
                assert_never(unreachable)
        kind: OperationType = op.type
        entry = dataclasses.replace(source or InsightSource.manual(), operation_type=kind)
        if kind in ("REMOVE", "QUARANTINE", "RELEASE"):
            entry = dataclasses.replace(entry, learning_text=op.reason)
        object.__setattr__(skill, "occurrences", [*skill.occurrences, entry])  # `skill` is new here: not shared yet
        previous = self._skills.get(skill.id)
        if previous is None:
            self._sections[skill.section][skill.id] = None
        self._active += skill.active - (previous.active if previous is not None else False)
        self._skills[skill.id] = skill
        self._log(
            dataclasses.replace(
                op,
                skill_id=skill.id,
                section=skill.section,
                issue=skill.issue if op.type in ("ADD", "UPDATE") else None,
                insight=skill.insight if op.type in ("ADD", "UPDATE") else None,
                keywords=list(skill.keywords) if op.type in ("ADD", "UPDATE") else None,
                trace_uid=entry.trace_uid,
                timestamp=now,
            ),
            skill.id,
        )
        return skill

    def _build_new(self, op: UpdateOperation, now: str) -> Skill:
        section = validate_section(op.section)
        issue = validate_issue(op.issue, max_chars=self.max_text_chars)
        if op.keywords is None:
            raise SkillbookError("keywords are required when adding a skill: pass 1-5 short labels")
        keywords = normalize_keywords(op.keywords)
        insight = validate_insight(section, op.insight, max_chars=self.max_text_chars)
        number = self._next_ids[section]
        while f"{section}-{number:05d}" in self._skills:  # a new id never replaces a skill
            number += 1
        skill_id = f"{section}-{number:05d}"
        self._next_ids[section] = number + 1
        return Skill(
            id=skill_id,
            section=section,
            keywords=keywords,
            issue=issue,
            insight=insight,
            created_at=now,
            updated_at=now,
        )

    def _active_skill(self, skill_id: str | None, verb: str) -> Skill:
        skill = self.require_skill(skill_id or "")
        if not skill.active:
            raise SkillbookError(
                f"skill {skill.id} was removed ({skill.removal_reason or 'no reason given'}), so it cannot be "
                f"{verb}: add a new skill instead"
            )
        return skill

    def _build_update(self, op: UpdateOperation, now: str) -> Skill:
        old = self._active_skill(op.skill_id, "updated")
        issue = validate_issue(op.issue, max_chars=self.max_text_chars)
        keywords = normalize_keywords(op.keywords) if op.keywords is not None else list(old.keywords)
        insight = (
            old.insight
            if op.insight is None
            else validate_insight(old.section, op.insight, max_chars=self.max_text_chars)
        )
        changed = (issue, insight, keywords) != (old.issue, old.insight, old.keywords)
        return dataclasses.replace(
            old,
            issue=issue,
            insight=insight,
            keywords=keywords,
            embedding=None if changed else old.embedding,
            updated_at=now,
        )

    def _build_tag(self, op: UpdateOperation, now: str) -> Skill:
        old = self._active_skill(op.skill_id, "tagged")
        delta = op.delta
        if type(delta) is not int or delta not in (-1, 0, 1):  # not True, 1.0 or "1"
            raise SkillbookError(
                f"delta must be -1 (harmful), 0 (neutral) or 1 (helpful), as an integer; got {delta!r} "
                f"({type(delta).__name__})"
            )
        return dataclasses.replace(
            old,
            used_count=old.used_count + 1,
            helpful_count=old.helpful_count + (delta == 1),
            harmful_count=old.harmful_count + (delta == -1),
            neutral_count=old.neutral_count + (delta == 0),
            updated_at=now,
        )

    def _build_remove(self, op: UpdateOperation, now: str) -> Skill:
        old = self._active_skill(op.skill_id, "removed again")
        if not isinstance(op.reason, str) or not op.reason.strip():
            raise SkillbookError("reason is required to remove a skill: say why it is harmful or outdated")
        return dataclasses.replace(old, active=False, updated_at=now)

    def _build_quarantine(self, op: UpdateOperation, now: str) -> Skill:
        quarantining = op.type == "QUARANTINE"
        old = self._active_skill(op.skill_id, "quarantined" if quarantining else "released")
        if not isinstance(op.reason, str) or not op.reason.strip():
            verb = "quarantine" if quarantining else "release"
            raise SkillbookError(f"reason is required to {verb} a skill: say why, for the audit log")
        if quarantining and old.quarantine is not None:
            raise SkillbookError(
                f"skill {old.id} is already quarantined ({old.quarantine.reason}): release it first to quarantine "
                "it again"
            )
        if not quarantining and old.quarantine is None:
            raise SkillbookError(f"skill {old.id} is not quarantined, so there is nothing to release")
        record = Quarantine(reason=op.reason.strip(), evidence=tuple(op.evidence or ()), timestamp=now)
        return dataclasses.replace(old, quarantine=record if quarantining else None, updated_at=now)

    def _log(self, op: UpdateOperation, skill_id: str) -> None:
        self._operations.append(op)
        self._version += 1
        self._changes.append((self._version, skill_id))

    def _snapshot(self) -> tuple[Any, ...]:
        return (
            dict(self._skills),
            {s: dict(ids) for s, ids in self._sections.items()},
            dict(self._next_ids),
            dict(self._keep_pairs),
            len(self._operations),
            self._version,
            len(self._changes),
            self._active,
        )

    def _restore(self, snap: tuple[Any, ...]) -> None:
        skills, sections, next_ids, keep_pairs, n_ops, version, n_changes, active = snap
        self._active = active
        self._skills, self._sections, self._next_ids, self._keep_pairs = skills, sections, next_ids, keep_pairs
        del self._operations[n_ops:]
        self._version = version
        while len(self._changes) > n_changes:
            self._changes.pop()

    @contextmanager
    def locked(self) -> Iterator[None]:
        """Hold the skillbook's lock for a consistent multi-step read (e.g. building an index)."""
        with self._lock:
            yield

    # --------------------------------------------------------------- rendering
    def as_prompt(self) -> str:
        """Visible skills (active, not quarantined) grouped by section, in the spec's prompt format; `""` when
        there are none."""
        lines: list[str] = []
        with self._lock:
            for section in _SECTION_ORDER:
                active = [self._skills[i] for i in self._sections[section] if self._skills[i].visible]
                if not active:
                    continue
                lines.append(f"## {section}")
                for s in active:
                    lines.append(f"- [{s.id}]")
                    lines.append(f"Keywords: {', '.join(s.keywords)}")
                    lines.append(f"Issue: {s.issue}")
                    if s.insight:
                        lines.append(f"Insight: {s.insight}")
        return "\n".join(lines)

    def to_llm_dict(self) -> dict[str, Any]:
        """Visible skills as plain data for an LLM prompt or tool result."""
        return {"skills": [skill_summary(s) for s in self.skills()]}

    def stats(self) -> dict[str, Any]:
        """Counts for dashboards and logs: skills by section and state, tags, occurrences, cached vectors."""
        with self._lock:
            all_skills = list(self._skills.values())
        active = [s for s in all_skills if s.active]
        return {
            "skills": len(all_skills),
            "active": len(active),
            "inactive": len(all_skills) - len(active),
            "quarantined": sum(1 for s in active if s.quarantine is not None),
            "sections": {sec: sum(1 for s in active if s.section == sec) for sec in _SECTION_ORDER},
            "tags": {
                "helpful": sum(s.helpful_count for s in all_skills),
                "harmful": sum(s.harmful_count for s in all_skills),
                "neutral": sum(s.neutral_count for s in all_skills),
            },
            "occurrences": sum(len(s.occurrences) for s in all_skills),
            "operations": len(self._operations),
            "embedded": sum(1 for s in all_skills if s.embedding is not None),
        }

    # ----------------------------------------------------------------- storage
    def to_dict(self) -> dict[str, Any]:
        """The JSON document (schema v2): stable key and skill order, no embeddings.

        `dedup_keep_pairs` (pairs of skill ids a deduplication decided to keep apart) is only present when
        there is at least one.
        """
        with self._lock:
            doc: dict[str, Any] = {
                "schema_version": SCHEMA_VERSION,
                "embedding_model": self.embedding_model,
                "embedding_dim": self._embedding_dim(),
                "next_ids": dict(self._next_ids),
                "skills": [s.to_dict() for s in self._skills.values()],
                "operations": [op.to_dict() for op in self._operations],
            }
            if self._keep_pairs:
                doc["dedup_keep_pairs"] = [list(k) for k in self._keep_pairs]
            return doc

    @classmethod
    def from_dict(cls, data: Any, *, source: str = "skillbook") -> Skillbook:
        """Rebuild a skillbook from `to_dict` output, checking the schema version and every invariant."""
        if not isinstance(data, dict) or data.get("schema_version") != SCHEMA_VERSION:
            found = data.get("schema_version") if isinstance(data, dict) else type(data).__name__
            raise SkillbookFormatError(
                f"Skillbook format v2 required — regenerate ({source}: schema_version is {found!r})",
                path=source,
            )
        unknown = set(data) - _TOP_KEYS
        if unknown:
            raise SkillbookFormatError(f"{source}: unknown top-level field(s) {sorted(unknown)}", path=source)
        book = cls()
        model = data.get("embedding_model")
        if model is not None and not isinstance(model, str):
            raise SkillbookFormatError(f"{source}: 'embedding_model' must be a string or null", path=source)
        book.embedding_model = model
        raw_skills = data.get("skills", [])
        if not isinstance(raw_skills, list):
            raise SkillbookFormatError(f"{source}: 'skills' must be a list", path=source)
        for i, raw in enumerate(raw_skills):
            try:
                skill = Skill.from_dict(raw)
            except ValueError as e:
                raise SkillbookFormatError(f"{source}: skills[{i}]: {e}", path=source) from None
            if skill.id in book._skills:
                raise SkillbookFormatError(f"{source}: skills[{i}]: duplicate id {skill.id!r}", path=source)
            book._skills[skill.id] = skill
            book._active += skill.active
            book._sections[skill.section][skill.id] = None
        raw_ops = data.get("operations", [])
        if not isinstance(raw_ops, list):
            raise SkillbookFormatError(f"{source}: 'operations' must be a list", path=source)
        try:
            book._operations = [UpdateOperation.from_dict(op) for op in raw_ops]
        except ValueError as e:
            raise SkillbookFormatError(f"{source}: operations: {e}", path=source) from None
        book._next_ids = book._restore_next_ids(data.get("next_ids"), source)
        book._keep_pairs = book._restore_keep_pairs(data.get("dedup_keep_pairs", []), source)
        return book

    def save_to_file(self, path: str | os.PathLike[str]) -> None:
        """Write `path` (JSON) and its `.embeddings.npz` sidecar atomically; drop a sidecar with no vectors."""
        with self._lock, gc_paused():
            payload = self.to_dict()
            embedded = [s for s in self._skills.values() if s.embedding is not None]
            ids = [s.id for s in embedded]
            hashes = [embedding_input_hash(s.embedding_text()) for s in embedded]
            vectors = [s.embedding for s in embedded if s.embedding is not None]
            model = self.embedding_model
        sidecar = sidecar_path(path)
        if vectors:
            cache = embeddings_writer(ids=ids, hashes=hashes, matrix=np.stack(vectors), model=model)
            atomic_write_many([(sidecar, cache), (path, json_writer(payload, one_per_line=_LIST_FIELDS))])
        else:
            atomic_write_many([(path, json_writer(payload, one_per_line=_LIST_FIELDS))])
            sidecar.unlink(missing_ok=True)

    @classmethod
    def load_from_file(cls, path: str | os.PathLike[str], *, journal: Sequence[Mapping[str, Any]] = ()) -> Skillbook:
        """Read a skillbook file (schema v2 only) and reuse every cached vector whose text is unchanged.

        `journal`: deltas (`ace.core.journal.delta_since`) recorded after the file was saved, applied in order,
        so the result is the skillbook after the last one (a checkpoint's snapshot + its journal).
        """
        with gc_paused():
            data = read_json_file(path)
            if journal and isinstance(data, dict):
                data = apply_deltas(data, journal, source=str(path))
            book = cls.from_dict(data, source=str(path))
        stored_dim = data.get("embedding_dim")
        dim = stored_dim if isinstance(stored_dim, int) and not isinstance(stored_dim, bool) else None
        cached = read_embeddings(sidecar_path(path), model=book.embedding_model, dim=dim, max_rows=len(book))
        if cached:
            for skill in book._skills.values():
                hit = cached.get(skill.id)
                if hit is not None and hit[0] == embedding_input_hash(skill.embedding_text()):
                    object.__setattr__(skill, "embedding", hit[1])
        return book

    def _embedding_dim(self, exclude: str | None = None) -> int | None:
        for s in self._skills.values():
            if s.embedding is not None and s.id != exclude:
                return int(s.embedding.shape[0])
        return None

    def _restore_keep_pairs(self, raw: Any, source: str) -> dict[tuple[str, str], None]:
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
            missing = [x for x in pair if x not in self._skills]
            if missing:
                raise SkillbookFormatError(
                    f"{source}: dedup_keep_pairs[{i}] names unknown skill(s) {missing}", path=source
                )
            out[_pair_key(pair[0], pair[1])] = None
        return out

    def _restore_next_ids(self, raw: Any, source: str) -> dict[Section, int]:
        """Stored counters, raised past any id present so ids are never reused."""
        out: dict[Section, int] = dict.fromkeys(_SECTION_ORDER, 1)
        if raw is not None:
            if not isinstance(raw, dict) or not all(
                isinstance(v, int) and not isinstance(v, bool) and v >= 1 for v in raw.values()
            ):
                raise SkillbookFormatError(f"{source}: 'next_ids' must map sections to positive integers")
            for sec, value in raw.items():
                out[validate_section(sec)] = value
        used = [*self._skills, *(op.skill_id for op in self._operations if op.type == "ADD" and op.skill_id)]
        for parsed in filter(None, map(skill_id_number, used)):
            section, number = parsed
            out[validate_section(section)] = max(out[validate_section(section)], number + 1)
        return out


def _pair_key(first_id: str, second_id: str) -> tuple[str, str]:
    """Order-free identity of a pair of skill ids; refuses a skill paired with itself."""
    if first_id == second_id:
        raise SkillbookError(f"a pair needs two different skills, got {first_id!r} twice")
    return (first_id, second_id) if first_id < second_id else (second_id, first_id)


def _keyword_list(keywords: object) -> list[str]:
    """A copy of `keywords` as a list, refusing a bare string (which would split into letters)."""
    if isinstance(keywords, str) or not isinstance(keywords, Iterable):
        return normalize_keywords(keywords)  # always raises, with the error that names the fix
    items: list[str] = list(keywords)
    return items


_LIST_FIELDS = ("skills", "operations")
_TOP_KEYS = frozenset(
    {"schema_version", "embedding_model", "embedding_dim", "next_ids", "skills", "operations", "dedup_keep_pairs"}
)
