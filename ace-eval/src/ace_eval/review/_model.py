"""The review queue file, `<skillbook stem>.review.json` beside the skillbook: versioned, strict, written atomically.

```json
{"review_queue_version": 1, "skillbook": "skillbook.json", "next_number": 3, "candidates": [...]}
```

A candidate is one group of staged edits (see `ace_eval.review._grouping`): its kind, the published skill it
targets and the text it was based on (`base`), the edits in the order the run made them (each the skillbook's own
`UpdateOperation` and `InsightSource` records), the traces it cites, and, once decided, the decision.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import IO, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from ace import json_safe
from ace.core.storage import Writer, atomic_write
from ace.exceptions import UserError

__all__ = [
    "QUEUE_VERSION",
    "Candidate",
    "CandidateKind",
    "Decision",
    "Edit",
    "QueueFile",
    "QueueFormatError",
    "SkillText",
    "SourceRef",
    "queue_path",
    "queue_writer",
    "read_queue",
    "write_queue",
]

QUEUE_VERSION = 1
CandidateKind = Literal["ADD", "UPDATE", "TAG", "REMOVE"]
Status = Literal["pending", "accepted", "rejected"]


class QueueFormatError(UserError, ValueError):
    """A review queue file that cannot be read: an unknown version or a damaged document; names the fix."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class SkillText(_Strict):
    """What a published skill said when a run forked it: acceptance checks it still says so."""

    issue: str
    insight: str | None
    keywords: list[str]
    active: bool


class SourceRef(_Strict):
    """One trace a candidate cites, with the reflection that learned from it and where to find it again."""

    trace_uid: str
    source_system: str
    trace_id: str
    epoch: int
    error_identification: str | None
    key_insight: str | None
    collection: str | None
    """The collection the run read the trace from (absolute path); acceptance re-reads it there."""
    trace_sha256: str | None
    """Content hash of the trace as trained on (`trace_sha256`); `None` when the collection was not readable."""
    run_id: str


class Edit(_Strict):
    """One staged mutation, exactly as the run's fork logged it."""

    key: str
    """`trace_uid|epoch|type|n`: the same proposal from the same sample is recognised on a re-run or a resume."""
    run_id: str
    staged_skill_id: str
    """The skill's id in the run's fork (a new skill gets its published id only when accepted)."""
    operation: dict[str, Any]
    """`UpdateOperation.to_dict()` of the fork's audit log."""
    source: dict[str, Any]
    """`InsightSource.to_dict()`: the occurrence the fork appended for this mutation."""


class Decision(_Strict):
    """What a reviewer decided, when, why, and (accepted) which published skills it changed."""

    status: Literal["accepted", "rejected"]
    reviewer: str
    decided_at: str
    reason: str | None = None
    forced: bool = False
    """Accepted with `--force` although its provenance check failed (`problems` says how)."""
    problems: list[str] = Field(default_factory=list[str])
    applied_skill_ids: list[str] = Field(default_factory=list[str])


class Candidate(_Strict):
    """A group of staged edits a person accepts or rejects as a whole."""

    id: str
    kind: CandidateKind
    section: str
    target: str | None
    """The published skill the edits change; `None` for an add (the skill is new)."""
    base: SkillText | None
    """The target's text when the run forked the skillbook; `None` for an add."""
    keywords: list[str]
    """The add's keywords, or the target's (for filters)."""
    issue_key: str | None = None
    """An add's normalised issue, compared for near-duplicates."""
    edits: list[Edit]
    sources: list[SourceRef]
    created_at: str
    updated_at: str
    decision: Decision | None = None

    @property
    def status(self) -> Status:
        return "pending" if self.decision is None else self.decision.status


class QueueFile(_Strict):
    """The whole queue file."""

    review_queue_version: int
    skillbook: str
    """The name of the skillbook file the queue belongs to (in the same folder)."""
    next_number: int = Field(ge=1)
    candidates: list[Candidate]

    @model_validator(mode="after")
    def _unique_ids(self) -> QueueFile:
        seen: dict[str, int] = {}
        for i, cand in enumerate(self.candidates):
            if cand.id in seen:
                raise ValueError(
                    f"candidate id {cand.id!r} of candidates[{i}] repeats candidates[{seen[cand.id]}]: a decision "
                    "would apply to both"
                )
            seen[cand.id] = i
        return self


def queue_path(skillbook: Path) -> Path:
    """`skillbook.json` -> `skillbook.review.json`, in the same folder."""
    return skillbook.with_name(f"{skillbook.stem}.review.json")


def read_queue(path: Path, skillbook: Path) -> QueueFile:
    """The queue at `path`, or an empty one for `skillbook` when there is none yet.

    Raises:
        QueueFormatError: another version (names the one found and the one this ace-eval reads), or a damaged file.
    """
    if not path.is_file():
        return QueueFile(review_queue_version=QUEUE_VERSION, skillbook=skillbook.name, next_number=1, candidates=[])
    try:
        data = json_safe.read_json(path)
    except json_safe.JsonInputError as e:
        raise QueueFormatError(f"{e}: the queue cannot be read; restore it from a backup or move it away") from None
    version = data.get("review_queue_version") if isinstance(data, dict) else None
    if version != QUEUE_VERSION:
        raise QueueFormatError(
            f"{path} is review queue version {version!r}; this ace-eval reads version {QUEUE_VERSION} only: use the "
            "ace-eval that wrote it, or move the file away and re-run the review to queue the candidates again"
        )
    try:
        return QueueFile.model_validate(data)
    except ValidationError as e:
        first = e.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "candidates"  # the one check of the whole file
        raise QueueFormatError(
            f"{path}: field {where!r}: {first['msg']}: the queue is damaged; restore it or move it away"
        ) from None


def queue_writer(queue: QueueFile) -> Writer:
    """A writer of the queue file's content (for `atomic_write`, or a commit with the skillbook)."""
    data = (json.dumps(queue.model_dump(mode="json"), indent=1, ensure_ascii=False) + "\n").encode("utf-8")

    def write(f: IO[bytes]) -> None:
        f.write(data)

    return write


def write_queue(path: Path, queue: QueueFile) -> None:
    """Replace the queue file atomically (a temporary file renamed over it)."""
    atomic_write(path, queue_writer(queue))
