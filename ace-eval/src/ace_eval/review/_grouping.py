"""Staged edits -> candidates: grouped by what they change, idempotent over re-runs and resumes.

A group is one add (same section, same normalised keywords, a near-duplicate issue) or one kind of edit
(update, tag, remove) of one published skill as it read when the run forked it. Edits the run made to a skill it
added itself belong to that add. An edit is identified by `trace_uid|epoch|type|n` within its group, so the same
proposal from the same sample is recognised whichever run makes it: cited by a pending candidate it counts as
`already_queued`, by a decided one as `already_reviewed`, and nothing is written. A new source for a pending group
is appended to it; a decided group is not proposed again (except tags, which are evidence: a new trace's tag on
an accepted tag group opens a new candidate).
"""

from __future__ import annotations

import difflib
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

from ace.core.insight_source import InsightSource, utc_now
from ace.core.skill import normalize_keywords
from ace.core.skillbook import Skillbook
from ace.core.update_operation import UpdateOperation
from ace_eval.review._model import Candidate, CandidateKind, Edit, QueueFile, SkillText, SourceRef

__all__ = ["NEAR_DUPLICATE_RATIO", "Proposal", "ReviewCounts", "Stager", "normalize_issue", "skill_text"]

NEAR_DUPLICATE_RATIO = 0.9
"""Two adds' normalised issues at least this similar (difflib ratio) are one candidate."""
_NON_WORD = re.compile(r"[^a-z0-9]+")


def normalize_issue(text: str) -> str:
    """Lowercase words separated by single spaces: what near-duplicate issues are compared on."""
    return _NON_WORD.sub(" ", text.lower()).strip()


def skill_text(book: Skillbook, skill_id: str) -> SkillText | None:
    """The text of a skill as acceptance compares it, or `None` when the skillbook has no such skill."""
    skill = book.get_skill(skill_id)
    if skill is None:
        return None
    return SkillText(issue=skill.issue, insight=skill.insight, keywords=list(skill.keywords), active=skill.active)


@dataclass(frozen=True, kw_only=True)
class Proposal:
    """One staged mutation of a run's fork: the logged operation, the occurrence it appended, the cited trace."""

    operation: UpdateOperation
    source: InsightSource
    ref: SourceRef


@dataclass
class ReviewCounts:
    """What a review run did with its staged edits (`run.json` `review`, the run summary)."""

    new_candidates: int = 0
    queued: int = 0
    """Edits this run wrote to the queue (in new candidates or appended to pending ones)."""
    already_queued: int = 0
    """Edits a pending candidate already cited (an earlier run over the same trace)."""
    already_reviewed: int = 0
    """Edits of groups a person already decided."""
    unattributed: int = 0
    """Edits of skills neither published nor added by the run (nothing to review them against); not queued."""

    def to_dict(self) -> dict[str, int]:
        return dict(vars(self))


