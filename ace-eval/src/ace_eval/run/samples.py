"""`samples.jsonl`, the training checkpoint's one line per sample: read it, and merge its results."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from ace import json_safe
from ace.exceptions import UserError
from ace_eval.run.sample import SampleResult

__all__ = ["SamplesJournalError", "load_sample_lines", "load_samples", "merge_samples", "numbered_sample_lines"]


class SamplesJournalError(UserError, ValueError):
    """A line of `samples.jsonl`, before its last, that is not a sample record: the journal is damaged."""

    def __init__(self, path: Path, line: int, reason: str = "") -> None:
        why = f" ({reason})" if reason else ""
        super().__init__(
            f"{path}, line {line}: not a sample record{why}: the journal is damaged, so the run cannot be read or "
            f"resumed; restore {path.name} from a copy, or start a new run (without --resume). Nothing was changed"
        )
        self.path = path
        self.line = line


def load_samples(path: Path) -> list[SampleResult]:
    """The samples a training checkpoint recorded (`samples.jsonl`), one per (trace_uid, epoch): a sample run again
    on resume (`attempt` 2, 3, ...) replaces its failed line. Order: first recorded; a torn last line is skipped, a
    damaged line before it raises `SamplesJournalError`."""
    return list({(s.trace_uid, s.epoch): s for s in load_sample_lines(path)}.values())


def load_sample_lines(path: Path) -> list[SampleResult]:
    """Every line of `samples.jsonl`, failed attempts that a retry superseded included; a torn last line is skipped,
    a damaged line before it raises `SamplesJournalError` (see `numbered_sample_lines`)."""
    return [sample for _, sample in numbered_sample_lines(path)] if path.is_file() else []


def numbered_sample_lines(path: Path) -> list[tuple[int, SampleResult]]:
    """`(line number, result)` for every line of `samples.jsonl`, a torn last line skipped; raises
    `SamplesJournalError` naming the first damaged line before the last."""
    records: list[tuple[int, SampleResult]] = []
    lines = json_safe.read_bytes(path).split(b"\n")
    for number, raw in enumerate(lines, 1):
        if not raw.strip():
            continue
        try:
            records.append((number, _sample(raw)))
        except ValueError as e:
            if number == len(lines):
                continue  # a torn last line (the run was killed mid-write): the resume drops it
            raise SamplesJournalError(path, number, str(e)) from None
    return records


def _sample(raw: str | bytes) -> SampleResult:
    """One journal line as a result; `ValueError` for anything that is not a sample record."""
    try:
        data = json_safe.loads(raw)  # a JsonInputError is a ValueError
        if not isinstance(data, dict):
            raise ValueError("not an object")
        data.pop("checkpoint", None)  # the trainer's journal keeps the skillbook delta beside the result
        return SampleResult.from_dict(data)
    except json_safe.JsonInputError as e:
        raise ValueError(e.reason) from None
    except (ValueError, TypeError, KeyError, AttributeError, RecursionError) as e:
        raise ValueError(f"not a sample record: {type(e).__name__}") from None  # no values: they may be secrets


def merge_samples(*groups: Iterable[SampleResult]) -> list[SampleResult]:
    """One result per (trace_uid, epoch), the last one seen winning, in epoch then index order."""
    merged: dict[tuple[str, int], SampleResult] = {}
    for group in groups:
        for sample in group:
            merged[(sample.trace_uid, sample.epoch)] = sample
    return sorted(merged.values(), key=lambda s: (s.epoch, s.index, s.trace_uid))
