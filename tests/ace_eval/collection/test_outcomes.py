"""Outcomes for spans: `ace.reward` / `ace.feedback` attributes set on a pydantic-ai run's spans (with
`logfire.span` around the run, or `span.set_attribute` after it), and `--outcomes FILE` at import, both through
`collection import` and `e2e --traces`."""

from __future__ import annotations

import functools
import json
import re
from pathlib import Path

import pytest
from _e2e_support import scripted_injections
from _otel_agent import logfire_to_file, record_runs, support_agent, weather_agent
from click.testing import CliRunner

from ace_eval.cli import main
from ace_eval.collection import CollectionError, read_collection
from ace_eval.collection.importers import import_otel
from ace_eval.collection.outcomes import apply_outcomes, read_outcomes
from ace_eval.e2e import runner


def _judged_runs(path: Path) -> Path:
    """Two weather runs: one inside `logfire.span(..., **{"ace.reward": ...})`, one judged after the run with
    `span.set_attribute`; a third run is not judged."""
    agent = weather_agent()
    instance = logfire_to_file(path)
    instance.instrument_pydantic_ai(agent)
    with instance.span("support ticket", **{"ace.reward": 1.0, "ace.feedback": "The customer thanked us."}):
        agent.run_sync("Weather in Paris?")
    with instance.span("support ticket") as span:
        agent.run_sync("Weather in Oslo?")
        span.set_attribute("ace.reward", 0)
        span.set_attribute("ace.feedback", "Wrong city: the customer asked about Oslo, Norway.")
    agent.run_sync("Weather in Lima?")
    instance.force_flush()
    return path


def test_ace_reward_and_feedback_span_attributes_judge_the_run(tmp_path: Path) -> None:
    paris, oslo, lima = import_otel(_judged_runs(tmp_path / "spans.jsonl")).traces
    assert (paris.reward, paris.feedback) == (1.0, "The customer thanked us.")
    assert (oslo.reward, oslo.feedback) == (0.0, "Wrong city: the customer asked about Oslo, Norway.")
    assert (lima.reward, lima.feedback) == (None, None)


def test_outcomes_file_shapes_and_refusals(tmp_path: Path) -> None:
    path = tmp_path / "spans.jsonl"
    record_runs(path, support_agent(), ["Refund order A100", "Refund order A999"])
    ok, failed = import_otel(path).traces
    lines = tmp_path / "outcomes.jsonl"
    lines.write_text(
        json.dumps({"trace_id": ok.trace_id, "reward": 1})
        + "\n"
        + json.dumps({"trace_id": failed.metadata["otel_trace_id"], "reward": 0, "feedback": "Order A999 exists."})
        + "\n"
    )
    by_id, shape = read_outcomes(lines)
    assert shape == "JSON lines, one outcome per line"
    judged = apply_outcomes([ok, failed], by_id, file=str(lines))
    assert (judged[0].reward, judged[0].feedback) == (1.0, None)
    assert (judged[1].reward, judged[1].feedback) == (0.0, "Order A999 exists.")  # replaces the error feedback
    mapping = tmp_path / "outcomes.json"
    mapping.write_text(json.dumps({ok.trace_id: {"reward": 0.5}}, indent=2))
    assert read_outcomes(mapping)[1] == "a JSON object of trace id -> outcome"
    assert apply_outcomes([ok], read_outcomes(mapping)[0], file=str(mapping))[0].reward == 0.5

    mapping.write_text(json.dumps({"not-a-trace": {"reward": 1}}))
    with pytest.raises(CollectionError, match=r"1 outcome\(s\) name no imported trace \('not-a-trace'\)"):
        apply_outcomes([ok], read_outcomes(mapping)[0], file=str(mapping))
    for bad, says in (
        ({"x": {"reward": "high"}}, "field 'x': reward must be a finite number or null"),
        ({"x": {"score": 1}}, "field 'x': unknown key 'score' (accepted: reward, feedback)"),
        ([{"reward": 1}], "missing or not a string: the trace id"),
    ):
        mapping.write_text(json.dumps(bad))
        with pytest.raises(CollectionError, match=re.escape(says)):
            read_outcomes(mapping)


def test_outcomes_at_import_on_the_command_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    path = tmp_path / "spans.jsonl"
    record_runs(path, support_agent(), ["Refund order A100", "Refund order A999"])
    ok, failed = import_otel(path).traces
    outcomes = tmp_path / "outcomes.json"
    outcomes.write_text(json.dumps({ok.trace_id: {"reward": 1}, failed.trace_id: {"reward": 0, "feedback": "Bad."}}))
    result = CliRunner().invoke(main, ["collection", "import", str(path), "--out", "c", "--outcomes", str(outcomes)])
    assert result.exit_code == 0, result.output
    assert f"Outcomes: 2 traces judged from {outcomes} (a JSON object of trace id -> outcome)." in result.output
    assert "1 success of 2 with a reward" in result.output
    assert [(t.reward, t.feedback) for t in read_collection(tmp_path / "c")[1]][1] == (0.0, "Bad.")

    monkeypatch.setattr(
        "ace_eval.commands.e2e.run_e2e", functools.partial(runner.run_e2e, injections=scripted_injections())
    )
    monkeypatch.delenv("ACE_MODEL", raising=False)
    args = ["e2e", "--traces", str(path), "--outcomes", str(outcomes), "--output-dir", "out"]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    (run,) = (tmp_path / "out").iterdir()
    assert [t.reward for t in read_collection(run / "collection")[1]] == [1.0, 0.0]
    outcomes.write_text(json.dumps({"deadbeef": {"reward": 1}}))
    refused = CliRunner().invoke(main, args)
    assert refused.exit_code == 2 and "name no imported trace ('deadbeef')" in refused.output
    assert len(list((tmp_path / "out").iterdir())) == 1  # nothing written
