"""A run's segments (the first invocation and each resume): what each recorded, and the timings summed over them."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, JsonValue, field_serializer

from ace.core.insight_source import utc_now
from ace.pipeline import StepTiming
from ace_eval.run.usage import RoleUsage

__all__ = ["Segment", "step_timings", "timings"]


class Segment(BaseModel):
    """One invocation of a run (the first, or a resume): when, how long each phase took, how it ended."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True)

    started_at: str = Field(default_factory=utc_now)
    finished_at: str | None = None
    status: str = "running"
    """`running`, then `completed`, `failed` or `interrupted`."""
    resumed: bool = False
    phases_s: dict[str, float] = Field(default_factory=dict[str, float])
    """Wall seconds of each phase (`collect`, `train`, `baseline`, `evaluate`, ...)."""
    error: str | None = None
    overrides: dict[str, JsonValue] = Field(default_factory=dict[str, JsonValue])
    """Settings a resume changed (those that do not change what is learned: workers, verbosity, --logfire)."""
    resumed_samples: int | None = None
    steps: dict[str, StepTiming] = Field(default_factory=dict[str, StepTiming])
    """Calls and seconds of each pipeline step in this segment."""
    step_usage: dict[str, RoleUsage] = Field(default_factory=dict[str, RoleUsage])
    """Model usage of the end-of-epoch / end-of-run steps (e.g. the `dedup` judge), by role."""

    @field_serializer("phases_s")
    def _rounded(self, phases: dict[str, float]) -> dict[str, float]:
        return {k: round(v, 3) for k, v in phases.items()}

    def add_time(self, phase: str, seconds: float) -> None:
        """Add `seconds` of wall time to `phase`."""
        self.phases_s = {**self.phases_s, phase: self.phases_s.get(phase, 0.0) + seconds}

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready."""
        return self.model_dump(mode="json")


def timings(segments: Sequence[Segment]) -> dict[str, float]:
    """Seconds per phase summed over every segment, and their total."""
    out: dict[str, float] = {}
    for segment in segments:
        for phase, seconds in segment.phases_s.items():
            out[phase] = round(out.get(phase, 0.0) + round(seconds, 3), 3)
    out["total"] = round(sum(v for k, v in out.items() if k != "total"), 3)
    return out


def step_timings(segments: Sequence[Segment]) -> dict[str, StepTiming]:
    """Calls and seconds per pipeline step, summed over every segment."""
    out: dict[str, StepTiming] = {}
    for segment in segments:
        for name, t in segment.steps.items():
            mine = out.setdefault(name, StepTiming())
            mine.calls += t.calls
            mine.seconds = round(mine.seconds + t.seconds, 6)
    return out
