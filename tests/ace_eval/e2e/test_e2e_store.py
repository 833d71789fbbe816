"""`ace-eval e2e --skillbook STORE`: the run starts from the store's current version, pinned, and records which."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from _e2e_support import scripted_injections
from _store_support import store_with

from ace_eval.e2e import runner
from ace_eval.e2e.config import ConfigError, resolve_settings
from ace_eval.run import read_run

DEMO = Path(__file__).resolve().parents[3] / "examples" / "demo-collection"


def test_a_run_from_a_store_starts_from_its_current_version_and_records_it(tmp_path: Path) -> None:
    store = store_with(tmp_path / "st", tmp_path, 2)
    store.rollback()  # current is 1: the run must take the pointer, not the newest folder
    flags = {"traces": DEMO, "no_benchmark": True, "limit": 1, "skillbook": store.root, "output_dir": tmp_path / "o"}
    settings = resolve_settings(flags, environ={}, cwd=tmp_path)
    assert settings.skillbook == store.skillbook_path(1)
    result = runner.run_e2e(settings, injections=scripted_injections())
    assert result.record.skillbook_origin is not None
    assert result.record.skillbook_origin.model_dump() == {"store": str(store.root), "version": 1}
    assert read_run(result.folder.path).record.skillbook_origin is not None
    on_disk = json.loads(result.folder.run_json.read_text(encoding="utf-8"))
    assert on_disk["skillbook_origin"]["version"] == 1
    assert {s.issue for s in result.skillbook.skills()} >= {"Issue number 1"}  # learning started from version 1
    assert store.verify() == []  # the version the run started from is untouched


def test_review_refuses_a_store(tmp_path: Path) -> None:
    store = store_with(tmp_path / "st", tmp_path, 1)
    flags = {"traces": DEMO, "no_benchmark": True, "review": True, "skillbook": store.root}
    with pytest.raises(ConfigError, match="immutable"):
        resolve_settings(flags, environ={}, cwd=tmp_path)


def test_a_folder_that_is_not_a_store_is_refused(tmp_path: Path) -> None:
    flags = {"traces": DEMO, "no_benchmark": True, "skillbook": tmp_path}
    with pytest.raises(ConfigError, match="not a skillbook store"):
        resolve_settings(flags, environ={}, cwd=tmp_path)
