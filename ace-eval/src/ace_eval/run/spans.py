"""Letting go of a run's spans when it ends: its span file closes and pydantic-ai's instrumentation goes off."""

from __future__ import annotations

from ace.observability import Observability

__all__ = ["release_observability"]


def release_observability(obs: Observability) -> None:
    """Stop writing spans to the run's file (a later run in the same process gets its own) and turn the
    pydantic-ai instrumentation off again."""
    if not obs.enabled and obs.local_spans_path is None:
        return
    import logfire
    from pydantic_ai import Agent

    logfire.configure(send_to_logfire=False, console=False, inspect_arguments=False)
    if obs.enabled:
        Agent.instrument_all(False)
