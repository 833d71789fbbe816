"""The skillbook's second line of redaction: every text an operation or its provenance would store is redacted.

`Skillbook._commit` calls `redact_commit` before it validates, so every path (the skill-manager tools,
deduplication, `apply_operations`, a script) stores placeholders, not secrets. `sample_question` is also cut to
`SAMPLE_QUESTION_MAX` characters: provenance names the task, it does not archive the trace.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator

from ace.core.insight_source import InsightSource
from ace.core.update_operation import UpdateOperation
from ace.redaction import Redactor

__all__ = ["SAMPLE_QUESTION_MAX", "redact_commit"]

SAMPLE_QUESTION_MAX = 300
"""Characters of a trace's question kept in `InsightSource.sample_question` (then `…`)."""


def redact_commit(
    redactor: Redactor | None, op: UpdateOperation, source: InsightSource | None
) -> tuple[UpdateOperation, InsightSource | None]:
    """`op` and `source` with their free texts redacted (when `redactor` is set), then the question truncated.

    The texts of `op` are redacted as one text, and so are those of `source`, which the redactor remembers: a
    harness passes the same record to every mutation of a trace, so it is searched once, not per mutation.
    """
    if redactor is not None:
        op = _redacted_op(redactor, op)
        if source is not None:
            source = _redacted_source(redactor, source)
    if source is not None and source.sample_question is not None and len(source.sample_question) > SAMPLE_QUESTION_MAX:
        source = dataclasses.replace(source, sample_question=source.sample_question[: SAMPLE_QUESTION_MAX - 1] + "…")
    return op, source


def _redacted_op(redactor: Redactor, op: UpdateOperation) -> UpdateOperation:
    texts = [t for t in (op.issue, op.insight, op.reason) if t is not None]
    if op.keywords:
        texts.extend(op.keywords)
    clean = redactor.redact_texts(texts) if texts else None
    if clean is None:
        return op
    it = iter(clean)
    return dataclasses.replace(
        op,
        issue=_next(it, op.issue),
        insight=_next(it, op.insight),
        reason=_next(it, op.reason),
        keywords=list(it) if op.keywords else op.keywords,
    )


def _redacted_source(redactor: Redactor, source: InsightSource) -> InsightSource:
    texts = [
        t
        for t in (source.sample_question, source.error_identification, source.learning_text, source.reviewer)
        if t is not None
    ]  # the reviewer: a person's name or e-mail
    clean = redactor.redact_texts(texts, remember=True) if texts else None
    if clean is None:
        return source
    it = iter(clean)
    return dataclasses.replace(
        source,
        sample_question=_next(it, source.sample_question),
        error_identification=_next(it, source.error_identification),
        learning_text=_next(it, source.learning_text),
        reviewer=_next(it, source.reviewer),
    )


def _next(clean: Iterator[str], old: str | None) -> str | None:
    """The redacted text of a field that had one (`clean` holds only those), else `None`."""
    return next(clean) if old is not None else None
