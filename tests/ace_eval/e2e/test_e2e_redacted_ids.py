"""Audit 13 #7: a secret used as a trace id or as a dict key never reaches the run folder, and the id stays one id."""

from __future__ import annotations

import json
from pathlib import Path

from _e2e_support import import_trajectories, scripted_injections
from click.testing import CliRunner

from ace.redaction import id_placeholder
from ace_eval.cli import main
from ace_eval.collection import read_collection, write_collection
from ace_eval.e2e import runner
from ace_eval.e2e.config import E2ESettings

EMAIL = "jane.doe@example.com"
KEY = "sk-proj-" + "Zx9Yw8Vu7Ts6Rq5Po4Nm3Lk2Ji1Hg0F"


def test_an_email_trace_id_and_a_secret_key_are_redacted_everywhere(airline_data: Path, tmp_path: Path) -> None:
    source = import_trajectories(airline_data, tmp_path / "tau")
    manifest, traces = read_collection(source)
    first = traces[0].model_dump(mode="json")
    first.update(trace_uid="", trace_id=EMAIL, metadata={**first["metadata"], KEY: 1})
    chosen = [type(traces[0]).model_validate(first), *traces[1:3]]
    write_collection(tmp_path / "c", chosen, source_system=manifest.source_system, benchmark=manifest.benchmark)
    settings = E2ESettings(traces=tmp_path / "c", no_benchmark=True, limit=3, output_dir=tmp_path / "out")
    done = runner.run_e2e(settings, injections=scripted_injections())
    folder = done.folder.path
    leaked = [
        p.relative_to(folder)
        for p in folder.rglob("*")
        if p.is_file() and any(s.encode() in p.read_bytes() for s in (EMAIL, KEY))
    ]
    assert leaked == []
    uid = f"{manifest.source_system}:{id_placeholder('email', EMAIL)}"
    samples = [json.loads(line) for line in (folder / "samples.jsonl").read_text(encoding="utf-8").splitlines()]
    assert uid in {s["trace_uid"] for s in samples}  # one id, the same in the journal ...
    _, kept = read_collection(folder / "collection")
    assert kept[0].trace_uid == uid and id_placeholder("openai_key", KEY) in kept[0].metadata  # ... and collection
    cli = CliRunner()
    assert cli.invoke(main, ["verify", str(folder)]).exit_code == 0
    scan = cli.invoke(main, ["scan", str(tmp_path / "c")])  # the source collection still holds both
    assert scan.exit_code == 1 and "$.trace_id  email" in scan.output and "openai_key" in scan.output
    assert EMAIL not in scan.output and KEY not in scan.output
