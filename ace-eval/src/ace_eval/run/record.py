"""`run.json` as one typed record: `RunRecord`, written and read by the same model (as inspect_ai's `EvalLog` is by
`write_eval_log` / `read_eval_log`). No part of it takes a field it does not declare.

The runner changes the record through its methods and saves it with `RunRecord.write` (redacted, checked, atomic):
the only writer of `run.json`. `load_run_record` reads it, folders written before the record was strict included
(their pass^k keyed by k is read as the list).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import IO, Any, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field, JsonValue, ValidationError

from ace import json_safe
from ace.core.storage import atomic_write
from ace.exceptions import UserError
from ace.pipeline import StepTiming
from ace.redaction import Redactor
from ace.steps.redact import TRACE_ID_FIELDS
from ace_eval.run.config import RunConfig
from ace_eval.run.phases import BenchmarkRecord, PhaseRecord, TaskDelta, TaskResult
from ace_eval.run.sample import SampleResult
from ace_eval.run.segments import Segment
from ace_eval.run.usage import RoleUsage

__all__ = [
    "NO_AGENT",
    "RUN_JSON",
    "BenchmarkRecord",
    "CollectionRecord",
    "LogfireRecord",
    "PhaseRecord",
    "PipelineRecord",
    "PlannedStepRecord",
    "RedactionRecord",
    "ReportsReview",
    "ResolvedBenchmark",
    "ReviewRecord",
    "RoleUsage",
    "RunConfig",
    "RunRecord",
    "RunRecordError",
    "RunSummary",
    "SampleErrorRecord",
    "Segment",
    "SkillbookOrigin",
    "StepTiming",
    "TaskDelta",
    "TaskResult",
    "TrainingRecord",
    "load_run_record",
    "read_run_record",
]

NO_AGENT = "none (a replay of --traces: no agent ran)"
"""The agent's and the user's model in a replay without the benchmark (`RunRecord.models_run`)."""

RUN_JSON = "run.json"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True)


class TrainingRecord(_Strict):
    samples: int = 0
    errors: int = 0
    resumed_samples: int | None = None
    skillbook: dict[str, JsonValue] | None = None
    """The learned skillbook's counts (`Skillbook.stats()`), or `{"error": ...}` when it could not be read."""


class SampleErrorRecord(_Strict):
    trace_uid: str
    epoch: int
    error: str


class CollectionRecord(_Strict):
    """The traces the run trained on (`collection/`)."""

    path: str = "collection"
    source: str | None = None
    """The replayed collection or trace file, or `benchmark` when the agent collected them."""
    traces_used: int = 0
    sha256: str | None = None
    """Of `collection/traces.jsonl`."""
    manifest: dict[str, JsonValue] | None = None
    """`collection/manifest.json` as it was when the run read it."""


class PlannedStepRecord(_Strict):
    """One step of the run's pipeline (`PlannedStep.record()`)."""

    name: str
    phase: str
    options: dict[str, JsonValue] = Field(default_factory=dict[str, JsonValue])
    distribution: str | None = None
    version: str | None = None


class PipelineRecord(_Strict):
    steps: list[PlannedStepRecord]


class SkillbookOrigin(BaseModel):
    """The store and version of the skillbook a run started from."""

    model_config = ConfigDict(extra="forbid")

    store: str
    version: int = Field(ge=1)


class ResolvedBenchmark(_Strict):
    """The benchmark a run's agent ran and the options it ran with, as the benchmark resolved them (its defaults,
    and what it read from the environment, e.g. its data folder); a resume
    keeps them."""

    name: str
    options: dict[str, JsonValue] = Field(default_factory=dict[str, JsonValue])


class RedactionRecord(_Strict):
    """Whether redaction was on and how many values of each kind it replaced (never which)."""

    enabled: bool = True
    collection: dict[str, int] = Field(default_factory=dict[str, int])
    redact_step: dict[str, int] = Field(default_factory=dict[str, int])


class LogfireRecord(_Strict):
    """Whether the last segment's spans went to Logfire, the project URL and where the token came from."""

    sent: bool = False
    project_url: str | None = None
    token_from: str | None = None


class ReviewRecord(_Strict):
    """What a review run did with its staged edits (`ace_eval.review`'s counts)."""

    skillbook: str
    queue: str
    new_candidates: int = 0
    queued: int = 0
    already_queued: int = 0
    already_reviewed: int = 0
    unattributed: int = 0


