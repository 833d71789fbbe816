"""A small good skillbook and a run folder around it, for tests of the commands that read run folders."""

from __future__ import annotations

import json
from pathlib import Path

from ace import InsightSource, Skillbook
from ace.embeddings.test import TestEmbedder
from ace.retrieval.index import search_index

SOURCE = InsightSource(trace_uid="demo:1", source_system="demo", trace_id="1", epoch=0)


def good_book() -> Skillbook:
    book = Skillbook()
    book.add_skill(
        "context", "Cancels without confirmation.", ["airline"], "Ask for a yes first.", insight_source=SOURCE
    )
    book.add_skill("harness", "The runner retries 429s slowly.", ["rate_limit"], insight_source=SOURCE)
    return book


def write_run(
    folder: Path, book: Skillbook, *, embed: bool = True, spans: bool = True, status: str = "completed"
) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    if embed:
        search_index(book, TestEmbedder()).sync(book)
    book.save_to_file(folder / "skillbook.json")
    (folder / "run.json").write_text(
        json.dumps({"status": status, "config": {}, "training": {"samples": 2, "errors": 0}}), encoding="utf-8"
    )
    if spans:
        rows = [
            {"name": "sm.session", "span_id": "s1", "parent_span_id": None, "attributes": {}},
            {"name": "execute_tool add_skill", "span_id": "e1", "parent_span_id": "s1", "attributes": {}},
            {"name": "add_skill", "span_id": "a1", "parent_span_id": "e1", "attributes": {"ace.tool": "add_skill"}},
        ]
        (folder / "spans.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return folder
