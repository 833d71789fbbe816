"""The skillbook's second line of redaction: every text an operation or its provenance would store is redacted.

`Skillbook._commit` calls `redact_commit` before it validates, so every path (the skill-manager tools,
deduplication, `apply_operations`, a script) stores placeholders, not secrets. `sample_question` is also cut to
`SAMPLE_QUESTION_MAX` characters: provenance names the task, it does not archive the trace.
"""

from __future__ import annotations

import dataclasses

from ace.core.insight_source import InsightSource
from ace.core.update_operation import UpdateOperation
from ace.redaction import Redactor

__all__ = ["SAMPLE_QUESTION_MAX", "redact_commit"]

SAMPLE_QUESTION_MAX = 300
"""Characters of a trace's question kept in `InsightSource.sample_question` (then `…`)."""


def redact_commit(
    redactor: Redactor | None, op: UpdateOperation, source: InsightSource | None
) -> tuple[UpdateOperation, InsightSource | None]:
    """`op` and `source` with their free texts redacted (when `redactor` is set), then the question truncated."""
    if redactor is not None:
        op, source = _redacted(redactor, op, source)
    if source is not None and source.sample_question is not None and len(source.sample_question) > SAMPLE_QUESTION_MAX:
        source = dataclasses.replace(source, sample_question=source.sample_question[: SAMPLE_QUESTION_MAX - 1] + "…")
    return op, source


def _redacted(
    redactor: Redactor, op: UpdateOperation, source: InsightSource | None
) -> tuple[UpdateOperation, InsightSource | None]:
    """Every text of `op` and `source` redacted in one pass (`redact_data` joins them)."""
    texts = {
        "issue": op.issue,
        "insight": op.insight,
        "reason": op.reason,
        "keywords": op.keywords,
        "sample_question": source.sample_question if source is not None else None,
        "error_identification": source.error_identification if source is not None else None,
        "learning_text": source.learning_text if source is not None else None,
        "reviewer": source.reviewer if source is not None else None,  # a person's name or e-mail
    }
    clean, findings = redactor.redact_data(texts, numbered=False)
    if not findings:
        return op, source
    op = dataclasses.replace(
        op, issue=clean["issue"], insight=clean["insight"], reason=clean["reason"], keywords=clean["keywords"]
    )
    if source is not None:
        source = dataclasses.replace(
            source,
            sample_question=clean["sample_question"],
            error_identification=clean["error_identification"],
            learning_text=clean["learning_text"],
            reviewer=clean["reviewer"],
        )
    return op, source
