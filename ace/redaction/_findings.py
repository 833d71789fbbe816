"""`Finding`: one detected value, where it is and a masked preview (never the value itself); `Match`, a detector's
match before it becomes one."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

from ace.redaction._detectors import Detector

__all__ = ["Finding", "Match", "at", "count_kinds", "mask", "without_overlapped_fallbacks"]


@dataclass(frozen=True, kw_only=True)
class Finding:
    """One detected value: its kind, where it is, and a masked preview (never the value itself)."""

    kind: str
    start: int
    """Offset of the value in its string."""
    end: int
    preview: str
    """The first four characters and the length, e.g. `sk-p…[51 chars]`."""
    placeholder: str = ""
    """What replaced it (empty when only found, not redacted)."""
    path: str = ""
    """Where in a structure: `$.messages[3].content` (empty for a plain string)."""


def mask(value: str) -> str:
    """`sk-p…[51 chars]`: enough to find the value again, not enough to use it."""
    return f"{value[:4]}…[{len(value)} chars]"


def count_kinds(findings: Iterable[Finding]) -> dict[str, int]:
    """Findings per kind, sorted by kind: what `run.json` records (never the values)."""
    return dict(sorted(Counter(f.kind for f in findings).items()))


def at(findings: list[Finding], path: str) -> list[Finding]:
    """`findings` with their JSON `path`."""
    return [
        Finding(kind=f.kind, start=f.start, end=f.end, preview=f.preview, placeholder=f.placeholder, path=path)
        for f in findings
    ]


@dataclass(frozen=True)
class Match:
    """A detector's match in a text (offsets), before it is replaced; `order` is the detector's place."""

    start: int
    end: int
    order: int
    detector: Detector


def without_overlapped_fallbacks(candidates: list[Match]) -> list[Match]:
    """`candidates` without the fallback matches (`Detector.fallback`) that another match overlaps."""
    firm = [m for m in candidates if not m.detector.fallback]
    return firm + [
        m for m in candidates if m.detector.fallback and not any(f.start < m.end and m.start < f.end for f in firm)
    ]