@dataclass
class Stager:
    """The grouping state of one run: the fork's new skills by candidate, and the counts so far."""

    run_id: str
    base: Skillbook
    """The published skillbook as the run forked it."""
    counts: ReviewCounts = field(default_factory=ReviewCounts)
    _staged: dict[str, str] = field(default_factory=dict[str, str])
    """Id of a skill the run added -> id of the add candidate it belongs to."""
    _waiting: dict[str, list[Proposal]] = field(default_factory=dict[str, list[Proposal]])
    """Edits of a skill another sample added but has not committed yet (concurrent sessions), by skill id."""

    @property
    def unattributed(self) -> int:
        """Edits with no group: those counted so far and those still waiting for their skill's add."""
        return self.counts.unattributed + sum(len(w) for w in self._waiting.values())

    def propose(self, queue: QueueFile, proposals: Sequence[Proposal]) -> bool:
        """Group one sample's staged edits into `queue`; returns whether the queue changed."""
        changed = False
        ordinals: Counter[tuple[str, str, int, str]] = Counter()
        for p in proposals:
            group = self._group(queue, p)
            if group is None:
                if p.operation.skill_id is not None and p.operation.type != "ADD":
                    self._waiting.setdefault(p.operation.skill_id, []).append(p)  # its add commits later
                else:
                    self.counts.unattributed += 1
                continue
            group_id, members = group
            counted = (group_id, p.ref.trace_uid, p.ref.epoch, p.operation.type)
            n = ordinals[counted]
            ordinals[counted] += 1
            key = f"{p.ref.trace_uid}|{p.ref.epoch}|{p.operation.type}|{n}"
            changed |= self._place(queue, p, key, group_id, members)
            waiting = self._waiting.pop(p.operation.skill_id or "", None) if p.operation.type == "ADD" else None
            if waiting:
                changed |= self.propose(queue, waiting)
        return changed

    def _place(self, queue: QueueFile, p: Proposal, key: str, group_id: str, members: list[Candidate]) -> bool:
        for cand in members:
            for edit in cand.edits:
                if edit.key == key:
                    self._remember(p, cand)
                    if edit.run_id == self.run_id:  # this run queued it before (a resume catching up)
                        self.counts.queued += 1
                        self.counts.new_candidates += edit is cand.edits[0]
                    elif cand.decision is None:
                        self.counts.already_queued += 1
                    else:
                        self.counts.already_reviewed += 1
                    return False
        pending = next((c for c in members if c.decision is None), None)
        if pending is None and members:
            last = members[-1].decision
            if not (members[-1].kind == "TAG" and last is not None and last.status == "accepted"):
                self._remember(p, members[-1])
                self.counts.already_reviewed += 1
                return False
        edit = Edit(
            key=key,
            run_id=self.run_id,
            staged_skill_id=p.operation.skill_id or "",
            operation=p.operation.to_dict(),
            source=p.source.to_dict(),
        )
        now = utc_now()
        if pending is None:
            pending = self._new_candidate(queue, p, group_id, now)
            self.counts.new_candidates += 1
        pending.edits.append(edit)
        if not any((s.trace_uid, s.epoch) == (p.ref.trace_uid, p.ref.epoch) for s in pending.sources):
            pending.sources.append(p.ref)
        pending.updated_at = now
        self._remember(p, pending)
        self.counts.queued += 1
        return True

    def _remember(self, p: Proposal, cand: Candidate) -> None:
        if p.operation.type == "ADD" and p.operation.skill_id is not None:
            self._staged[p.operation.skill_id] = cand.id

    def _new_candidate(self, queue: QueueFile, p: Proposal, group_id: str, now: str) -> Candidate:
        op = p.operation
        kind: CandidateKind = "ADD" if group_id.startswith("ADD") else _kind(op)
        target = None if kind == "ADD" else op.skill_id
        base = None if target is None else skill_text(self.base, target)
        cand = Candidate(
            id=f"c{queue.next_number:05d}",
            kind=kind,
            section=op.section or "",
            target=target,
            base=base,
            keywords=normalize_keywords(op.keywords or []) if kind == "ADD" else list(base.keywords if base else []),
            issue_key=normalize_issue(op.issue or "") if kind == "ADD" else None,
            edits=[],
            sources=[],
            created_at=now,
            updated_at=now,
        )
        queue.next_number += 1
        queue.candidates.append(cand)
        return cand

    def _group(self, queue: QueueFile, p: Proposal) -> tuple[str, list[Candidate]] | None:
        """The group of an edit (a label, and its candidates oldest first); `None` when it has none."""
        op = p.operation
        if op.skill_id is None:
            return None
        if op.type == "ADD":
            keywords = sorted(normalize_keywords(op.keywords or []))
            issue = normalize_issue(op.issue or "")
            for cand in queue.candidates:
                if (
                    cand.kind == "ADD"
                    and cand.section == op.section
                    and sorted(cand.keywords) == keywords
                    and _near(cand.issue_key or "", issue)
                ):
                    return f"ADD:{cand.id}", [cand]
            return f"ADD:new:{op.skill_id}", []
        owner = self._staged.get(op.skill_id)
        if owner is not None:
            return f"ADD:{owner}", [c for c in queue.candidates if c.id == owner]
        base = skill_text(self.base, op.skill_id)
        if base is None:  # neither published nor (yet) added by this run
            return None
        members = [c for c in queue.candidates if (c.kind, c.target, c.base) == (op.type, op.skill_id, base)]
        return f"{op.type}:{op.skill_id}", members


def _near(a: str, b: str) -> bool:
    return a == b or difflib.SequenceMatcher(None, a, b).ratio() >= NEAR_DUPLICATE_RATIO


def _kind(op: UpdateOperation) -> CandidateKind:
    kind = op.type
    if kind == "PURGE" or kind == "QUARANTINE" or kind == "RELEASE":
        raise ValueError(f"a {kind} is never a staged edit (an operator's or the quarantine gate's decision)")
    return kind
