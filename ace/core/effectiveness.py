"""Effectiveness of skills from the reflections' tags, and the gate that quarantines a skill the evidence retires.

The evidence is the skillbook's own audit log: every `TAG` operation names its skill, its delta and the trace it
came from. `EvidenceLedger` folds the log in incrementally (it is cached on `skillbook.caches` and reads only the
operations appended since its last look), so a check after every sample costs the new operations, not the log.

Evidence counts by trace: a trace that tagged a skill harmful in three epochs is one harmful trace, and a tag
made by hand (`InsightSource.manual()`, trace `manual`) is no trace at all. A `RELEASE` starts the evidence over:
what a person weighed before releasing a skill does not quarantine it again. So does an `UPDATE` that changes the
insight (the action the agent was told to take, which the tags judged); one that only widens the issue or the
keywords keeps the evidence, so a harmful skill the skill manager keeps widening is still quarantined.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ace.core.skillbook import Skillbook
from ace.core.update_operation import UpdateOperation
from ace.exceptions import SkillbookError

if TYPE_CHECKING:
    from ace.core.skill import Skill

__all__ = [
    "DEFAULT_MIN_HARMFUL_TRACES",
    "EvidenceLedger",
    "QuarantinePolicy",
    "SkillEvidence",
    "SkillKpis",
    "evidence_ledger",
    "quarantine_reason",
    "skill_kpis",
    "with_quarantined_released",
]

DEFAULT_MIN_HARMFUL_TRACES = 2
"""Distinct traces with harmful evidence before a skill may be quarantined; never fewer than two, so a single
(possibly transient) failure never retires a skill."""
_NO_TRACE = frozenset({"manual", ""})
_CACHE_KEY = "ace.evidence_ledger"


@dataclass(kw_only=True)
class SkillEvidence:
    """The traces that tagged one skill, in its current evidence window (since its creation or last release)."""

    harmful: dict[str, None] = field(default_factory=dict[str, None])
    """`trace_uid`s with a harmful tag, first seen first."""
    helpful: dict[str, None] = field(default_factory=dict[str, None])
    neutral: dict[str, None] = field(default_factory=dict[str, None])
    harmful_ever: dict[str, None] = field(default_factory=dict[str, None])
    """Harmful traces over the skill's whole life (a release does not clear these)."""


@dataclass(frozen=True, kw_only=True)
class SkillKpis:
    """What the tags say about one skill: the counters, and how many distinct traces found it harmful."""

    skill_id: str
    uses: int
    helpful: int
    harmful: int
    neutral: int
    harmful_traces: int
    """Distinct traces with harmful evidence, over the skill's whole life."""
    window_harmful_traces: tuple[str, ...]
    """The harmful traces since the skill's creation, last release or last new insight (what the gate weighs)."""
    window_helpful_traces: int
    status: str
    """`active`, `quarantined` or `removed`."""
    quarantine_reason: str | None = None

    def to_dict(self) -> dict[str, object]:
        """JSON-ready, for `ace-eval skills stats --json`."""
        return {
            "skill_id": self.skill_id,
            "status": self.status,
            "uses": self.uses,
            "helpful": self.helpful,
            "harmful": self.harmful,
            "neutral": self.neutral,
            "harmful_traces": self.harmful_traces,
            "window_harmful_traces": list(self.window_harmful_traces),
            "window_helpful_traces": self.window_helpful_traces,
            "quarantine_reason": self.quarantine_reason,
        }


class EvidenceLedger:
    """Per-skill evidence folded from a skillbook's audit log, kept up to date by reading only new entries."""

    def __init__(self) -> None:
        self._position = 0
        self._last: UpdateOperation | None = None
        self._skills: dict[str, SkillEvidence] = {}
        self._insights: dict[str, str | None] = {}
        """Each skill's insight as the log last set it: a rewrite of the action starts its evidence over."""

    def _reset(self) -> None:
        self._position, self._last, self._skills, self._insights = 0, None, {}, {}

    def sync(self, book: Skillbook) -> None:
        """Fold in the operations appended since the last call (start over if the log was rolled back)."""
        with book.locked():
            count = book.operations_count
            if count < self._position or (
                self._position and book.operations_since(self._position - 1)[0] is not self._last
            ):
                self._reset()  # a batch was rolled back and the log rewritten: rebuild from the start
            new = book.operations_since(self._position)
            self._fold(new)
            self._position = count
            if new:
                self._last = new[-1]

    def evidence(self, skill_id: str) -> SkillEvidence:
        """The evidence of one skill (empty when no trace tagged it)."""
        return self._skills.get(skill_id) or SkillEvidence()

    def tagged_ids(self) -> list[str]:
        """Ids of the skills with any evidence, oldest first."""
        return list(self._skills)

    def _fold(self, ops: Iterable[UpdateOperation]) -> None:
        for op in ops:
            if op.skill_id is None:
                continue
            if op.type == "PURGE":
                self._skills.pop(op.skill_id, None)
            elif op.type == "ADD":
                self._insights[op.skill_id] = op.insight
            elif op.type == "RELEASE" or (op.type == "UPDATE" and op.insight != self._insights.get(op.skill_id)):
                # a person's release, or a new action: the old verdicts judged another skill (`harmful_ever` stays)
                self._insights[op.skill_id] = op.insight if op.type == "UPDATE" else self._insights.get(op.skill_id)
                old = self._skills.get(op.skill_id)
                self._skills[op.skill_id] = SkillEvidence(harmful_ever=old.harmful_ever if old else {})
            elif op.type == "TAG" and (op.trace_uid or "") not in _NO_TRACE:
                ev = self._skills.setdefault(op.skill_id, SkillEvidence())
                trace = op.trace_uid or ""
                if op.delta == -1:
                    ev.harmful[trace] = None
                    ev.harmful_ever[trace] = None
                elif op.delta == 1:
                    ev.helpful[trace] = None
                else:
                    ev.neutral[trace] = None


