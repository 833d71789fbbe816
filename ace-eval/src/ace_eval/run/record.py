"""`run.json` as a pydantic model: the fields its readers use, typed, every other field kept as it is.

The runner builds the record as it goes; `RunFolder.write_run_json` checks it against `RunRecord` before writing,
and every reader (`ace-eval e2e`'s summary, `ace-eval inspect`) reads it through `RunRecord` instead of chains of
`.get(...) or {}`.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ace.core import json_safe
from ace.exceptions import UserError

__all__ = [
    "RUN_JSON",
    "BenchmarkRecord",
    "CollectionRecord",
    "ConfigRecord",
    "PhaseRecord",
    "RoleUsage",
    "RunRecord",
    "RunRecordError",
    "SampleErrorRecord",
    "SkillbookOrigin",
    "StepTiming",
    "TrainingRecord",
    "load_run_record",
    "read_run_record",
]

RUN_JSON = "run.json"


class _Open(BaseModel):
    """A part of `run.json`: the typed fields are checked, the others kept (the runner adds them as it goes)."""

    model_config = ConfigDict(extra="allow")


class RoleUsage(_Open):
    """Requests, tokens and cost of one role (agent, user, reflector, skill_manager, a step's judge)."""

    requests: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float | None = None


class PhaseRecord(_Open):
    """One benchmark phase (the agent without, then with the skillbook)."""

    episodes: int = 0
    scored: int = 0
    errors: int = 0
    pass_hat_k: dict[int, float | None] = Field(default_factory=dict)


class BenchmarkRecord(_Open):
    before: PhaseRecord | None = None
    after: PhaseRecord | None = None
    after_with_quarantined: PhaseRecord | None = None
    """The agent with the learned skillbook and its quarantined skills released (only when any were quarantined)."""


class TrainingRecord(_Open):
    samples: int = 0
    errors: int = 0
    resumed_samples: int | None = None


class SampleErrorRecord(_Open):
    trace_uid: str
    epoch: int
    error: str


class CollectionRecord(_Open):
    traces_used: int = 0


class ConfigRecord(_Open):
    """The run's settings (`E2ESettings.to_dict()`); a resume compares them with its own."""

    epochs: int = 1
    review: bool = False
    """Whether the run queued its edits for a person's review instead of applying them."""
    skillbook: str | None = None
    """The skillbook the run started from (`--skillbook`); a review run's queue is beside it."""


class StepTiming(_Open):
    calls: int = 0
    seconds: float = 0.0


class SkillbookOrigin(BaseModel):
    """The store and version of the skillbook a run started from."""

    model_config = ConfigDict(extra="forbid")

    store: str
    version: int = Field(ge=1)


class RunRecord(_Open):
    """`run.json`."""

    run_id: str | None = None
    status: str | None = None
    error: str | None = None
    config: ConfigRecord = Field(default_factory=ConfigRecord)
    models: dict[str, str] | None = None
    collection: CollectionRecord | None = None
    training: TrainingRecord | None = None
    benchmark: BenchmarkRecord | None = None
    usage: dict[str, RoleUsage] = Field(default_factory=dict)
    errors: list[SampleErrorRecord] = Field(default_factory=list)
    step_timings: dict[str, StepTiming] = Field(default_factory=dict)
    skillbook_origin: SkillbookOrigin | None = None
    """The store version the run started from (`--skillbook STORE`); the incumbent a gate compares with."""
    pipeline: dict[str, Any] | None = None
    """The steps the run planned (`{"steps": [{"name", "phase", "options"}, ...]}`); `None` before they were."""

    @classmethod
    def of(cls, record: Mapping[str, object]) -> RunRecord:
        """The record the runner holds (a dict), checked; raises `pydantic.ValidationError` naming the field."""
        return cls.model_validate(record)


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
