"""`SkillStore`: the skillbook's state and its one write path; `Skillbook` is the API over it.

`_commit` takes one operation (redacted first, `ace.core.redaction_sink`), checks it, makes the skill's new version
(`ace.core.mutations`: a skill handed out never changes), appends the operation's provenance entry to it and logs
the operation (`ace.core.audit_log`). A tag, the most frequent mutation, has a path of its own that makes three
objects: the new version, its occurrence chain and the log entry's fields, which become an `UpdateOperation` when
the log is first read (its provenance entry is shared while the same record comes back).
"""

from __future__ import annotations

import dataclasses
import threading
from typing import Any, assert_never

from ace.core.audit_log import AuditLog
from ace.core.insight_source import InsightSource, OperationType, provenance_entry, utc_now
from ace.core.mutations import checked_delta, checked_reason, created, quarantined, removed, tagged, updated
from ace.core.redaction_sink import redact_commit
from ace.core.serialization import SECTION_ORDER
from ace.core.skill import Section, Skill, validate_section
from ace.core.update_operation import UpdateOperation
from ace.exceptions import SkillbookError, UnknownSkillError
from ace.redaction import Redactor

__all__ = ["SkillStore"]

_TAG = UpdateOperation(type="TAG", timestamp="")
"""What a `tag_skill` call gives the redaction sink: a tag has no text of its own, only its provenance record."""
_VERBS = {"UPDATE": "updated", "REMOVE": "removed again", "QUARANTINE": "quarantined", "RELEASE": "released"}


