"""Acceptance (issue 24): every built-in kind, planted in over 40 places of a collection, reaches no artefact of a
full replay with content recording on, and `scan` finds each place in the source collection.

The scripted reflector reads every message in full and quotes it; the scripted skill manager copies the reflection
into a skill. One trace's id is built from an e-mail (`user-x.y@mail.io-trial-0`), as ids often are.
"""

from __future__ import annotations

import functools
import json
import re
from pathlib import Path
from typing import Any

import pytest
from _copying_roles import copying_models
from _planted_secrets import PLANTS, Plant
from click.testing import CliRunner

from ace.embeddings.test import TestEmbedder
from ace_eval.cli import main
from ace_eval.collection import Trace, write_collection
from ace_eval.e2e import runner
from ace_eval.e2e.runner import RunInjections

EMAIL_ID = "user-x.y@mail.io-trial-0"
TRACES = 6


def _message(plant: Plant, n: int) -> dict[str, Any]:
    """The plant in a user's or an assistant's text, a tool call's arguments or a tool's output (after its call)."""
    text = f"turn {n}: {plant.text} (see above)"
    if n % 4 == 0:
        return {"role": "user", "content": text}
    if n % 4 == 1:
        return {"role": "assistant", "content": text}
    if n % 4 == 2:
        call = {"id": f"c{n}", "type": "function", "function": {"name": "lookup", "arguments": json.dumps({"q": text})}}
        return {"role": "assistant", "content": "", "tool_calls": [call]}
    return {"role": "tool", "tool_call_id": f"c{n - 1}", "content": text}


def planted_collection(directory: Path) -> tuple[Path, set[tuple[int, str, str]]]:
    """The plants spread over `TRACES` traces (one in each question, the others one per message), and every place:
    (line of traces.jsonl, JSON path, kind)."""
    traces: list[Trace] = []
    places: set[tuple[int, str, str]] = set()
    for t in range(TRACES):
        mine = PLANTS[t::TRACES]
        messages: list[dict[str, Any]] = []
        for plant in mine[1:]:
            n = len(messages)
            messages.append(_message(plant, n))
            inner = ".function.arguments" if "tool_calls" in messages[-1] else ""
            path = f"$.messages[{n}].tool_calls[0]{inner}" if inner else f"$.messages[{n}].content"
            places.add((t + 1, path, plant.kind))
        places.add((t + 1, "$.question", mine[0].kind))
        trace_id = EMAIL_ID if t == 0 else f"task-{t}-trial-0"
        traces.append(
            Trace(source_system="support-bot", trace_id=trace_id, question=f"Help: {mine[0].text}", messages=messages)
        )
    places.add((1, "$.trace_id", "email"))
    write_collection(directory, traces, source_system="support-bot")
    return directory, places


def _leaks(folder: Path, output: str) -> dict[str, list[str]]:
    """Planted secret -> the files (and the console) holding it, raw or JSON-escaped."""
    found: dict[str, list[str]] = {}
    sources = {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}
    sources["(console)"] = output.encode()
    for plant in PLANTS:
        forms = {plant.secret.encode(), json.dumps(plant.secret)[1:-1].encode()}
        for name, data in sources.items():
            if any(form in data for form in forms):
                found.setdefault(f"{plant.kind} {plant.secret[:6]}", []).append(name)
    return found


def test_planted_secrets_of_every_kind_reach_no_artefact_and_scan_finds_each(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("LOGFIRE_TOKEN", raising=False)
    for var in ("ACE_MODEL", "ACE_REFLECTOR_MODEL", "ACE_SKILL_MANAGER_MODEL", "ACE_EMBEDDING_MODEL"):
        monkeypatch.delenv(var, raising=False)
    collection, places = planted_collection(tmp_path / "collection")
    assert len({kind for _, _, kind in places}) >= 14 and len(places) >= 40

    scan = CliRunner().invoke(main, ["scan", str(collection)])
    assert scan.exit_code == 1, scan.output
    listed = (re.match(r".*traces\.jsonl:(\d+) (\S+)  (\S+)  ", line) for line in scan.stdout.splitlines())
    found = {(int(m[1]), m[2], m[3]) for m in listed if m}
    assert places - found == set()

    injections = RunInjections(
        models=copying_models(
            quote_chars=3000, tail_chars=600, issue="Echoed user data", insight="Do not repeat", keywords=["support"]
        ),
        embedder=TestEmbedder(),
        show_progress=False,
    )
    monkeypatch.setattr("ace_eval.commands.e2e.run_e2e", functools.partial(runner.run_e2e, injections=injections))
    args = ["e2e", "--traces", str(collection), "--no-benchmark", "--reflector-type", "rr", "--logfire-content"]
    result = CliRunner().invoke(main, [*args, "--output-dir", str(tmp_path / "out")])
    assert result.exit_code == 0, result.output
    [line] = [line for line in result.stdout.splitlines() if line.startswith("Run folder: ")]
    folder = Path(line.removeprefix("Run folder: "))

    assert _leaks(folder, result.output) == {}
    spans = (folder / "spans.jsonl").read_text(encoding="utf-8")
    assert "[REDACTED:ssn" in spans and "[REDACTED:aws_secret_key" in spans  # content was recorded, redacted
    assert CliRunner().invoke(main, ["verify", str(folder)]).exit_code == 0
    assert CliRunner().invoke(main, ["scan", str(folder)]).exit_code == 0
