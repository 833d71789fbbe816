"""What a training run returns: per-sample results (one JSON line each in the checkpoint) and the run summary."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import ConfigDict, TypeAdapter, ValidationError
from pydantic_ai.usage import RunUsage

from ace.core.skillbook import Skillbook
from ace.reflector.reflection import Reflection
from ace_eval.text import plural

__all__ = ["RoleUsage", "SampleResult", "TrainingResult"]


SMSessions = Literal["concurrent", "ordered"]
"""How concurrent samples' skill-manager sessions meet (`TrainingConfig.sm_sessions`)."""


@dataclass(frozen=True, kw_only=True)
class RoleUsage:
    """Model usage of one role (`reflector`, `skill_manager`, `dedup`) on one sample."""

    __pydantic_config__ = ConfigDict(extra="forbid")

    requests: int
    input_tokens: int
    output_tokens: int
    cost_usd: float | None
    """What the requests cost, as priced by litellm (`RunUsage.cost`); `None` when the model is unpriced."""

    @classmethod
    def from_run_usage(cls, usage: RunUsage) -> RoleUsage:
        """Totals of a pydantic-ai usage; the cost is the `Decimal` litellm put on each response, summed."""
        cost = usage.cost
        return cls(
            requests=usage.requests,
            input_tokens=usage.input_tokens,
            output_tokens=usage.output_tokens,
            cost_usd=float(cost) if cost is not None else None,
        )

    def __add__(self, other: RoleUsage) -> RoleUsage:
        cost = (
            None if self.cost_usd is None and other.cost_usd is None else (self.cost_usd or 0) + (other.cost_usd or 0)
        )
        return RoleUsage(
            requests=self.requests + other.requests,
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            cost_usd=cost,
        )


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


@dataclass(frozen=True, kw_only=True)
class TrainingResult:
    """Every sample of the run (resumed ones included, in commit order) and the trained skillbook."""

    samples: list[SampleResult]
    skillbook: Skillbook
    resumed_samples: int
    """How many samples were read back from the checkpoint instead of being run."""
    phase_usage: dict[str, RoleUsage] = field(default_factory=dict[str, RoleUsage])
    """Model usage of the `end_of_epoch` / `end_of_run` steps of this invocation (e.g. the `dedup` judge)."""

    @property
    def errors(self) -> list[SampleResult]:
        """The samples that failed."""
        return [s for s in self.samples if s.error is not None]

    def usage(self) -> dict[str, RoleUsage]:
        """Usage summed over every sample and the end-of-epoch / end-of-run steps, by role."""
        total: dict[str, RoleUsage] = dict(self.phase_usage)
        for sample in self.samples:
            for role, usage in sample.usage.items():
                total[role] = total[role] + usage if role in total else usage
        return total

    def summary(self) -> dict[str, Any]:
        """Counts, operations by type, usage by role, and every error with its trace and epoch."""
        ops = Counter(op.get("type") for s in self.samples for op in s.operations)
        stats = self.skillbook.stats()
        return {
            "samples": len(self.samples),
            "resumed_samples": self.resumed_samples,
            "succeeded": len(self.samples) - len(self.errors),
            "failed": len(self.errors),
            "operations": dict(sorted((str(k), v) for k, v in ops.items())),
            "skills_active": stats["active"],
            "skills_inactive": stats["inactive"],
            "usage": {role: vars(u) for role, u in sorted(self.usage().items())},
            "errors": [
                {"trace_uid": s.trace_uid, "epoch": s.epoch, "index": s.index, "error": s.error} for s in self.errors
            ],
        }

    def summary_text(self) -> str:
        """The summary as a few human-readable lines (errors listed one per line)."""
        info = self.summary()
        ops = ", ".join(f"{k} {v}" for k, v in info["operations"].items()) or "none"
        lines = [
            f"samples: {info['samples']} ({info['resumed_samples']} resumed), "
            f"succeeded {info['succeeded']}, failed {info['failed']}",
            f"operations: {ops}",
            f"skills: {info['skills_active']} active, {info['skills_inactive']} inactive",
        ]
        for role, usage in info["usage"].items():
            cost = f", ${usage['cost_usd']:.4f}" if usage["cost_usd"] is not None else ""
            lines.append(
                f"{role}: {plural(usage['requests'], 'request')}, {usage['input_tokens']} in / "
                f"{usage['output_tokens']} out{cost}"
            )
        lines += [f"error in {e['trace_uid']} (epoch {e['epoch']}): {e['error']}" for e in info["errors"]]
        return "\n".join(lines)
