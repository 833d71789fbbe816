"""`Finding`: one detected value, where it is and a masked preview (never the value itself)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

__all__ = ["Finding", "at", "count_kinds", "mask"]


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
