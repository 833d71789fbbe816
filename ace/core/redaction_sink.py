"""The skillbook's second line of redaction: every text an operation or its provenance would store is redacted.

`Skillbook._commit` calls `redact_commit` before it validates, so every path (the skill-manager tools,
deduplication, `apply_operations`, a script) stores placeholders, not secrets. `sample_question` is also cut to
`SAMPLE_QUESTION_MAX` characters: provenance names the task, it does not archive the trace.
"""

from __future__ import annotations

import dataclasses
import operator

from ace.core.insight_source import InsightSource
from ace.core.update_operation import UpdateOperation
from ace.redaction import Redactor

__all__ = ["SAMPLE_QUESTION_MAX", "redact_commit"]

SAMPLE_QUESTION_MAX = 300
"""Characters of a trace's question kept in `InsightSource.sample_question` (then `…`)."""


_SOURCE_TEXTS = operator.attrgetter("sample_question", "error_identification", "learning_text", "reviewer")
"""The texts of a provenance record (the reviewer: a person's name or e-mail), read in one call."""


def redact_commit(
    redactor: Redactor | None, op: UpdateOperation, source: InsightSource | None
) -> tuple[UpdateOperation, InsightSource | None]:
    """`op` and `source` with their free texts redacted (when `redactor` is set), then the question truncated.

    The texts of `op` are redacted as one text, and so are those of `source`, which the redactor remembers: a
    harness passes the same record to every mutation of a trace, so it is searched once, not per mutation.
    """
    if redactor is not None:
        clean = redactor.redact_texts((op.issue, op.insight, op.reason, *(op.keywords or ())))
        if clean is not None:
            keywords = [k for k in clean[3:] if k is not None] if op.keywords is not None else None
            op = dataclasses.replace(op, issue=clean[0], insight=clean[1], reason=clean[2], keywords=keywords)
        if source is not None and (texts := redactor.redact_texts(_SOURCE_TEXTS(source), remember=True)):
            question, error, learning, reviewer = texts
            source = dataclasses.replace(
                source, sample_question=question, error_identification=error, learning_text=learning, reviewer=reviewer
            )
    if source is not None and source.sample_question is not None and len(source.sample_question) > SAMPLE_QUESTION_MAX:
        source = dataclasses.replace(source, sample_question=source.sample_question[: SAMPLE_QUESTION_MAX - 1] + "…")
    return op, source
