"""The skillbook's journal: a mark, the delta since a mark, and applying deltas to a saved skillbook.

A harness that checkpoints training appends one delta per sample (JSON, a few skills long whatever the size of
the skillbook) and snapshots the whole skillbook now and then; `Skillbook.load_from_file(path, journal=deltas)`
rebuilds the skillbook after the last delta. The format of a delta belongs here, next to the format of the
skillbook file, so no harness parses skillbook JSON itself.

A delta holds the operations the skillbook appended to its audit log since the mark (`ops_before` + `ops`), the
full state of every skill they changed, the skills they purged, the KEEP pairs recorded, and the embedding model
(id counters follow from the logged ADDs). Applying deltas is idempotent: audit-log entries are matched by
position, and a delta whose entries the document already holds is older than the document, so its skill states
are skipped and an older state never overwrites a newer one (a snapshot taken while sessions ran concurrently
may hold edits whose delta comes later).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from ace.core.skill import Skill
from ace.core.update_operation import UpdateOperation, expand_entry
from ace.exceptions import SkillbookFormatError

__all__ = ["DELTA_KEYS", "JournalGapError", "SkillbookMark", "apply_deltas", "check_delta", "delta_since"]

DELTA_KEYS: tuple[str, ...] = ("ops_before", "ops", "skills", "purged", "keep_pairs", "embedding_model")


class Journaled(Protocol):
    """What the journal reads of a skillbook (`ace.core.skillbook.Skillbook` is one)."""

    @property
    def operations_count(self) -> int: ...
    @property
    def keep_pairs(self) -> tuple[tuple[str, str], ...]: ...
    @property
    def embedding_model(self) -> str | None: ...
    def operations_since(self, position: int) -> tuple[UpdateOperation, ...]: ...
    def get_skill(self, skill_id: str) -> Skill | None: ...


class JournalGapError(SkillbookFormatError):
    """A delta starts past the end of the skillbook's audit log: the snapshot and the journal do not belong
    together."""


@dataclass(frozen=True)
class SkillbookMark:
    """Where a skillbook stood: its audit-log length and its KEEP pairs."""

    ops: int
    keep_pairs: frozenset[tuple[str, str]]

    @classmethod
    def of(cls, book: Journaled) -> SkillbookMark:
        """The current position of `book` (take it under `book.locked()` when sessions may be editing)."""
        return cls(ops=book.operations_count, keep_pairs=frozenset(book.keep_pairs))


def delta_since(book: Journaled, mark: SkillbookMark) -> dict[str, Any]:
    """What changed in `book` since `mark`, as JSON-ready data (see the module docstring)."""
    new_ops = book.operations_since(mark.ops)
    changed = list(dict.fromkeys(op.skill_id for op in new_ops if op.skill_id is not None))
    skills: list[dict[str, Any]] = []
    purged: list[str] = []
    for skill_id in changed:
        skill = book.get_skill(skill_id)
        if skill is None:
            purged.append(skill_id)
        else:
            skills.append(skill.to_dict())
    return {
        "ops_before": mark.ops,
        "ops": [op.to_dict() for op in new_ops],
        "skills": skills,
        "purged": purged,
        "keep_pairs": [list(p) for p in book.keep_pairs if p not in mark.keep_pairs],
        "embedding_model": book.embedding_model,
    }


def check_delta(delta: Any) -> dict[str, Any]:
    """`delta` if it has the shape `delta_since` writes; raises `ValueError` naming what is missing."""
    if not isinstance(delta, dict):
        raise ValueError(f"a skillbook delta is a JSON object, got {type(delta).__name__}")
    missing = [k for k in DELTA_KEYS if k not in delta]
    if missing:
        raise ValueError(f"the skillbook delta has no {', '.join(missing)}")
    if not isinstance(delta["ops_before"], int) or not all(isinstance(delta[k], list) for k in DELTA_KEYS[1:5]):
        raise ValueError("the skillbook delta's ops_before must be an integer and ops/skills/purged/keep_pairs lists")
    return delta


def apply_deltas(doc: Mapping[str, Any], deltas: Sequence[Mapping[str, Any]], *, source: str) -> dict[str, Any]:
    """Apply deltas, in order, to a skillbook document (`Skillbook.to_dict` shape); idempotent.

    Raises:
        JournalGapError: a delta starts past the end of the document's audit log.
    """
    skills: dict[str, dict[str, Any]] = {s["id"]: s for s in doc.get("skills", []) if isinstance(s, dict)}
    # Entries that leave texts to their skill take them now, before a delta's skill states replace the skills.
    ops: list[Any] = [expand_entry(op, _skill_of(op, skills)) for op in doc.get("operations", [])]
    held = len(ops)
    keep: dict[tuple[str, str], None] = {
        (p[0], p[1]): None for p in doc.get("dedup_keep_pairs", []) if isinstance(p, list) and len(p) == 2
    }
    next_ids: dict[str, int] = dict(doc.get("next_ids") or {})
    model = doc.get("embedding_model")
    for n, delta in enumerate(deltas, 1):
        before, new_ops = delta["ops_before"], delta["ops"]
        if before > len(ops):
            raise JournalGapError(
                f"{source}: journal line {n} starts at audit-log entry {before} but the skillbook has {len(ops)}: "
                "the snapshot and the journal do not belong together; start a fresh checkpoint folder",
                path=source,
            )
        if len(ops) < before + len(new_ops):  # the part the document does not hold yet
            tail = new_ops[len(ops) - before :]
            ops.extend(tail)
            _advance_ids(next_ids, tail)
        if before + len(new_ops) > held:
            for skill in delta["skills"]:
                skills[skill["id"]] = skill
            for skill_id in delta["purged"]:
                skills.pop(skill_id, None)
        for pair in delta["keep_pairs"]:
            keep[(pair[0], pair[1])] = None
        model = delta["embedding_model"]
    out = {**doc, "embedding_model": model, "next_ids": next_ids, "skills": list(skills.values()), "operations": ops}
    out.pop("dedup_keep_pairs", None)
    keep = {k: None for k in keep if k[0] in skills and k[1] in skills}  # a purge drops the pairs of its skill
    if keep:
        out["dedup_keep_pairs"] = [list(k) for k in keep]
    return out


def _skill_of(op: Any, skills: Mapping[str, dict[str, Any]]) -> dict[str, Any] | None:
    skill_id = op.get("skill_id") if isinstance(op, dict) else None
    return skills.get(skill_id) if isinstance(skill_id, str) else None


def _advance_ids(next_ids: dict[str, int], ops: list[dict[str, Any]]) -> None:
    """Move the id counters past every id an ADD assigned (as the skillbook did when it assigned them)."""
    for op in ops:
        section, _, number = str(op.get("skill_id") or "").rpartition("-")
        if op.get("type") == "ADD" and number.isdigit():
            next_ids[section] = max(next_ids.get(section, 1), int(number) + 1)
