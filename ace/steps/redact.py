"""`RedactStep`: the trace with its secrets and personal data replaced by typed placeholders, before reflection.

It runs first, so nothing downstream (reflector, skill manager, provenance, spans with content) sees a raw secret.
Within one trace the same value always gets the same placeholder (`[REDACTED:email#1]`), so the reflector can
still tell two e-mails apart. The identity fields (`trace_uid`, `source_system`, `trace_id`) are not searched for
card numbers, and a secret in one (an e-mail used as a trace id) becomes `id_placeholder`'s digest, the same in
every sink, so the id stays one id; dict keys are redacted the same way.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from ace.core.trace import IDENTITY_FIELDS, TraceIdentity
from ace.pipeline.context import StepContext
from ace.pipeline.registry import NoOptions, StepEnvironment, StepFactory
from ace.redaction import Redactor, count_kinds

__all__ = ["TRACE_ID_FIELDS", "RedactStep"]

TRACE_ID_FIELDS: frozenset[str] = frozenset(IDENTITY_FIELDS)
"""Trace fields the run needs to attribute and resume samples: redacted only by `id_placeholder`."""


class RedactStep:
    """Replaces `ctx.trace` by its redacted copy and records how many values of each kind were replaced."""

    name = "redact"
    requires: frozenset[str] = frozenset({"trace"})
    provides: frozenset[str] = frozenset({"trace", "redactions"})

    def __init__(self, redactor: Redactor | None = None) -> None:
        """`redactor`: the detectors, extra patterns and allow-list to use (default: the built-in detectors)."""
        self.redactor = redactor if redactor is not None else Redactor()

    async def __call__(self, ctx: StepContext) -> StepContext:
        """A new context whose trace holds placeholders instead of secrets; `redactions` counts them by kind."""
        trace, findings = self.redactor.redact_data(ctx.trace, skip_keys=TRACE_ID_FIELDS)
        counts = dict(ctx.redactions)
        for kind, n in count_kinds(findings).items():
            counts[kind] = counts.get(kind, 0) + n
        return dataclasses.replace(
            ctx, trace=trace, identity=_redacted_identity(ctx.identity, trace), redactions=MappingProxyType(counts)
        )


def _redacted_identity(identity: TraceIdentity | None, trace: Mapping[str, Any]) -> TraceIdentity | None:
    """The identity as redacted: the same object when no id held a secret, else the placeholders the trace has."""
    if identity is None:
        return TraceIdentity.find(trace)
    if all(trace.get(key) == value for key, value in zip(IDENTITY_FIELDS, identity.as_tuple(), strict=True)):
        return identity
    return TraceIdentity.find(trace)


def _build(_: NoOptions, env: StepEnvironment) -> RedactStep:
    return RedactStep(env.redactor)


factory = StepFactory(
    step=RedactStep,
    phase="before_reflect",
    description="Replaces secrets and personal data in the trace by typed placeholders before anything reads it.",
    options=NoOptions,
    build=_build,
)
