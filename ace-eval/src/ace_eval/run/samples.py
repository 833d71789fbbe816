"""`samples.jsonl`, the training checkpoint's one line per sample: read it, and merge its results."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from ace.core import json_safe
from ace_eval.e2e.training import SampleResult

__all__ = ["load_sample_lines", "load_samples", "merge_samples"]


def load_samples(path: Path) -> list[SampleResult]:
    """The samples a training checkpoint recorded (`samples.jsonl`), one per (trace_uid, epoch): a sample run again
    on resume (`attempt` 2, 3, ...) replaces its failed line. Order: first recorded; a torn last line is skipped."""
    return list({(s.trace_uid, s.epoch): s for s in load_sample_lines(path)}.values())


def load_sample_lines(path: Path) -> list[SampleResult]:
    """Every line of `samples.jsonl`, failed attempts that a retry superseded included; a torn last line is skipped."""
    if not path.is_file():
        return []
    out: list[SampleResult] = []
    with path.open(encoding="utf-8") as f:
        for line in f:
            if not line.strip():
                continue
            try:
                data = json_safe.loads(line)
                data.pop("checkpoint", None)  # the trainer's journal keeps the skillbook delta beside the result
                out.append(SampleResult.from_dict(data))
            except (AttributeError, ValueError):  # JsonInputError is a ValueError
                continue  # a torn last line (the run was killed mid-write)
    return out


def merge_samples(*groups: Iterable[SampleResult]) -> list[SampleResult]:
    """One result per (trace_uid, epoch), the last one seen winning, in epoch then index order."""
    merged: dict[tuple[str, int], SampleResult] = {}
    for group in groups:
        for sample in group:
            merged[(sample.trace_uid, sample.epoch)] = sample
    return sorted(merged.values(), key=lambda s: (s.epoch, s.index, s.trace_uid))
