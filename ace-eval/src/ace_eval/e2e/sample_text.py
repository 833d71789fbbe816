"""How a sample reads on one line: its operations (`ADD context-00001`) and the `--verbose` line."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ace_eval.e2e.training import SampleResult

__all__ = ["operations_text", "sample_line"]


def operations_text(operations: Sequence[Mapping[str, Any]]) -> str:
    """`ADD context-00001, TAG harness-00002` from `UpdateOperation.to_dict()`s."""
    return ", ".join(f"{op.get('type', '?')} {op.get('skill_id') or ''}".strip() for op in operations)


def sample_line(sample: SampleResult) -> str:
    """One `--verbose` line: the trace, the epoch, the outcome, the skills changed and the time."""
    head = f"{sample.trace_uid}  epoch {sample.epoch}"
    if sample.error_kind == "stopped":  # a session that ran out of budget or retries: its edits stand
        done = operations_text(sample.operations) or "no change"
        return f"{head}  stopped early  {done}  ({sample.error}; {sample.duration_s:.1f}s)"
    if sample.error is not None:
        return f"{head}  ERROR  {sample.error}  ({sample.duration_s:.1f}s)"
    if sample.skipped is not None:
        return f"{head}  skipped  {sample.skipped}"
    return f"{head}  ok  {operations_text(sample.operations) or 'no change'}  ({sample.duration_s:.1f}s)"
