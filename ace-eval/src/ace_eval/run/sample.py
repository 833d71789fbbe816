"""`SampleResult`: one (trace, epoch) of a training run, a line of the samples journal and an entry of `run.json`."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pydantic import ConfigDict, TypeAdapter, ValidationError

from ace.reflector.reflection import Reflection
from ace_eval.run.usage import RoleUsage

__all__ = ["SampleResult"]


@dataclass(frozen=True, kw_only=True)
class SampleResult:
    """One (trace, epoch) of a training run: what the reflector found, what changed, or why it failed."""

    __pydantic_config__ = ConfigDict(extra="forbid")

    trace_uid: str
    trace_id: str
    epoch: int
    index: int
    """Position in the run's commit order: `epoch * n_traces + position in that epoch's order`."""
    error: str | None
    """`"ExceptionType: message"` of what failed; `None` on success. Applied operations stand either way."""
    reflection: Reflection | None
    operations: tuple[dict[str, Any], ...]
    """Every skillbook operation applied while committing the sample (`UpdateOperation.to_dict()`), in order."""
    changed_skill_ids: tuple[str, ...]
    usage: dict[str, RoleUsage] = field(default_factory=dict[str, RoleUsage])
    """Model usage by role: `reflector`, `skill_manager` (and `dedup` when deduplicating)."""
    redactions: dict[str, int] = field(default_factory=dict[str, int])
    """Values the `redact` step replaced in the trace, by kind (never the values)."""
    duration_s: float = 0.0
    """Time spent on the sample's own work (reflection + skill-manager phase), not waiting for its turn."""
    refusals: tuple[dict[str, str], ...] = ()
    """Every skill-manager tool call not applied (`{"tool", "reason"}`, in order): refused by the skillbook, or
    a conflict with another session. Kept here, in the run folder, because spans carry reasons only with the
    content opt-in."""
    error_kind: str | None = None
    """What kind of failure `error` is (`ace.llm.retry.failure_kind`: `auth`, `not_found`, `config`, ...)."""
    attempt: int = 1
    """1, or more when a resume ran a failed sample again; the journal's last line of a sample wins."""
    skipped: str | None = None
    """Why a `before_reflect` step skipped the sample (no reflection, no session); `None` when it ran."""

    @property
    def ok(self) -> bool:
        """Whether the sample finished without error."""
        return self.error is None

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON data."""
        data: dict[str, Any] = _ADAPTER.dump_python(self, mode="json")
        return data

    @classmethod
    def from_dict(cls, data: Any) -> SampleResult:
        """Inverse of `to_dict`; raises `ValueError` naming the bad field."""
        try:
            return _ADAPTER.validate_python(data)
        except ValidationError as e:
            raise ValueError(f"not a SampleResult: {e}") from None


_ADAPTER: TypeAdapter[SampleResult] = TypeAdapter(SampleResult)
