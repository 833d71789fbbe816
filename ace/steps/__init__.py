"""Pipeline steps, one per module: redact, reflect, update, deduplicate, export, persist."""

from ace.steps.context import CONTEXT_FIELDS, INITIAL_FIELDS, Step, StepContext, insight_source, trace_identity
from ace.steps.deduplicate import DeduplicateStep, pairs_involving
from ace.steps.export_markdown import ExportMarkdownStep, escape_markdown, export_markdown
from ace.steps.persist import PersistStep
from ace.steps.pipeline import Pipeline, PipelineError, check_order
from ace.steps.redact import RedactStep
from ace.steps.reflect import ReflectStep
from ace.steps.update import UpdateStep

__all__ = [
    "CONTEXT_FIELDS",
    "INITIAL_FIELDS",
    "DeduplicateStep",
    "ExportMarkdownStep",
    "PersistStep",
    "Pipeline",
    "PipelineError",
    "RedactStep",
    "ReflectStep",
    "Step",
    "StepContext",
    "UpdateStep",
    "check_order",
    "escape_markdown",
    "export_markdown",
    "insight_source",
    "pairs_involving",
    "trace_identity",
]
