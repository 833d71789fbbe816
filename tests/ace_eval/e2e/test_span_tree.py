"""The span tree of a run, as Logfire receives it (logfire's testing exporter) and as `spans.jsonl` holds it: one
root `ace.run`, a `train.epoch` per epoch, a `train.sample` per sample with every step of the sample under it
(redact, reflect with the reflector's span, update with the skill-manager session and its tool calls, quarantine,
checkpoint), the end-of-run steps under the run; the run's id and folder on every sample span."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import logfire
import pytest
from _e2e_support import scripted_injections
from logfire.testing import TestExporter
from opentelemetry.sdk.trace.export import SimpleSpanProcessor

from ace_eval.e2e import runner
from ace_eval.e2e.config import E2ESettings

DEMO = Path(__file__).resolve().parents[3] / "examples" / "demo-collection"
SAMPLE_STEPS = {"step.redact", "step.reflect", "step.update", "step.quarantine", "step.checkpoint"}
RUN_STEPS = {"step.export_markdown", "step.persist"}


@pytest.fixture
def exporter(monkeypatch: pytest.MonkeyPatch) -> TestExporter:
    """Every span the run's Logfire set-up produces also goes to a `TestExporter`."""
    captured = TestExporter()
    configure = logfire.configure

    def with_capture(*args: Any, **kwargs: Any) -> Any:
        processors = [*(kwargs.pop("additional_span_processors", None) or []), SimpleSpanProcessor(captured)]
        return configure(*args, additional_span_processors=processors, **kwargs)

    monkeypatch.setattr(logfire, "configure", with_capture)
    return captured


def _tree(spans: list[dict[str, Any]]) -> tuple[dict[int, dict[str, Any]], dict[int, int | None]]:
    by_id = {s["context"]["span_id"]: s for s in spans}
    parent = {sid: (s["parent"] or {}).get("span_id") for sid, s in by_id.items()}
    return by_id, parent


def _ancestor(sid: int, by_id: dict[int, dict[str, Any]], parent: dict[int, int | None], name: str) -> int | None:
    current = parent[sid]
    while current is not None and by_id[current]["name"] != name:
        current = parent[current]
    return current


@pytest.mark.parametrize(
    ("workers", "sessions"),
    [(1, "concurrent"), (2, "ordered"), (3, "concurrent")],
    ids=["sequential", "ordered", "concurrent"],
)
def test_a_3_sample_run_is_one_tree(exporter: TestExporter, tmp_path: Path, workers: int, sessions: str) -> None:
    settings = E2ESettings(
        traces=DEMO,
        no_benchmark=True,
        output_dir=tmp_path,
        limit=3,
        epochs=1,
        max_workers=workers,
        sm_sessions=sessions,
    )
    folder = runner.run_e2e(settings, injections=scripted_injections()).folder.path
    spans = exporter.exported_spans_as_dict()
    by_id, parent = _tree(spans)

    [root] = [sid for sid, p in parent.items() if p is None]
    assert by_id[root]["name"] == "ace.run"
    assert by_id[root]["attributes"]["ace.run_id"] == folder.name
    assert len({s["context"]["trace_id"] for s in spans}) == 1
    [epoch] = [sid for sid, s in by_id.items() if s["name"] == "train.epoch"]
    assert parent[epoch] == root and by_id[epoch]["attributes"]["ace.epoch"] == 0

    samples = [sid for sid, s in by_id.items() if s["name"] == "train.sample"]
    assert len(samples) == 3 and all(parent[sid] == epoch for sid in samples)
    for sid in samples:
        attrs = by_id[sid]["attributes"]
        assert attrs["ace.run_id"] == folder.name and attrs["ace.run_dir"] == str(folder)
    uids = {by_id[sid]["attributes"]["ace.trace_uid"] for sid in samples}
    assert len(uids) == 3

    steps = [sid for sid, s in by_id.items() if s["name"].startswith("step.")]
    assert {by_id[sid]["name"] for sid in steps} == SAMPLE_STEPS | RUN_STEPS
    for sid in steps:
        name = by_id[sid]["name"]
        expected = samples if name in SAMPLE_STEPS else [root]
        assert parent[sid] in expected, name
    for sample in samples:  # each sample has each of its steps once
        assert sorted(by_id[sid]["name"] for sid in steps if parent[sid] == sample) == sorted(SAMPLE_STEPS)

    for name in ("reflect", "sm.session"):  # the reflector's and the skill manager's work, in their sample
        for sid in (sid for sid, s in by_id.items() if s["name"] == name):
            sample = _ancestor(sid, by_id, parent, "train.sample")
            assert sample is not None, name
            assert by_id[sample]["attributes"]["ace.trace_uid"] == by_id[sid]["attributes"]["ace.trace_uid"]
    calls = [sid for sid, s in by_id.items() if s["name"] in ("add_skill", "update_skill", "search_skills")]
    assert calls and all(_ancestor(sid, by_id, parent, "sm.session") is not None for sid in calls)

    local = [json.loads(line) for line in (folder / "spans.jsonl").read_text(encoding="utf-8").splitlines()]
    assert {(int(s["span_id"], 16), int(s["parent_span_id"], 16) if s["parent_span_id"] else None) for s in local} == {
        (sid, p) for sid, p in parent.items()
    }  # the same tree in the run folder
