"""`export_markdown` / `ExportMarkdownStep`: the exact layout of a small skillbook, and escaping."""

from __future__ import annotations

import asyncio
from pathlib import Path

from _ace_scripts import make_trace

from ace import InsightSource, Skillbook
from ace.pipeline.context import StepContext
from ace.steps.export_markdown import ExportMarkdownStep, escape_markdown, export_markdown

SRC = InsightSource(trace_uid="demo:t1", source_system="demo", trace_id="t1", epoch=0)


def small_book() -> Skillbook:
    book = Skillbook()
    cabin = book.add_skill(
        "context",
        "In tau-airline's update_reservation_flights, cabin class applies to *all* legs.",
        ["airline", "cabin_class"],
        "Tell the user upgrades are all-or-nothing.",
        insight_source=SRC,
    )
    book.tag_skill(cabin.id, 1, insight_source=SRC)
    book.tag_skill(cabin.id, 0, insight_source=SRC)
    book.add_skill("harness", "The runner retries 429s with a 60 s backoff.", ["tau_bench", "rate_limit"])
    old = book.add_skill("context", "Old advice | with a pipe.", ["airline"], "Do <b>this</b>.")
    book.remove_skill(old.id, "merged into context-00001: same issue")
    return book


EXPECTED = """\
# Skillbook

**2 active skills** (1 context, 1 harness) · 1 inactive · 6 occurrences · tags: 1 helpful, 0 harmful, 1 neutral

## Context (1)

### `context-00001`

- **Keywords:** `airline`, `cabin_class`
- **Issue:** In tau-airline's update\\_reservation\\_flights, cabin class applies to \\*all\\* legs.
- **Insight:** Tell the user upgrades are all-or-nothing.
- **Taught by:** demo:t1 (epoch 0)
- **Counters:** used 2 · helpful 1 · harmful 0 · neutral 1 · harmful traces 0 · occurrences 3

## Harness (1)

### `harness-00001`

- **Keywords:** `tau_bench`, `rate_limit`
- **Issue:** The runner retries 429s with a 60 s backoff.
- **Counters:** used 0 · helpful 0 · harmful 0 · neutral 0 · harmful traces 0 · occurrences 1

## Inactive skills (1)

### `context-00002` (context, removed)

- **Removed:** merged into context-00001: same issue
- **Keywords:** `airline`
- **Issue:** Old advice \\| with a pipe.
- **Insight:** Do &lt;b&gt;this&lt;/b&gt;.
- **Counters:** used 0 · helpful 0 · harmful 0 · neutral 0 · harmful traces 0 · occurrences 2
"""


def test_export_layout() -> None:
    assert export_markdown(small_book()) == EXPECTED


def test_export_of_an_empty_skillbook_says_so() -> None:
    text = export_markdown(Skillbook(), title="Run 7")
    assert text.startswith("# Run 7\n\n**0 active skills** (0 context, 0 harness) · 0 inactive")
    assert text.count("_No active skills._") == 2
    assert "Inactive" not in text


def test_escape_keeps_text_literal_and_on_one_line() -> None:
    assert escape_markdown("a_b *c* `d` [e](f) | ~g~ \\ h") == "a\\_b \\*c\\* \\`d\\` \\[e\\](f) \\| \\~g\\~ \\\\ h"
    assert (
        escape_markdown("# not a heading\n- not a list\n\n  trailing  ")
        == "# not a heading<br>- not a list<br>trailing"
    )
    assert escape_markdown("x < y && z > w") == "x &lt; y &amp;&amp; z &gt; w"
    assert escape_markdown("plain text, no markup.") == "plain text, no markup."


def test_export_step_writes_the_file(tmp_path: Path) -> None:
    book = small_book()
    path = tmp_path / "out" / "skillbook.md"
    ctx = StepContext(trace=make_trace(1, "cancel"), skillbook=book)
    assert asyncio.run(ExportMarkdownStep(path)(ctx)) is ctx
    assert path.read_text(encoding="utf-8") == EXPECTED
