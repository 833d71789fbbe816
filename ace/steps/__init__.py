"""Pipeline steps, one per module (redact, reflect, update, quarantine, deduplicate, export, persist), their registry
and phases."""

from ace.steps.context import (
    CONTEXT_FIELDS,
    INITIAL_FIELDS,
    Step,
    StepContext,
    insight_source,
    source_of,
    trace_identity,
)
from ace.steps.deduplicate import DeduplicateStep, pairs_involving
from ace.steps.export_markdown import ExportMarkdownStep, escape_markdown, export_markdown
from ace.steps.persist import PersistStep
from ace.steps.phased import (
    DEFAULT_STEPS,
    PlannedStep,
    StepPipeline,
    StepRequest,
    build_pipeline,
    pipeline_differences,
    pipeline_requests,
    plan_pipeline,
)
from ace.steps.pipeline import Pipeline, PipelineError, StepFailed, StepTiming, check_order
from ace.steps.quarantine import QuarantineStep
from ace.steps.redact import RedactStep
from ace.steps.reflect import ReflectStep
from ace.steps.registry import (
    ENTRY_POINT_GROUP,
    PHASES,
    NoOptions,
    Phase,
    PluginError,
    RegisteredStep,
    StepConfigError,
    StepEnvironment,
    StepFactory,
    StepRegistry,
    parse_step_spec,
)
from ace.steps.update import UpdateStep

__all__ = [
    "CONTEXT_FIELDS",
    "DEFAULT_STEPS",
    "ENTRY_POINT_GROUP",
    "INITIAL_FIELDS",
    "PHASES",
    "DeduplicateStep",
    "ExportMarkdownStep",
    "NoOptions",
    "PersistStep",
    "Phase",
    "Pipeline",
    "PipelineError",
    "PlannedStep",
    "PluginError",
    "QuarantineStep",
    "RedactStep",
    "ReflectStep",
    "RegisteredStep",
    "Step",
    "StepConfigError",
    "StepContext",
    "StepEnvironment",
    "StepFactory",
    "StepFailed",
    "StepPipeline",
    "StepRegistry",
    "StepRequest",
    "StepTiming",
    "UpdateStep",
    "build_pipeline",
    "check_order",
    "escape_markdown",
    "export_markdown",
    "insight_source",
    "pairs_involving",
    "parse_step_spec",
    "pipeline_differences",
    "pipeline_requests",
    "plan_pipeline",
    "source_of",
    "trace_identity",
]
