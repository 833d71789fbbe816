"""The skillbook's second line of redaction: every text an operation or its provenance would store is redacted.

`Skillbook._commit` calls `redact_commit` before it validates, so every path (the skill-manager tools,
deduplication, `apply_operations`, a script) stores placeholders, not secrets. `sample_question` is also cut to
`SAMPLE_QUESTION_MAX` characters: provenance names the task, it does not archive the trace.
"""

from __future__ import annotations

import dataclasses
import weakref

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


_SOURCE_CACHE_SIZE = 64
_clean_sources: weakref.WeakKeyDictionary[Redactor, dict[InsightSource, InsightSource]] = weakref.WeakKeyDictionary()
"""Each redactor's last redacted provenance records: a harness passes the same record to every mutation of a
trace, so it is redacted once, not per mutation (records are frozen; a redactor's patterns do not change)."""


def _redacted(
    redactor: Redactor, op: UpdateOperation, source: InsightSource | None
) -> tuple[UpdateOperation, InsightSource | None]:
    """Every text of `op` redacted in one pass (`redact_data` joins them); `source` through `_clean_source`."""
    texts = {
        k: v
        for k, v in (("issue", op.issue), ("insight", op.insight), ("reason", op.reason), ("keywords", op.keywords))
        if v is not None
    }
    if source is not None:
        source = _clean_source(redactor, source)
    if not texts:
        return op, source
    clean, findings = redactor.redact_data(texts, numbered=False)
    if findings:
        op = dataclasses.replace(op, **clean)
    return op, source


def _clean_source(redactor: Redactor, source: InsightSource) -> InsightSource:
    cache = _clean_sources.setdefault(redactor, {})
    hit = cache.get(source)
    if hit is not None:
        return hit
    texts = {
        k: v
        for k, v in (
            ("sample_question", source.sample_question),
            ("error_identification", source.error_identification),
            ("learning_text", source.learning_text),
            ("reviewer", source.reviewer),  # a person's name or e-mail
        )
        if v is not None
    }
    clean, findings = redactor.redact_data(texts, numbered=False)
    out = dataclasses.replace(source, **clean) if findings else source
    if len(cache) >= _SOURCE_CACHE_SIZE:
        cache.clear()
    cache[source] = out
    return out
