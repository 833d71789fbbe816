"""The newcomer's walk, as the docs tell it: a pydantic-ai support agent whose refund tool fails, its spans written
by ACE's exporter (Logfire configured with `span_file_processor`), one run judged with `ace.reward` /
`ace.feedback`, imported with `collection import` (format sniffed), learned from with `e2e --traces` on scripted
models, and shown by `ace-eval report RUN`."""

from __future__ import annotations

import functools
from pathlib import Path

import pytest
from _e2e_support import scripted_injections
from _otel_agent import logfire_to_file, support_agent
from click.testing import CliRunner, Result

from ace_eval.cli import main
from ace_eval.e2e import runner

PROMPTS = ("Refund order A100", "Refund order A999", "Refund order B7")


def walk(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Result]:
    """Runs the walk in `tmp_path` (the working folder); returns the run folder and `ace-eval report`'s result."""
    monkeypatch.chdir(tmp_path)
    for var in ("ACE_MODEL", "ACE_E2E_OUTPUT_DIR", "LOGFIRE_TOKEN"):
        monkeypatch.delenv(var, raising=False)
    spans = tmp_path / "spans.jsonl"
    instance = logfire_to_file(spans)
    agent = support_agent()
    instance.instrument_pydantic_ai(agent)
    with instance.span("ticket", **{"ace.reward": 1, "ace.feedback": "Refunded at once."}):
        agent.run_sync(PROMPTS[0])
    for prompt in PROMPTS[1:]:
        with pytest.raises(ValueError, match="no order"):
            agent.run_sync(prompt)
    instance.force_flush()

    cli = CliRunner()
    imported = cli.invoke(main, ["collection", "import", str(spans), "--out", "collection"])
    assert imported.exit_code == 0 and "Imported 3 traces" in imported.output, imported.output
    monkeypatch.setattr(
        "ace_eval.commands.e2e.run_e2e", functools.partial(runner.run_e2e, injections=scripted_injections())
    )
    learned = cli.invoke(main, ["e2e", "--traces", "collection", "--output-dir", "out"])
    assert learned.exit_code == 0, learned.output
    (run,) = (tmp_path / "out").iterdir()
    return run, cli.invoke(main, ["report", str(run)])
