"""`Skillbook`: the flat, thread-safe set of skills, with its invariants, audit log and rendering."""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

from ace.core.audit_log import AuditLog
from ace.core.insight_source import InsightSource
from ace.core.rendering import render_prompt, skillbook_stats
from ace.core.serialization import (
    SCHEMA_VERSION,
    SECTION_ORDER,
    SkillbookDocument,
    held_vector,
    pair_key,
    read_skillbook,
    write_skillbook,
)
from ace.core.skill import (
    VALID_SECTIONS,
    Embedding,
    Section,
    Skill,
    keyword_list,
    skill_summary,
    validate_section,
)
from ace.core.skill_store import SkillStore
from ace.core.storage import FileState, PathLike, SidecarOwner, Writer, gc_paused
from ace.core.text_rules import DEFAULT_MAX_TEXT_CHARS
from ace.core.update_operation import UpdateOperation, logged
from ace.exceptions import SkillbookError

__all__ = ["SCHEMA_VERSION", "VALID_SECTIONS", "Skill", "Skillbook", "UpdateOperation"]

_ASKED = ""
"""The timestamp of a request the skillbook makes for itself: unused, its log entry gets the time of the commit."""


class Skillbook(SkillStore):
    """A flat set of skills, each mutation checked against the spec's invariants and recorded twice:
    in the skill's own `occurrences` chain and in the skillbook's `operations` log.

    All methods are safe to call from several threads.
    """

    def __init__(self, *, max_text_chars: int | None = DEFAULT_MAX_TEXT_CHARS) -> None:
        """`max_text_chars`: longest `issue`, and longest `insight`, an add or update may write (`None`: no cap)."""
        super().__init__(max_text_chars=max_text_chars)
        self.embedding_model: str | None = None
        """Name of the model the cached embeddings came from; a different model means re-embed."""
        self.caches: dict[str, object] = {}
        """Derived data rebuilt on demand (e.g. the search index), keyed by owner; never copied. A `SidecarOwner`
        among them is saved beside the skillbook file."""
        self.file_state: FileState | None = None
        """The file this skillbook was last loaded from (without a journal) or saved to, and its version then."""

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
        return self._log.version

    @property
    def operations(self) -> tuple[UpdateOperation, ...]:
        """The audit log, oldest first."""
        with self._lock:
            return self._log.since(0)

    def operations_since(self, position: int) -> tuple[UpdateOperation, ...]:
        """The audit-log entries from `position` on (`len(operations)` before them), without copying the rest."""
        with self._lock:
            return self._log.since(position)

    @property
    def operations_count(self) -> int:
        """Length of the audit log."""
        with self._lock:
            return len(self._log)

    @property
    def keep_pairs(self) -> tuple[tuple[str, str], ...]:
        """Pairs of skills a deduplication decided to keep apart (ids sorted within a pair), oldest first."""
        with self._lock:
            return tuple(self._keep_pairs)

    def is_kept_pair(self, first_id: str, second_id: str) -> bool:
        """Whether a deduplication already decided to keep these two skills apart."""
        return pair_key(first_id, second_id) in self._keep_pairs

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
            return self._log.changed_since(version)

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
        op = logged("ADD", None, section, issue, insight, keyword_list(keywords), None, None, None, None, _ASKED)
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
        kws = keyword_list(keywords) if keywords is not None else None
        op = logged("UPDATE", skill_id, None, issue, insight, kws, None, None, None, None, _ASKED)
        with self._lock:
            return self._commit(op, insight_source)

    def tag_skill(self, skill_id: str, delta: int, *, insight_source: InsightSource | None = None) -> Skill:
        """Record one use of a skill: delta 1 helpful, -1 harmful, 0 neutral."""
        with self._lock:
            return self._tag(skill_id, delta, insight_source)

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
            key = pair_key(first_id, second_id)
            for skill_id in key:
                self.require_skill(skill_id)
            if key in self._keep_pairs:
                return False
            self._keep_pairs[key] = None
            return True

    def set_embedding(self, skill_id: str, embedding: Embedding | None) -> None:
        """Cache a skill's vector (float32, 1-D, read-only); not a content mutation, so nothing is logged."""
        with self._lock:
            skill = self.require_skill(skill_id)
            if embedding is None:
                object.__setattr__(skill, "embedding", None)  # the one writer of Skill.embedding
                return
            object.__setattr__(skill, "embedding", held_vector(skill_id, embedding, self._skills.values()))

    @contextmanager
    def locked(self) -> Iterator[None]:
        """Hold the skillbook's lock for a consistent multi-step read (e.g. building an index)."""
        with self._lock:
            yield

    def as_prompt(self) -> str:
        """Visible skills grouped by section, in the spec's prompt format (`ace.core.rendering`); `""` if none."""
        with self._lock:
            return render_prompt({s: [self._skills[i] for i in ids] for s, ids in self._sections.items()})

    def to_llm_dict(self) -> dict[str, Any]:
        """Visible skills as plain data for an LLM prompt or tool result."""
        return {"skills": [skill_summary(s) for s in self.skills()]}

    def stats(self) -> dict[str, Any]:
        """Counts for dashboards and logs (`ace.core.rendering.skillbook_stats`)."""
        with self._lock:
            return skillbook_stats(list(self._skills.values()), len(self._log), SECTION_ORDER)

    # ----------------------------------------------------------------- storage
    def to_dict(self) -> dict[str, Any]:
        """The JSON document (schema v2, `ace.core.serialization`): stable key and skill order, no embeddings."""
        with self._lock:
            return self._document().to_dict()

    @classmethod
    def from_dict(cls, data: Any, *, source: str = "skillbook") -> Skillbook:
        """Rebuild a skillbook from `to_dict` output, checking the schema version and every invariant."""
        return cls._from_document(SkillbookDocument.from_dict(data, source=source))

    def save_to_file(self, path: str | os.PathLike[str], *, also: Sequence[tuple[PathLike, Writer]] = ()) -> None:
        """Write `path` (JSON), its `.embeddings.npz` and the sidecars of persisting caches (the search index)
        atomically; drop an `.npz` with no vectors. `also`: files beside it, committed with them (all or nothing)."""
        with self._lock:
            doc, version = self._document(), self._log.version
            owners = [c for c in self.caches.values() if isinstance(c, SidecarOwner)]
        with gc_paused():
            files = lambda saved: [f for o in owners for f in o.sidecar_files(self, saved)]  # noqa: E731
            self.file_state = write_skillbook(path, doc, version=version, sidecars=files, also=also)

    @classmethod
    def load_from_file(cls, path: str | os.PathLike[str], *, journal: Sequence[Mapping[str, Any]] = ()) -> Skillbook:
        """Read a skillbook file (schema v2 only) and reuse every cached vector whose text is unchanged.

        `journal`: deltas (`ace.core.journal.delta_since`) recorded after the file was saved, applied in order,
        so the result is the skillbook after the last one (a checkpoint's snapshot + its journal).
        """
        with gc_paused():
            doc = read_skillbook(path, journal=journal)
            book = cls._from_document(doc)
        book.file_state = FileState(str(path), doc.digest, 0) if doc.digest is not None else None
        return book

    def _document(self) -> SkillbookDocument:
        """The stored state, shallow-copied (skills are immutable). Caller holds the lock."""
        return SkillbookDocument(
            skills=dict(self._skills),
            operations=self._log.entries(),
            next_ids=dict(self._next_ids),
            keep_pairs=dict(self._keep_pairs),
            embedding_model=self.embedding_model,
        )

    @classmethod
    def _from_document(cls, doc: SkillbookDocument) -> Skillbook:
        book = cls()
        book.embedding_model = doc.embedding_model
        book._skills = doc.skills
        for skill in doc.skills.values():
            book._active += skill.active
            book._sections[skill.section][skill.id] = None
        book._log = AuditLog(doc.operations)
        book._next_ids, book._keep_pairs = doc.next_ids, doc.keep_pairs
        return book
