"""ACE's built-in pipeline steps, one per module: redact, reflect, update, quarantine, deduplicate, export, persist.

Each module declares its step class and the `StepFactory` its `ace.steps` entry point names; the engine they plug
into is `ace.pipeline`.
"""

from ace.steps.deduplicate import DeduplicateStep, pairs_involving
from ace.steps.export_markdown import ExportMarkdownStep, escape_markdown, export_markdown
from ace.steps.persist import PersistStep
from ace.steps.quarantine import QuarantineStep
from ace.steps.redact import RedactStep
from ace.steps.reflect import ReflectStep
from ace.steps.update import UpdateStep

__all__ = [
    "DeduplicateStep",
    "ExportMarkdownStep",
    "PersistStep",
    "QuarantineStep",
    "RedactStep",
    "ReflectStep",
    "UpdateStep",
    "escape_markdown",
    "export_markdown",
    "pairs_involving",
]
