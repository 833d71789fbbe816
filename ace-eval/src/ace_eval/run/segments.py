"""A run's segments (the first invocation and each resume): what each recorded, and the timings summed over them."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ace.core.insight_source import utc_now

__all__ = ["Segment", "step_timings", "timings"]


@dataclass(kw_only=True)
class Segment:
    """One invocation of a run (the first, or a resume): when, how long each phase took, how it ended."""

    started_at: str = field(default_factory=utc_now)
    finished_at: str | None = None
    status: str = "running"
    resumed: bool = False
    phases: dict[str, float] = field(default_factory=dict[str, float])
    error: str | None = None
    overrides: dict[str, Any] = field(default_factory=dict[str, Any])
    """Settings a resume changed (those that do not change what is learned: workers, verbosity, --logfire)."""
    resumed_samples: int | None = None
    steps: dict[str, dict[str, float]] = field(default_factory=dict[str, dict[str, float]])
    """Calls and seconds of each pipeline step in this segment."""
    step_usage: dict[str, dict[str, Any]] = field(default_factory=dict[str, dict[str, Any]])
    """Model usage of the end-of-epoch / end-of-run steps (e.g. the `dedup` judge), by role."""

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready, for `run.json`."""
        return {
            "started_at": self.started_at,
            "finished_at": self.finished_at,
            "status": self.status,
            "resumed": self.resumed,
            "phases_s": {k: round(v, 3) for k, v in self.phases.items()},
            "error": self.error,
            "overrides": dict(self.overrides),
            "resumed_samples": self.resumed_samples,
            "steps": self.steps,
            "step_usage": self.step_usage,
        }


def timings(segments: Sequence[Mapping[str, Any]]) -> dict[str, float]:
    """Seconds per phase summed over every segment, and their total."""
    out: dict[str, float] = {}
    for segment in segments:
        for phase, seconds in (segment.get("phases_s") or {}).items():
            out[phase] = round(out.get(phase, 0.0) + float(seconds), 3)
    out["total"] = round(sum(v for k, v in out.items() if k != "total"), 3)
    return out


def step_timings(segments: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, float]]:
    """Calls and seconds per pipeline step, summed over every segment."""
    out: dict[str, dict[str, float]] = {}
    for segment in segments:
        for name, t in (segment.get("steps") or {}).items():
            mine = out.setdefault(name, {"calls": 0, "seconds": 0.0})
            mine["calls"] += t.get("calls", 0)
            mine["seconds"] = round(mine["seconds"] + float(t.get("seconds", 0.0)), 6)
    return out
