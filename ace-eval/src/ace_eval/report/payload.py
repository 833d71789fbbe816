"""One run as the page's data: the overview, the samples table and each sample's details (parsed on demand)."""

from __future__ import annotations

from typing import Any

from ace_eval.report.gate import gate_evidence
from ace_eval.report.learning import skill_rows
from ace_eval.report.read import ReportRun
from ace_eval.report.scores import benchmark_scores
from ace_eval.run.sessions import SampleView, SessionView

__all__ = ["SAMPLE_COLUMNS", "run_payload", "sample_details"]

_STATUS = {"UNSET": "ok", "OK": "ok", "ERROR": "error"}
"""A span's status code as the page says it: OpenTelemetry's UNSET is a span that ended without an error."""


def run_payload(run: ReportRun) -> dict[str, Any]:
    """Everything the page renders up front about `run` (sample details are separate: `sample_details`)."""
    record = run.record
    samples = run.view.samples
    config = record.config.as_dict()
    return {
        "id": record.run_id or run.path.name,
        "status": record.status or "unknown",
        "error": record.error,
        "created_at": record.created_at,
        "updated_at": record.updated_at,
        "versions": record.versions,
        "config": _shown_config(config),
        "pipeline": [
            {"name": s.name, "phase": s.phase, "options": s.options}
            for s in (record.pipeline.steps if record.pipeline is not None else [])
        ],
        "models": record.models_run({**record.models, **record.resolved_models}),
        "resolved_benchmark": (
            record.resolved_benchmark.model_dump(mode="json") if record.resolved_benchmark is not None else None
        ),
        "usage": [{"role": role, **u.model_dump(mode="json")} for role, u in sorted(record.usage.items())],
        "cost_usd": record.cost_usd,
        "steps": [{"name": n, "calls": t.calls, "seconds": t.seconds} for n, t in record.step_timings.items()],
        "timings": record.timings,
        "training": (record.training.model_dump(mode="json") if record.training is not None else {}),
        "samples": [_sample_row(i, v, run.traces.get(v.trace_uid)) for i, v in enumerate(samples)],
        "skills": skill_rows(run.skillbook, samples),
        "benchmark": benchmark_scores(run),
        "gate": gate_evidence(run.path),
    }


_CONFIG_SHOWN = ("benchmark", "reflector_type", "epochs", "max_workers", "sm_sessions", "seed", "limit", "redact")


def _shown_config(config: dict[str, Any]) -> dict[str, Any]:
    """The settings the overview lists; a replay (`--no-benchmark`) shows no benchmark rather than the default one."""
    shown = {k: config.get(k) for k in _CONFIG_SHOWN if k in config}
    if config.get("no_benchmark") and "benchmark" in shown:
        shown["benchmark"] = "none (replay of --traces)"
    return shown


def _state(view: SampleView) -> str:
    if view.sample is None:
        return "interrupted"
    if view.sample.error is not None:
        return "error"
    return "skipped" if view.sample.skipped else "ok"


SAMPLE_COLUMNS = (
    "index",
    "trace_uid",
    "epoch",
    "state",
    "key_insight",
    "operations",
    "changed",
    "seconds",
    "tokens",
    "refusals",
    "error",
    "question",
    "reward",
    "feedback",
)
"""The columns of a samples row: `state` is how the sample was processed, `reward` / `feedback` how the traced
run went (the outcome)."""
_FEEDBACK_SHOWN = 300
"""Characters of a trace's feedback in its row (the transcript shows all of it)."""


def _sample_row(i: int, view: SampleView, trace: dict[str, Any] | None) -> list[Any]:
    """A compact row (a list, not a dict: a 10,000-sample page carries it 10,000 times); `SAMPLE_COLUMNS` names it."""
    sample = view.sample
    trace = trace or {}
    reward, feedback = trace.get("reward"), trace.get("feedback")
    tokens = sum(u.input_tokens + u.output_tokens for u in sample.usage.values()) if sample is not None else 0
    return [
        i,
        view.trace_uid,
        view.epoch,
        _state(view),
        view.key_insight or "",
        len(sample.operations) if sample is not None else 0,
        view.changed_ids,
        round(sample.duration_s, 3) if sample is not None else None,
        tokens,
        len(sample.refusals) if sample is not None else 0,
        sample.error if sample is not None else None,
        trace.get("question") if isinstance(trace.get("question"), str) else None,
        reward if isinstance(reward, int | float) and not isinstance(reward, bool) else None,
        feedback[:_FEEDBACK_SHOWN] if isinstance(feedback, str) else None,
    ]


def sample_details(run: ReportRun) -> list[dict[str, Any]]:
    """Per sample: the reflection, the sessions with their tool calls, the operations, refusals and errors."""
    out: list[dict[str, Any]] = []
    for view in run.view.samples:
        sample = view.sample
        out.append(
            {
                "trace_uid": view.trace_uid,
                "epoch": view.epoch,
                "has_trace": view.trace_uid in run.traces,
                "reflection": sample.reflection.model_dump(mode="json")
                if sample is not None and sample.reflection is not None
                else None,
                "sessions": [_session(s) for s in view.sessions],
                "operations": list(sample.operations) if sample is not None else [],
                "refusals": list(sample.refusals) if sample is not None else [],
                "error": sample.error if sample is not None else "not recorded (the run was interrupted)",
                "error_kind": sample.error_kind if sample is not None else None,
                "skipped": sample.skipped if sample is not None else None,
                "redactions": dict(sample.redactions) if sample is not None else {},
                "usage": {r: vars(u) for r, u in sample.usage.items()} if sample is not None else {},
            }
        )
    return out


def _session(session: SessionView) -> dict[str, Any]:
    return {
        "name": session.name,
        "kind": session.kind,
        "duration_ms": session.duration_ms,
        "status": _STATUS.get(session.status, session.status.lower()),
        "usage": session.usage,
        "changed": session.changed_ids,
        "calls": [
            {"signature": c.signature, "tool": c.tool, "result": c.result, "skill_id": c.skill_id, "refusal": c.refusal}
            for c in session.tool_calls
        ],
    }
