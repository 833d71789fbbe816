"""Shared fixtures: no model request ever leaves the machine, and real data is found or skipped."""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from pathlib import Path

import logfire
import pytest
from logfire.testing import IncrementalIdGenerator, TestExporter, TimeGenerator
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from pydantic_ai import models

models.ALLOW_MODEL_REQUESTS = False
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("ACE_REDACTION_KEY", "ace-tests: a fixed key, so no test writes ~/.local/state")

SHARED_DATA = Path(os.environ.get("ACE_SHARED_DATA", Path(__file__).resolve().parents[2] / "shared" / "data"))


@pytest.fixture(autouse=True, scope="session")
def _ctrl_c_raises() -> Iterator[None]:
    """Ctrl-C raises `KeyboardInterrupt`, also when pytest was started with SIGINT ignored (a background job)."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """`../shared/data` (or `$ACE_SHARED_DATA`); the test is skipped with the reason when it is absent."""
    if not SHARED_DATA.is_dir():
        pytest.skip(f"real data not found at {SHARED_DATA}: set ACE_SHARED_DATA to the shared/data folder")
    return SHARED_DATA


@pytest.fixture(scope="session")
def airline_data(shared_data: Path) -> Path:
    """The tau-bench airline data folder, or skip."""
    path = shared_data / "tau-bench" / "airline"
    if not (path / "tasks_test.json").is_file():
        pytest.skip(f"tau-bench airline data not found at {path}")
    return path


@pytest.fixture
def spans() -> Iterator[TestExporter]:
    """Like logfire's `capfire`: every span goes to an in-memory exporter, nothing leaves the machine."""
    exporter = TestExporter()
    logfire.configure(
        send_to_logfire=False,
        console=False,
        advanced=logfire.AdvancedOptions(id_generator=IncrementalIdGenerator(), ns_timestamp_generator=TimeGenerator()),
        additional_span_processors=[SimpleSpanProcessor(exporter)],
        inspect_arguments=False,
        scrubbing=False,  # airline traces mention credit cards, which Logfire's default scrubber hides
    )
    yield exporter
    exporter.clear()
