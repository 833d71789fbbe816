"""The page: Jinja2 templates (package data in `templates/`) filled with the runs' data, written atomically.

Data the browser renders lazily is embedded as JSON in `<script type="application/json">` blocks: the runs' tables
up front, each sample's details and each trace in chunks of `CHUNK`, parsed only when a sample is opened. CSS, JS
and the SVG chart are inline; a Content-Security-Policy forbids every request, so the page opens from disk offline.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import jinja2

import ace_eval
from ace.core.insight_source import utc_now
from ace.core.storage import atomic_write
from ace_eval.report.learning import Chart, skill_chart
from ace_eval.report.payload import run_payload, sample_details
from ace_eval.report.read import ReportRun
from ace_eval.report.scores import compare_runs

__all__ = ["CHUNK", "environment", "render_report", "write_report"]

CHUNK = 100
"""Samples (and traces) per lazily parsed JSON block."""
_SHARED_MIN = 200
"""Message texts at least this long that several traces hold are kept once."""


@dataclass(frozen=True, kw_only=True)
class _RunPage:
    """One run's part of the page."""

    payload: dict[str, Any]
    chart: Chart
    detail_chunks: list[list[dict[str, Any]]]
    trace_chunks: list[dict[str, dict[str, Any]]]
    shared: list[str]
    """Message texts several traces hold (a system prompt), kept once; a message names one as `{"shared": i}`."""


def environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("ace_eval.report", "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.policies["json.dumps_kwargs"] = {"ensure_ascii": False, "separators": (",", ":")}
    return env


def _chunks(items: Sequence[Any]) -> list[list[Any]]:
    return [list(items[i : i + CHUNK]) for i in range(0, len(items), CHUNK)]


def _share_texts(traces: dict[str, dict[str, Any]]) -> tuple[dict[str, dict[str, Any]], list[str]]:
    """The traces with each long message text that more than one of them holds replaced by `{"shared": i}`, and
    those texts (a benchmark's system prompt is in every trace: kept once, the page stays small)."""
    counts = Counter(
        m["content"]
        for t in traces.values()
        for m in t.get("messages") or []
        if isinstance(m.get("content"), str) and len(m["content"]) >= _SHARED_MIN
    )
    index = {text: i for i, text in enumerate(text for text, n in counts.items() if n > 1)}
    if not index:
        return traces, []
    out: dict[str, dict[str, Any]] = {}
    for uid, trace in traces.items():
        messages = [
            {**m, "content": {"shared": index[m["content"]]}}
            if isinstance(m.get("content"), str) and m["content"] in index
            else m
            for m in trace.get("messages") or []
        ]
        out[uid] = {**trace, "messages": messages}
    return out, list(index)


def _run_page(run: ReportRun) -> _RunPage:
    payload = run_payload(run)
    traces, shared = _share_texts(run.traces)
    uids = list(traces)
    payload["trace_chunk"] = {uid: i // CHUNK for i, uid in enumerate(uids)}
    return _RunPage(
        payload=payload,
        chart=skill_chart(run.view.samples),
        detail_chunks=_chunks(sample_details(run)),
        trace_chunks=[{uid: traces[uid] for uid in chunk} for chunk in _chunks(uids)],
        shared=shared,
    )


def render_report(runs: Sequence[ReportRun]) -> str:
    """The HTML page about `runs` (one or more run folders; two or more add the comparison)."""
    pages = [_run_page(run) for run in runs]
    comparison = compare_runs([p.payload for p in pages]) if len(pages) > 1 else None
    template = environment().get_template("report.html.j2")
    return template.render(
        pages=pages,
        comparison=comparison,
        generated_at=utc_now(),
        version=ace_eval.__version__,
        chunk=CHUNK,
    )


def write_report(runs: Sequence[ReportRun], path: Path) -> int:
    """Render the page and replace `path` atomically; returns its size in bytes."""
    data = render_report(runs).encode("utf-8")

    def write(f: IO[bytes]) -> None:
        f.write(data)

    atomic_write(path, write)
    return len(data)