class SkillStore:
    """Skills by id and by section, the id counters, the audit log and the KEEP pairs, behind one lock."""

    def __init__(self, *, max_text_chars: int | None) -> None:
        self.max_text_chars = max_text_chars
        """Cap on new issue / insight text; files are loaded whatever their length."""
        self.redactor: Redactor | None = Redactor()
        """Redacts every text a mutation stores (`ace.core.redaction_sink`); `None` stores them as given."""
        self._lock = threading.RLock()
        self._skills: dict[str, Skill] = {}
        self._sections: dict[Section, dict[str, None]] = {s: {} for s in SECTION_ORDER}
        self._next_ids: dict[Section, int] = dict.fromkeys(SECTION_ORDER, 1)
        self._log = AuditLog()
        self._active = 0
        self._keep_pairs: dict[tuple[str, str], None] = {}
        self._entries: dict[OperationType, tuple[InsightSource, InsightSource]] = {}
        """Per operation type, the last provenance record and the entry made of it: a harness passes one record
        to every mutation of a trace, which then share one immutable entry."""

    def get_skill(self, skill_id: str) -> Skill | None:
        """The skill with this id, or `None`."""
        return self._skills.get(skill_id)

    def require_skill(self, skill_id: str) -> Skill:
        """The skill with this id; raises `UnknownSkillError` (with close matches) otherwise."""
        skill = self._skills.get(skill_id)
        if skill is None:
            raise UnknownSkillError(skill_id, list(self._skills))
        return skill

    def _tag(self, skill_id: str, delta: int, source: InsightSource | None) -> Skill:
        """`tag_skill` under the lock: no request to build, nothing to redact but the provenance record."""
        return self._tagged(_TAG, skill_id, delta, redact_commit(self.redactor, _TAG, source)[1])

    def _commit(self, op: UpdateOperation, source: InsightSource | None) -> Skill:
        """Validate and apply one operation, append its provenance, log it. Caller holds the lock."""
        op, source = redact_commit(self.redactor, op, source)
        kind = op.type
        if kind == "TAG":
            return self._tagged(op, op.skill_id, op.delta, source)
        now = utc_now()
        if kind == "PURGE":
            return self._purge(op, now)
        if kind == "ADD":
            entry = self._entry(source, kind, now)
            skill = self._build_new(op, entry, now)
            self._sections[skill.section][skill.id] = None
            self._active += 1
        else:
            old = self._active_skill(op.skill_id, _VERBS.get(kind, "changed"))
            match kind:
                case "UPDATE":
                    entry = self._entry(source, kind, now)
                    skill = updated(old, op, entry, now, max_chars=self.max_text_chars)
                case "REMOVE":
                    entry = provenance_entry(source, kind, now, checked_reason(op))
                    skill = removed(old, entry, now)
                case "QUARANTINE" | "RELEASE":
                    entry = provenance_entry(source, kind, now, checked_reason(op))
                    skill = quarantined(old, op, entry, now)
                case _ as unreachable:
                    assert_never(unreachable)
            self._active -= old.active - skill.active
        self._skills[skill.id] = skill
        texts = kind == "ADD" or kind == "UPDATE"  # the entry holds the texts it wrote: the skill's own objects
        issue, insight, keywords = (skill.issue, skill.insight, skill.keywords) if texts else (None, None, None)
        fields = (kind, skill.id, skill.section, issue, insight, keywords, op.delta, op.reason, op.evidence)
        self._log.append((*fields, entry.trace_uid, now), skill.id)  # `logged(*...)` when first read
        return skill

    def _tagged(self, op: UpdateOperation, skill_id: str | None, delta: object, source: InsightSource | None) -> Skill:
        old = self._skills.get(skill_id) if skill_id is not None else None
        if old is None or not old.active:
            old = self._active_skill(skill_id, "tagged")  # raises, naming the fix
        checked = checked_delta(delta)
        now = utc_now()
        entry = self._entry(source, "TAG", now)
        skill = self._skills[old.id] = tagged(old, checked, entry, now)
        fields = ("TAG", old.id, old.section, None, None, None, checked, op.reason, op.evidence, entry.trace_uid, now)
        self._log.append(fields, old.id)  # `logged(*fields)` when first read
        return skill

    def _entry(self, source: InsightSource | None, kind: OperationType, now: str) -> InsightSource:
        """The provenance entry of an ADD, UPDATE or TAG: the one made of the same record last time if any."""
        if source is None or source.operation_type == kind:
            return provenance_entry(source, kind, now)
        last = self._entries.get(kind)
        if last is not None and last[0] is source:
            return last[1]
        entry = provenance_entry(source, kind, now)
        self._entries[kind] = (source, entry)
        return entry

    def _build_new(self, op: UpdateOperation, entry: InsightSource, now: str) -> Skill:
        section = validate_section(op.section)
        number = self._next_ids[section]
        while f"{section}-{number:05d}" in self._skills:  # a new id never replaces a skill
            number += 1
        skill = created(op, f"{section}-{number:05d}", entry, now, max_chars=self.max_text_chars)
        self._next_ids[section] = number + 1
        return skill

    def _purge(self, op: UpdateOperation, now: str) -> Skill:
        skill = self.require_skill(op.skill_id or "")
        del self._skills[skill.id]
        del self._sections[skill.section][skill.id]
        self._active -= skill.active
        self._keep_pairs = {k: None for k in self._keep_pairs if skill.id not in k}
        self._log.append(dataclasses.replace(op, section=skill.section, timestamp=now), skill.id)
        return skill

    def _active_skill(self, skill_id: str | None, verb: str) -> Skill:
        skill = self.require_skill(skill_id or "")
        if not skill.active:
            raise SkillbookError(
                f"skill {skill.id} was removed ({skill.removal_reason or 'no reason given'}), so it cannot be "
                f"{verb}: add a new skill instead"
            )
        return skill

    def _snapshot(self) -> tuple[Any, ...]:
        return (
            dict(self._skills),
            {s: dict(ids) for s, ids in self._sections.items()},
            dict(self._next_ids),
            dict(self._keep_pairs),
            self._log.mark(),
            self._active,
        )

    def _restore(self, snap: tuple[Any, ...]) -> None:
        skills, sections, next_ids, keep_pairs, mark, active = snap
        self._active = active
        self._skills, self._sections, self._next_ids, self._keep_pairs = skills, sections, next_ids, keep_pairs
        self._log.rollback(mark)
