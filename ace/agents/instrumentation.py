"""The one place an ACE agent (reflector, recursive reflector, skill manager) turns its `instrument` option into
pydantic-ai's `Instrumentation` capability: spans for its model requests and tool calls."""

from __future__ import annotations

from pydantic_ai.capabilities import Instrumentation
from pydantic_ai.models.instrumented import InstrumentationSettings

__all__ = ["Instrument", "instrumentation"]

Instrument = InstrumentationSettings | bool | None
"""An agent's `instrument=` option: settings of its own, `True` for pydantic-ai's defaults, falsy for no spans."""


def instrumentation(instrument: Instrument) -> tuple[Instrumentation, ...]:
    """The capabilities to add to an agent run for `instrument`: one `Instrumentation`, or none."""
    if not instrument:
        return ()
    settings = instrument if isinstance(instrument, InstrumentationSettings) else InstrumentationSettings()
    return (Instrumentation(settings=settings),)
