"""What a training run returns: per-sample results (one JSON line each in the checkpoint) and the run summary."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Literal

from ace.core.skillbook import Skillbook
from ace_eval.run.sample import SampleResult
from ace_eval.run.usage import RoleUsage
from ace_eval.text import plural

__all__ = ["RoleUsage", "SampleResult", "TrainingResult"]


SMSessions = Literal["concurrent", "ordered"]
"""How concurrent samples' skill-manager sessions meet (`TrainingConfig.sm_sessions`)."""


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
            "usage": {role: u.model_dump() for role, u in sorted(self.usage().items())},
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