def evidence_ledger(book: Skillbook) -> EvidenceLedger:
    """The ledger cached on `book`, brought up to date."""
    with book.locked():
        cached = book.caches.get(_CACHE_KEY)
        ledger = cached if isinstance(cached, EvidenceLedger) else EvidenceLedger()
        book.caches[_CACHE_KEY] = ledger
        ledger.sync(book)
        return ledger


@dataclass(frozen=True, kw_only=True)
class QuarantinePolicy:
    """When the evidence retires a skill: harmful on at least `min_harmful_traces` distinct traces, and harmful on
    at least `min_margin` more traces than it helped on."""

    min_harmful_traces: int = DEFAULT_MIN_HARMFUL_TRACES
    min_margin: int = 1
    """Harmful traces minus helpful traces; 1 means strictly more harmful than helpful evidence."""

    def __post_init__(self) -> None:
        if isinstance(self.min_harmful_traces, bool) or self.min_harmful_traces < DEFAULT_MIN_HARMFUL_TRACES:
            raise SkillbookError(
                f"min_harmful_traces must be at least {DEFAULT_MIN_HARMFUL_TRACES} (one trace may be a transient "
                f"failure), got {self.min_harmful_traces!r}; to keep a skill out by hand use `ace-eval skills "
                "quarantine`"
            )
        if isinstance(self.min_margin, bool) or self.min_margin < 1:
            raise SkillbookError(
                f"min_margin must be at least 1 (more harmful than helpful evidence), got {self.min_margin!r}"
            )

    def retires(self, evidence: SkillEvidence) -> bool:
        """Whether this evidence quarantines its skill."""
        harmful = len(evidence.harmful)
        return harmful >= self.min_harmful_traces and harmful - len(evidence.helpful) >= self.min_margin

    def due(self, book: Skillbook) -> list[tuple[Skill, SkillEvidence]]:
        """The visible skills of `book` the evidence now retires, oldest first."""
        ledger = evidence_ledger(book)
        out: list[tuple[Skill, SkillEvidence]] = []
        with book.locked():
            for skill_id in ledger.tagged_ids():
                skill, evidence = book.get_skill(skill_id), ledger.evidence(skill_id)
                if skill is not None and skill.visible and self.retires(evidence):
                    out.append((skill, evidence))
        return out


def quarantine_reason(evidence: SkillEvidence, policy: QuarantinePolicy) -> str:
    """The audit-log reason of an automatic quarantine: the counts and the traces it rests on."""
    traces = list(evidence.harmful)
    shown = ", ".join(traces[:5]) + (f" and {len(traces) - 5} more" if len(traces) > 5 else "")
    return (
        f"harmful on {len(traces)} distinct traces ({shown}) and helpful on {len(evidence.helpful)}: the "
        f"effectiveness gate quarantines at {policy.min_harmful_traces} harmful traces and a margin of "
        f"{policy.min_margin}"
    )


def skill_kpis(book: Skillbook) -> list[SkillKpis]:
    """Every skill's KPIs (removed and quarantined ones included), in creation order."""
    ledger = evidence_ledger(book)
    out: list[SkillKpis] = []
    with book.locked():
        for skill in book.skills(include_inactive=True):
            ev = ledger.evidence(skill.id)
            status = "removed" if not skill.active else "quarantined" if skill.quarantine is not None else "active"
            out.append(
                SkillKpis(
                    skill_id=skill.id,
                    uses=skill.used_count,
                    helpful=skill.helpful_count,
                    harmful=skill.harmful_count,
                    neutral=skill.neutral_count,
                    harmful_traces=len(ev.harmful_ever),
                    window_harmful_traces=tuple(ev.harmful),
                    window_helpful_traces=len(ev.helpful),
                    status=status,
                    quarantine_reason=skill.quarantine.reason if skill.quarantine is not None else None,
                )
            )
    return out


def with_quarantined_released(book: Skillbook) -> Skillbook | None:
    """A copy of `book` with every quarantined skill released (its vectors kept), to measure what quarantine changed;
    `None` when no skill is quarantined. The copy is for evaluation only: it is never saved."""
    with book.locked():
        held = [s.id for s in book.skills(include_inactive=True) if s.active and s.quarantine is not None]
        if not held:
            return None
        copy = Skillbook.from_dict(book.to_dict())
        for skill in book.skills(include_inactive=True):
            if skill.embedding is not None:
                copy.set_embedding(skill.id, skill.embedding)
    copy.redactor = book.redactor
    for skill_id in held:
        copy.release_skill(skill_id, "evaluated with the quarantined skills back (a copy, never saved)")
    return copy
