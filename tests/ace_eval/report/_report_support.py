"""Run folders for the report tests: scripted runs over the demo collection and over planted secrets."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from _e2e_support import scripted_injections

from ace_eval.collection import Trace, write_collection
from ace_eval.e2e import runner
from ace_eval.e2e.config import E2ESettings

DEMO = Path(__file__).resolve().parents[3] / "examples" / "demo-collection"
EMAIL = "olivia.martin.1987@example-mail.com"
OPENAI = "sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4zAb7cDe0fGh3iJk6lMn9oPq2rSt5uVw8xYz1aBc"
CARD = "4539 1488 0343 6467"


def scripted_run(out: Path, *, traces: Path = DEMO, epochs: int = 1, redact: bool = True) -> Path:
    """A run folder written by `ace-eval e2e` on the scripted models (no network)."""
    settings = E2ESettings(
        traces=traces, no_benchmark=True, output_dir=out, epochs=epochs, redact=redact, max_workers=1
    )
    return runner.run_e2e(settings, injections=scripted_injections()).folder.path


def planted_collection(directory: Path) -> Path:
    """Two traces with an e-mail, an API key and a card number in the question, user text and tool output."""
    traces = [
        Trace(
            source_system="support-bot",
            trace_id="s1",
            question=f"My key {OPENAI} stopped working, reach me at {EMAIL}",
            messages=[
                {"role": "user", "content": f"Card {CARD}, mail {EMAIL}"},
                {
                    "role": "assistant",
                    "content": "",
                    "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "lookup", "arguments": "{}"}}],
                },
                {"role": "tool", "tool_call_id": "c1", "content": f"account of {EMAIL}: active"},
            ],
            reward=0.0,
        ),
        Trace(
            source_system="support-bot",
            trace_id="s2",
            question="Refund please",
            messages=[{"role": "user", "content": f"to card {CARD}"}, {"role": "assistant", "content": "Done."}],
            reward=1.0,
        ),
    ]
    write_collection(directory, traces, source_system="support-bot")
    return directory


def page_json(html: str, cls: str) -> list[Any]:
    """Every JSON block of one class in the page (`run-data`, `detail-chunk`, `trace-chunk`), parsed."""
    blocks = re.findall(rf'<script type="application/json" class="{cls}"[^>]*>(.*?)</script>', html, re.S)
    return [json.loads(b) for b in blocks]