@runtime_checkable
class ReportsReview(Protocol):
    """A step that stages the run's edits for a person's review instead of publishing them (the built-in `review`
    step, or a plugin's): the runner records what it did as `run.json`'s `review`, whatever the step is."""

    def review_record(self) -> ReviewRecord:
        """The queue it wrote to and its counts so far."""
        ...


class RunSummary(_Strict):
    """The fields computed from the run folder's files (`ace_eval.run.fields.summarize_run`)."""

    updated_at: str
    versions: dict[str, str]
    timings: dict[str, float]
    step_timings: dict[str, StepTiming]
    usage: dict[str, RoleUsage]
    cost_usd: float | None
    training: TrainingRecord
    errors: list[SampleErrorRecord]
    samples: list[SampleResult]


class RunRecord(_Strict):
    """`run.json`."""

    run_id: str | None = None
    status: str | None = None
    """`running`, `completed`, `failed` or `interrupted` (the last segment's)."""
    error: str | None = None
    created_at: str | None = None
    updated_at: str | None = None
    versions: dict[str, str] = Field(default_factory=dict[str, str])
    """ace, ace-eval and Python of the last segment."""
    config: RunConfig = Field(default_factory=RunConfig)
    models: dict[str, str] = Field(default_factory=dict[str, str])
    """The model string of each role (and of each step's model, e.g. `dedup`)."""
    resolved_models: dict[str, str] = Field(default_factory=dict[str, str])
    """`system:model_name` of each role's model as the run built it."""
    resolved_benchmark: ResolvedBenchmark | None = None
    """The benchmark's options as it resolved them (the last segment's); `None` when no agent ran, and in a folder
    written before they were recorded."""
    pipeline: PipelineRecord | None = None
    """The steps the run planned; `None` before they were."""
    segments: list[Segment] = Field(default_factory=list[Segment])
    redaction: RedactionRecord | None = None
    logfire: LogfireRecord | None = None
    collection: CollectionRecord | None = None
    review: ReviewRecord | None = None
    timings: dict[str, float] = Field(default_factory=dict[str, float])
    """Seconds per phase summed over the segments, and `total`."""
    step_timings: dict[str, StepTiming] = Field(default_factory=dict[str, StepTiming])
    usage: dict[str, RoleUsage] = Field(default_factory=dict[str, RoleUsage])
    cost_usd: float | None = None
    training: TrainingRecord | None = None
    benchmark: BenchmarkRecord | None = None
    errors: list[SampleErrorRecord] = Field(default_factory=list[SampleErrorRecord])
    samples: list[SampleResult] = Field(default_factory=list[SampleResult])
    skillbook_origin: SkillbookOrigin | None = None
    """The store version the run started from (`--skillbook STORE`); the incumbent a gate compares with."""

    @classmethod
    def of(cls, record: Mapping[str, object]) -> RunRecord:
        """A record from JSON data; raises `pydantic.ValidationError` naming the field."""
        return cls.model_validate(record)

    def to_json(self) -> dict[str, Any]:
        """JSON data, every field."""
        return self.model_dump(mode="json")

    def models_run(self, models: Mapping[str, str] | None = None) -> dict[str, str]:
        """`models` (default: the model string of each role) with the agent's and the simulated user's said to be
        `NO_AGENT` in a replay without the benchmark: their settings default to `local`, but neither ran."""
        out = dict(self.models if models is None else models)
        if self.config.traces is not None and self.config.no_benchmark:
            out.update(dict.fromkeys((role for role in ("agent", "user") if role in out), NO_AGENT))
        return out

    # -- what the runner changes, each through one method ------------------------------------------------------

    def start_segment(self, segment: Segment) -> None:
        """A new segment (the first invocation or a resume) starts: the run is running again."""
        self.segments = [*self.segments, segment]
        self.status = "running"

    def update_segment(self, segment: Segment) -> None:
        """The current segment as it is now (its phase times, steps, status)."""
        self.segments = [*self.segments[:-1], segment]

    def close(self, status: str, error: str | None) -> None:
        """The current segment ended (`completed`, `failed` or `interrupted`)."""
        self.status = status
        self.error = error

    def resolve_model(self, role: str, name: str) -> None:
        """Record the model a role runs on (`system:model_name`)."""
        self.resolved_models = {**self.resolved_models, role: name}

    def resolve_benchmark(self, benchmark: ResolvedBenchmark | None) -> None:
        """Record the benchmark's options as this segment resolved them."""
        self.resolved_benchmark = benchmark

    def set_logfire(self, *, sent: bool, project_url: str | None, token_from: str | None) -> None:
        self.logfire = LogfireRecord(sent=sent, project_url=project_url, token_from=token_from)

    def set_collection(self, collection: CollectionRecord) -> None:
        self.collection = collection

    def set_review(self, review: ReviewRecord) -> None:
        self.review = review

    def set_redaction(self, redaction: RedactionRecord) -> None:
        self.redaction = redaction

    def set_collection_redactions(self, counts: dict[str, int]) -> None:
        """The values redacted per kind in the traces the run installed as its collection."""
        current = self.redaction or RedactionRecord()
        self.redaction = RedactionRecord(
            enabled=current.enabled, collection=dict(sorted(counts.items())), redact_step=current.redact_step
        )

    def set_summary(self, summary: RunSummary) -> None:
        """The fields computed from the folder's files (after every phase and at the end)."""
        for name in RunSummary.model_fields:
            setattr(self, name, getattr(summary, name))

    def set_benchmark(self, benchmark: BenchmarkRecord | None) -> None:
        """The benchmark's phases; their agent's and user's usage join `usage` (a role's usage from the samples
        or steps is kept, a benchmark role's replaced) and the cost is summed again."""
        self.benchmark = benchmark
        phases = list(benchmark.phases().values()) if benchmark is not None else []
        usage = dict(self.usage)
        for role in sorted({role for phase in phases for role in phase.usage}):
            total = RoleUsage()
            for phase in phases:
                if role in phase.usage:
                    total = total + phase.usage[role]
            usage[role] = total
        self.usage = usage
        costs = [u.cost_usd for u in usage.values() if u.cost_usd is not None]
        self.cost_usd = sum(costs) if costs else None

    # -- reading and writing --------------------------------------------------------------------------------------

    def step_output(self, step: str, default: str) -> str | None:
        """The file the end-of-run `step` writes (its `path` option) as the run recorded it, relative to the run
        folder unless absolute; `None` when the run left the step out, `default` for a run from before pipelines
        were recorded."""
        if self.pipeline is None:
            return default
        for planned in self.pipeline.steps:
            if planned.name == step:
                return str(planned.options.get("path", default))
        return None

    def write(self, path: Path, *, redactor: Redactor | None = None) -> None:
        """Replace `path` (a run folder's `run.json`) atomically: a kill mid-write leaves the previous version.
        Every string is redacted first (un-numbered; trace ids kept) when `redactor` is given, and the result is
        checked against this model, so what is written is what `load_run_record` reads."""
        data = self.to_json()
        if redactor is not None:
            data = redactor.redact_data(data, numbered=False, skip_keys=TRACE_ID_FIELDS)[0]
            RunRecord.model_validate(data)  # a redaction that broke a typed field is a bug, caught before writing
        raw = (json.dumps(data, indent=1, ensure_ascii=False) + "\n").encode("utf-8")

        def write(f: IO[bytes]) -> None:
            f.write(raw)

        atomic_write(path, write)


class RunRecordError(UserError, ValueError):
    """A `run.json` that cannot be read or does not have the shape `ace-eval e2e` writes; names the file and field."""


_FIX = "restore run.json from a copy, or start a new run (nothing was changed)"


def load_run_record(path: Path) -> RunRecord:
    """`path` (a run folder's `run.json`), checked; raises `RunRecordError` naming the file and the bad field."""
    try:
        data = json_safe.read_json(path)
    except json_safe.JsonInputError as e:
        raise RunRecordError(f"{e}: it cannot be read, the run folder is damaged; {_FIX}") from None
    try:
        return RunRecord.model_validate(data)
    except ValidationError as e:
        first = e.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "the top level"
        raise RunRecordError(f"{path}: field {where!r}: {first['msg']}: the run folder is damaged; {_FIX}") from None


def read_run_record(path: Path) -> RunRecord | None:
    """`path` read leniently, for display: `None` when it is missing or cannot be read."""
    try:
        return load_run_record(path)
    except RunRecordError:
        return None
