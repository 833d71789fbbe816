"""ACE's own steps as `StepFactory`s: registered under `ace.steps` in ACE's `pyproject.toml`, like any plugin."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from ace.core.effectiveness import DEFAULT_MIN_HARMFUL_TRACES, QuarantinePolicy
from ace.deduplication.detector import DEFAULT_THRESHOLD
from ace.steps.deduplicate import DeduplicateStep
from ace.steps.export_markdown import ExportMarkdownStep
from ace.steps.persist import PersistStep
from ace.steps.quarantine import QuarantineStep
from ace.steps.redact import RedactStep
from ace.steps.reflect import ReflectStep
from ace.steps.registry import NoOptions, StepEnvironment, StepFactory, need
from ace.steps.update import UpdateStep

__all__ = ["deduplicate", "export_markdown", "persist", "quarantine", "redact", "reflect", "update"]


class DeduplicateOptions(BaseModel):
    """`deduplicate`: the judge's model string, the cosine of a candidate pair, the pairs judged per epoch."""

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)
    model: str | None = Field(default=None, min_length=1)
    """The judge (default: the skill manager's model)."""
    threshold: float = Field(default=DEFAULT_THRESHOLD, gt=0.0, le=1.0)
    """Cosine similarity at or above which two skills of a section are a candidate pair."""
    max_pairs: int = Field(default=50, ge=1)
    """Most pairs judged per epoch, most similar first."""


class QuarantineOptions(BaseModel):
    """`quarantine`: how much harmful evidence retires a skill."""

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)
    min_harmful_traces: int = Field(default=DEFAULT_MIN_HARMFUL_TRACES, ge=DEFAULT_MIN_HARMFUL_TRACES)
    """Distinct traces whose reflection tagged the skill harmful (at least 2: one may be a transient failure)."""
    min_margin: int = Field(default=1, ge=1)
    """Harmful traces minus helpful traces needed (1: strictly more harmful than helpful evidence)."""


class ExportOptions(BaseModel):
    """`export_markdown`: the file (relative paths in the run folder) and its title."""

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)
    path: str = Field(default="skillbook.md", min_length=1)
    """The markdown file; a relative path is in the run folder."""
    title: str = "Skillbook"
    """The document's heading."""


class PersistOptions(BaseModel):
    """`persist`: the skillbook file (relative paths in the run folder); its `.embeddings.npz` goes beside it."""

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)
    path: str = Field(default="skillbook.json", min_length=1)
    """The skillbook file; a relative path is in the run folder."""


def _redact(_: NoOptions, env: StepEnvironment) -> RedactStep:
    return RedactStep(env.redactor)


def _reflect(_: NoOptions, env: StepEnvironment) -> ReflectStep:
    return ReflectStep(need(env.reflector, "reflect", "reflector"))


def _update(_: NoOptions, env: StepEnvironment) -> UpdateStep:
    return UpdateStep(need(env.skill_manager, "update", "skill_manager"))


def _deduplicate(o: DeduplicateOptions, env: StepEnvironment) -> DeduplicateStep:
    return DeduplicateStep(
        env.model("dedup", o.model), threshold=o.threshold, scope="all", max_pairs=o.max_pairs, embedder=env.embedder
    )


def _quarantine(o: QuarantineOptions, _: StepEnvironment) -> QuarantineStep:
    return QuarantineStep(QuarantinePolicy(min_harmful_traces=o.min_harmful_traces, min_margin=o.min_margin))


def _export(o: ExportOptions, env: StepEnvironment) -> ExportMarkdownStep:
    return ExportMarkdownStep(env.path("export_markdown", "path", o.path), title=o.title, redactor=env.redactor)


def _persist(o: PersistOptions, env: StepEnvironment) -> PersistStep:
    return PersistStep(env.path("persist", "path", o.path), embedder=env.embedder)


redact = StepFactory(
    phase="before_reflect",
    description="Replaces secrets and personal data in the trace by typed placeholders before anything reads it.",
    options=NoOptions,
    build=_redact,
    requires=frozenset({"trace"}),
    provides=frozenset({"trace", "redactions"}),
)
reflect = StepFactory(
    phase="reflect",
    description="The reflector reads the trace and says what went wrong and which skills helped.",
    options=NoOptions,
    build=_reflect,
    requires=frozenset({"trace", "skillbook"}),
    provides=frozenset({"reflections"}),
)
update = StepFactory(
    phase="update",
    description="A skill-manager session turns the reflection into atomic skillbook edits.",
    options=NoOptions,
    build=_update,
    requires=frozenset({"trace", "skillbook", "epoch", "reflections"}),
    provides=frozenset({"sm_result"}),
)
quarantine = StepFactory(
    phase="after_update",
    description="Quarantines a skill tagged harmful on 2+ distinct traces and more harmful than helpful.",
    options=QuarantineOptions,
    build=_quarantine,
    requires=frozenset({"skillbook", "epoch"}),
    provides=frozenset({"quarantine.quarantined"}),
)
deduplicate = StepFactory(
    phase="end_of_epoch",
    description="Near-duplicate skill pairs (embedding cosine) judged MERGE / DELETE / UPDATE / KEEP by an LLM.",
    options=DeduplicateOptions,
    build=_deduplicate,
    requires=frozenset({"skillbook", "epoch"}),
    provides=frozenset({"dedup_decisions"}),
    models=lambda o: {"dedup": o.model},
)
export_markdown = StepFactory(
    phase="end_of_run",
    description="Writes the skillbook as markdown (skillbook.md).",
    options=ExportOptions,
    build=_export,
    requires=frozenset({"skillbook"}),
)
persist = StepFactory(
    phase="end_of_run",
    description="Embeds skills without a vector, then saves skillbook.json and its .embeddings.npz atomically.",
    options=PersistOptions,
    build=_persist,
    requires=frozenset({"skillbook"}),
)
