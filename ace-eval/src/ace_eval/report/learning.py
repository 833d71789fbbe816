"""The learning section's data: every skill with its evidence and provenance, and the skills-over-samples chart."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ace.core.effectiveness import evidence_ledger
from ace.core.skill import Skill
from ace.core.skillbook import Skillbook
from ace_eval.run.sessions import SampleView

__all__ = ["SERIES", "Chart", "ChartSeries", "skill_chart", "skill_rows"]

SERIES: tuple[tuple[str, str], ...] = (
    ("ADD", "added"),
    ("UPDATE", "updated"),
    ("REMOVE", "removed"),
    ("QUARANTINE", "quarantined"),
)
"""Operation type -> the chart's series, in drawing order."""
_WIDTH, _HEIGHT, _PAD = 720.0, 220.0, 36.0
_MAX_POINTS = 400
"""A long run is sampled down to this many points per series (the last sample always kept)."""


@dataclass(frozen=True, kw_only=True)
class ChartSeries:
    """One cumulative line of the chart: its name, its SVG points and its final count."""

    name: str
    points: str
    total: int


@dataclass(frozen=True, kw_only=True)
class Chart:
    """Skills added, updated, removed and quarantined, cumulated over the samples in commit order."""

    width: float
    height: float
    pad: float
    samples: int
    top: int
    series: list[ChartSeries]
    x_ticks: list[tuple[float, int]]
    y_ticks: list[tuple[float, int]]


def skill_chart(samples: Sequence[SampleView]) -> Chart:
    """The cumulative operation counts after each sample, scaled to the SVG's box."""
    totals = {name: 0 for _, name in SERIES}
    rows: list[dict[str, int]] = [dict(totals)]
    for view in samples:
        for op in view.sample.operations if view.sample is not None else ():
            name = dict(SERIES).get(str(op.get("type")))
            if name is not None:
                totals[name] += 1
        rows.append(dict(totals))
    n = len(rows) - 1
    top = max(1, *totals.values())
    step = max(1, -(-len(rows) // _MAX_POINTS))
    kept = list(range(0, len(rows), step))
    if kept[-1] != n:
        kept.append(n)

    def x(i: int) -> float:
        return _PAD + (_WIDTH - 2 * _PAD) * (i / n if n else 0.0)

    def y(v: int) -> float:
        return _HEIGHT - _PAD - (_HEIGHT - 2 * _PAD) * v / top

    series = [
        ChartSeries(name=name, points=" ".join(f"{x(i):.1f},{y(rows[i][name]):.1f}" for i in kept), total=totals[name])
        for _, name in SERIES
    ]
    ticks = sorted({0, n // 2, n})
    return Chart(
        width=_WIDTH,
        height=_HEIGHT,
        pad=_PAD,
        samples=n,
        top=top,
        series=series,
        x_ticks=[(x(i), i) for i in ticks],
        y_ticks=[(y(v), v) for v in sorted({0, top // 2, top})],
    )


def _status(skill: Skill) -> str:
    if not skill.active:
        return "removed"
    return "quarantined" if skill.quarantine is not None else "active"


def skill_rows(book: Skillbook | None, samples: Sequence[SampleView]) -> list[dict[str, Any]]:
    """Every skill (removed ones included) with its texts, counters, evidence, quarantine and each occurrence
    pointing at the sample (by its position in `samples`) whose trace and epoch taught it."""
    if book is None:
        return []
    where = {(v.trace_uid, v.epoch): i for i, v in enumerate(samples)}
    ledger = evidence_ledger(book)
    rows: list[dict[str, Any]] = []
    for skill in book.skills(include_inactive=True):
        evidence = ledger.evidence(skill.id)
        held = skill.quarantine
        rows.append(
            {
                "id": skill.id,
                "section": skill.section,
                "status": _status(skill),
                "issue": skill.issue,
                "insight": skill.insight,
                "keywords": list(skill.keywords),
                "used": skill.used_count,
                "helpful": skill.helpful_count,
                "harmful": skill.harmful_count,
                "neutral": skill.neutral_count,
                "helpful_traces": list(evidence.helpful),
                "harmful_traces": list(evidence.harmful_ever),
                "quarantine": held.to_dict() if held is not None else None,
                "removal_reason": skill.removal_reason if not skill.active else None,
                "occurrences": [
                    {
                        "trace_uid": o.trace_uid,
                        "epoch": o.epoch,
                        "op": o.operation_type,
                        "at": o.timestamp,
                        "learning": o.learning_text,
                        "error": o.error_identification,
                        "sample": where.get((o.trace_uid, o.epoch)),
                    }
                    for o in skill.occurrences
                ],
            }
        )
    return rows
