"""The pass^k table of two phases, baseline -> with the skillbook, the shape the field's papers print: one row per k,
percent with the 95 % interval, and the change."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

__all__ = ["format_table"]


class _Row(Protocol):
    @property
    def k(self) -> int: ...
    @property
    def value(self) -> float: ...
    @property
    def low(self) -> float: ...
    @property
    def high(self) -> float: ...


def format_table(
    baseline: Sequence[_Row],
    candidate: Sequence[_Row] | None = None,
    *,
    labels: tuple[str, str] = ("baseline", "with ACE"),
) -> str:
    """The peer's table shape: one row per k, baseline -> with ACE (percent, 95 % interval); `labels` name the two
    columns."""

    def cell(row: _Row) -> str:
        return f"{100 * row.value:5.1f} [{100 * row.low:5.1f}, {100 * row.high:5.1f}]"

    lines = [f"metric   {labels[0]:<22}" + (f"{labels[1]:<22}delta" if candidate else "")]
    after = {row.k: row for row in candidate or []}
    for row in baseline:
        line = f"pass^{row.k:<3} {cell(row)}"
        if row.k in after:
            line += f"  {cell(after[row.k])}  {100 * (after[row.k].value - row.value):+5.1f}"
        lines.append(line.rstrip())
    return "\n".join(lines)
