"""Shared fixtures: no model request ever leaves the machine, and the real data sets come from tests/data/."""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from pathlib import Path

import logfire
import pytest
from _shipped_data import unpack_shipped_data
from logfire.testing import IncrementalIdGenerator, TestExporter, TimeGenerator
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from pydantic_ai import models

models.ALLOW_MODEL_REQUESTS = False
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("ACE_REDACTION_KEY", "ace-tests: a fixed key, so no test writes ~/.local/state")


@pytest.fixture(autouse=True, scope="session")
def _ctrl_c_raises() -> Iterator[None]:
    """Ctrl-C raises `KeyboardInterrupt`, also when pytest was started with SIGINT ignored (a background job)."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


@pytest.fixture(scope="session")
def shared_data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The real data sets, laid out like `../shared/data` (`tau-bench/airline`, `retrieval-banking`): unpacked once
    per session from the archives every clone has in tests/data/ (their sources and licences are there)."""
    return unpack_shipped_data(tmp_path_factory.mktemp("shared-data"))


@pytest.fixture(scope="session")
def airline_data(shared_data: Path) -> Path:
    """The tau-bench airline data folder (tasks, database, policy, the 120 GPT-4o trajectories)."""
    return shared_data / "tau-bench" / "airline"


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
