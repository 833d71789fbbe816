"""Shared fixtures: no model request ever leaves the machine, and real data is found or skipped."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from pydantic_ai import models

models.ALLOW_MODEL_REQUESTS = False
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

SHARED_DATA = Path(os.environ.get("ACE_SHARED_DATA", Path(__file__).resolve().parents[2] / "shared" / "data"))


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
