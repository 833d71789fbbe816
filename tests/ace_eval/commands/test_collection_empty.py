"""`collection import` of a source with no trace and `collection repair` that would drop every trace are refused
(exit 2, nothing written) unless `--allow-empty`."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from click.testing import CliRunner, Result

from ace_eval.cli import main
from ace_eval.collection import read_collection

DEMO = Path(__file__).resolve().parents[3] / "examples" / "demo-collection"


def collection(*args: object) -> Result:
    return CliRunner().invoke(main, ["collection", *[str(a) for a in args]])


def test_an_import_of_an_empty_source_is_refused_unless_allowed(tmp_path: Path) -> None:
    for fmt, name, text in [("openai-jsonl", "chats.jsonl", "\n"), ("tau-bench", "runs.json", "[]")]:
        src = tmp_path / name
        src.write_text(text, encoding="utf-8")
        refused = collection("import", src, "--format", fmt, "--out", tmp_path / f"out-{fmt}")
        assert refused.exit_code == 2 and f"{src}: holds no trace" in refused.output, refused.output
        assert "--allow-empty" in refused.output and not (tmp_path / f"out-{fmt}").exists()
        allowed = collection("import", src, "--format", fmt, "--out", tmp_path / f"out-{fmt}", "--allow-empty")
        assert allowed.exit_code == 0, allowed.output
        assert read_collection(tmp_path / f"out-{fmt}")[0].counts.traces == 0


def test_a_repair_that_would_drop_every_trace_is_refused_unless_allowed(tmp_path: Path) -> None:
    folder = tmp_path / "c"
    shutil.copytree(DEMO, folder)
    (folder / "traces.jsonl").write_bytes(b'{"trace_uid": "cut off mid-wr')  # only a partial line is left
    before = {p.name: p.read_bytes() for p in folder.iterdir()}
    refused = collection("repair", folder)
    assert refused.exit_code == 2, refused.output
    assert "traces.jsonl: holds no complete trace, while the manifest counts 10" in refused.output
    assert {p.name: p.read_bytes() for p in folder.iterdir()} == before
    allowed = collection("repair", folder, "--allow-empty")
    assert allowed.exit_code == 0 and "traces 0" in allowed.output, allowed.output
    assert json.loads((folder / "manifest.json").read_text(encoding="utf-8"))["counts"]["traces"] == 0
    assert (folder / "traces.jsonl").read_bytes() == b""
