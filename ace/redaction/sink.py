"""The skillbook's second line of redaction: every text an operation or its provenance would store is redacted.

`Skillbook._commit` calls `redact_commit` before it validates, so every path (the skill-manager tools,
deduplication, `apply_operations`, a script) stores placeholders, not secrets. `sample_question` is also cut to
`SAMPLE_QUESTION_MAX` characters: provenance names the task, it does not archive the trace.
"""

from __future__ import annotations

import dataclasses
import operator
from typing import Any, TypeVar

from ace.core.insight_source import InsightSource
from ace.core.update_operation import UpdateOperation
from ace.redaction import Redactor

__all__ = ["SAMPLE_QUESTION_MAX", "redact_commit"]

SAMPLE_QUESTION_MAX = 300
"""Characters of a trace's question kept in `InsightSource.sample_question` (then `…`)."""


_OP_TEXTS = ("issue", "insight", "reason", "keywords")
_SOURCE_TEXTS = ("sample_question", "error_identification", "learning_text", "reviewer")  # reviewer: name or e-mail
_GET_OP, _GET_SOURCE = operator.attrgetter(*_OP_TEXTS), operator.attrgetter(*_SOURCE_TEXTS)
"""One C call reads a record's texts (a comprehension of `getattr` costs several times more)."""
_Record = TypeVar("_Record", UpdateOperation, InsightSource)


def redact_commit(
    redactor: Redactor | None, op: UpdateOperation, source: InsightSource | None
) -> tuple[UpdateOperation, InsightSource | None]:
    """`op` and `source` with their free texts redacted (when `redactor` is set), then the question truncated.

    The texts of `op` are redacted as one text, and so are those of `source`, which the redactor remembers: a
    harness passes the same record to every mutation of a trace, so it is searched once, not per mutation.
    """
    if redactor is not None:
        op = _redacted(redactor, op, _OP_TEXTS, _GET_OP(op))
        if source is not None:
            source = _redacted(redactor, source, _SOURCE_TEXTS, _GET_SOURCE(source), remember=True)
    if source is not None and source.sample_question is not None and len(source.sample_question) > SAMPLE_QUESTION_MAX:
        source = dataclasses.replace(source, sample_question=source.sample_question[: SAMPLE_QUESTION_MAX - 1] + "…")
    return op, source


def _redacted(
    redactor: Redactor,
    record: _Record,
    fields: tuple[str, ...],
    values: tuple[str | list[str] | None, ...],
    *,
    remember: bool = False,
) -> _Record:
    """`record` with its `fields` (texts, or lists of texts: their `values`) redacted as one text; `record` itself
    when they hold no secret."""
    texts: list[str] = []
    for value in values:
        if isinstance(value, str):
            texts.append(value)
        elif value:
            texts.extend(value)
    clean = redactor.redact_texts(texts, remember=remember) if texts else None
    if clean is None:
        return record
    it = iter(clean)
    changes: dict[str, Any] = {
        name: next(it) if isinstance(value, str) else [next(it) for _ in value]
        for name, value in zip(fields, values, strict=True)
        if value is not None
    }
    return dataclasses.replace(record, **changes)
