"""How runs went, from a file beside the traces: `--outcomes FILE` sets each named trace's reward and feedback.

The file is JSON lines, one `{"trace_id": ..., "reward": ..., "feedback": ...}` per line, or one JSON document:
a list of such objects, or an object mapping each trace id to `{"reward": ..., "feedback": ...}`. `reward` is a
finite number or null, `feedback` a string or null; either may be left out. A trace id is the trace's
`trace_id` (or its `trace_uid`); for OpenTelemetry spans the 32-hex-digit OTel trace id also names its run when
that trace holds only one. An outcome naming no trace is refused (exit 2), naming the id: a typo would otherwise
lose the judgement silently.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass

from ace import json_safe
from ace_eval.collection.model import CollectionError, Trace

__all__ = ["Outcome", "apply_outcomes", "read_outcomes"]

_KEYS = ("trace_id", "reward", "feedback")
_SHAPE = (
    'JSON lines of {"trace_id": ..., "reward": ..., "feedback": ...}, a JSON list of them, or a JSON object '
    '{"<trace id>": {"reward": ..., "feedback": ...}}'
)


@dataclass(frozen=True)
class Outcome:
    """A run's judgement from the outcomes file; None for what the file leaves out."""

    reward: float | None = None
    feedback: str | None = None


def _outcome(raw: object, *, file: str, line: int | None, field: str, with_id: bool) -> tuple[str | None, Outcome]:
    if not isinstance(raw, dict):
        raise CollectionError(f"an outcome is an object, got {type(raw).__name__}: {_SHAPE}", file=file, line=line)
    allowed = _KEYS if with_id else _KEYS[1:]
    unknown = sorted(set(raw) - set(allowed))
    if unknown:
        raise CollectionError(
            f"unknown key {unknown[0]!r} (accepted: {', '.join(allowed)})", file=file, line=line, field=field
        )
    trace_id = raw.get("trace_id")
    if with_id and (not isinstance(trace_id, str | int) or isinstance(trace_id, bool) or not str(trace_id)):
        raise CollectionError(f"missing or not a string: the trace id; {_SHAPE}", file=file, line=line, field=field)
    reward, feedback = raw.get("reward"), raw.get("feedback")
    if reward is not None and (
        isinstance(reward, bool) or not isinstance(reward, int | float) or not math.isfinite(reward)
    ):
        raise CollectionError(
            f"reward must be a finite number or null, got {reward!r:.40}", file=file, line=line, field=field
        )
    if feedback is not None and not isinstance(feedback, str):
        raise CollectionError(
            f"feedback must be a string or null, got {type(feedback).__name__}", file=file, line=line, field=field
        )
    return (str(trace_id) if with_id else None), Outcome(None if reward is None else float(reward), feedback)


def read_outcomes(path: str | os.PathLike[str]) -> tuple[dict[str, Outcome], str]:
    """The outcomes of a file by trace id, and the shape it was read as (for the command to say)."""
    file = str(path)
    out: dict[str, Outcome] = {}
    try:
        data = json_safe.read_bytes(path)
        try:
            whole: object = json_safe.loads(data, file=file)
        except json_safe.JsonInputError as e:
            if e.kind != "syntax" or len([b for b in data.split(b"\n") if b.strip()]) < 2:
                raise
            whole = None
        if isinstance(whole, dict) and "trace_id" not in whole:
            for key, raw in whole.items():
                out[key] = _outcome(raw, file=file, line=None, field=key, with_id=False)[1]
            return out, "a JSON object of trace id -> outcome"
        if isinstance(whole, list):
            for i, raw in enumerate(whole):
                trace_id, outcome = _outcome(raw, file=file, line=None, field=f"[{i}]", with_id=True)
                out[str(trace_id)] = outcome
            return out, "a JSON list of outcomes"
        for number, raw in json_safe.iter_json_lines(data, file=file):
            trace_id, outcome = _outcome(raw, file=file, line=number, field="trace_id", with_id=True)
            out[str(trace_id)] = outcome
        return out, "JSON lines, one outcome per line"
    except json_safe.JsonInputError as e:
        raise CollectionError.from_json(e) from None


def apply_outcomes(traces: list[Trace], outcomes: dict[str, Outcome], *, file: str) -> list[Trace]:
    """`traces` with each named trace's reward and feedback set from `outcomes` (a value the file leaves out or
    sets to null keeps the trace's own)."""
    by_id: dict[str, list[int]] = {}
    for i, trace in enumerate(traces):
        names = {trace.trace_id, trace.trace_uid, str(trace.metadata.get("otel_trace_id") or "")} - {""}
        for name in names:
            by_id.setdefault(name, []).append(i)
    unknown = [key for key in outcomes if key not in by_id]
    if unknown:
        shown = ", ".join(repr(k) for k in unknown[:3]) + (f" and {len(unknown) - 3} more" if len(unknown) > 3 else "")
        raise CollectionError(
            f"{len(unknown)} outcome(s) name no imported trace ({shown}): use the traces' ids "
            f"(e.g. {traces[0].trace_id!r})"
            if traces
            else "outcomes given, but there are no traces",
            file=file,
        )
    updated = list(traces)
    for key, outcome in outcomes.items():
        if len(by_id[key]) > 1:
            raise CollectionError(
                f"the id {key!r} names {len(by_id[key])} runs: use each run's trace_id "
                f"({', '.join(repr(traces[i].trace_id) for i in by_id[key][:2])}...)",
                file=file,
            )
        (i,) = by_id[key]
        changes: dict[str, object] = {}
        if outcome.reward is not None:
            changes["reward"] = outcome.reward
        if outcome.feedback is not None:
            changes["feedback"] = outcome.feedback
        updated[i] = updated[i].model_copy(update=changes)
    return updated
