"""The newcomer's walk end to end (`tests/_newcomer_walk.py`): the failing tool call, its error and each run's
judgement reach the report; the page names the question, keeps outcome and processing state apart, says no
agent ran, and is written into the run folder."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from _newcomer_walk import PROMPTS, walk
from _report_support import page_json

from ace_eval.report.payload import SAMPLE_COLUMNS


def test_the_failing_tool_call_and_its_error_reach_the_report(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    run, report = walk(tmp_path, monkeypatch)
    assert report.exit_code == 0, report.output
    page = run / "report.html"
    assert report.output.splitlines()[-1] == f"Report: {page.resolve()}"
    assert not (tmp_path / "report.html").exists()
    html = page.read_text(encoding="utf-8")

    [data] = page_json(html, "run-data")
    rows = [dict(zip(SAMPLE_COLUMNS, row, strict=True)) for row in data["samples"]]
    assert [r["question"] for r in rows] == list(PROMPTS)  # the question, not the hex trace id
    assert [(r["state"], r["reward"]) for r in rows] == [("ok", 1.0), ("ok", None), ("ok", None)]
    assert rows[0]["feedback"] == "Refunded at once."
    assert rows[1]["feedback"] == (
        "The agent run ended in an error: ValueError: no order A999. "
        "Tool calls failed: issue_refund (ValueError: no order A999)."
    )
    assert data["models"]["agent"] == data["models"]["user"] == "none (a replay of --traces: no agent ran)"

    traces = {uid: t for chunk in page_json(html, "trace-chunk") for uid, t in chunk.items()}
    failed = traces[rows[1]["trace_uid"]]
    assert failed["feedback"] == rows[1]["feedback"]
    call, result = failed["messages"][-2:]
    assert call["tool_calls"][0]["function"] == {"name": "issue_refund", "arguments": '{"order_id": "A999"}'}
    assert result == {"role": "tool", "tool_call_id": "call-A999", "content": "error: ValueError: no order A999"}

    details = [d for chunk in page_json(html, "detail-chunk") for d in chunk]
    statuses = {s["status"] for d in details for s in d["sessions"]}
    assert statuses and statuses <= {"ok", "error"} and "UNSET" not in json.dumps(details)
