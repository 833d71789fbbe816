"""The design's smoke test, as written, on the 120 real tau-bench trajectories with scripted models; then verify.

The models are swapped at the runner's injection point (`RunInjections.models`), not through a CLI flag: the
command line is exactly the design's, model strings included.
"""

from __future__ import annotations

import functools
import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from _e2e_support import ScriptedReflector, import_trajectories, scripted_injections
from click.testing import CliRunner, Result

from ace import Skillbook
from ace_eval.cli import main
from ace_eval.e2e import runner

HAIKU = "bedrock/us.anthropic.claude-haiku-4-5-20251001-v1:0"


def smoke_args(traces: Path, workers: int) -> list[str]:
    """`uv run ace-eval e2e ...` from the design word for word (the collection path and workers aside): the agent's
    flags (`--agent-model`, `--user-model`, `--num-trials`, `--max-num-steps`) have no effect with `--traces` and
    `--no-benchmark`, so the run names them in one note and goes on."""
    return [
        "e2e",
        "--benchmark",
        "tau-bench-airline",
        "--traces",
        str(traces),
        "--agent-model",
        HAIKU,
        "--reflector-model",
        HAIKU,
        "--skill-manager-model",
        HAIKU,
        "--user-model",
        "bedrock/openai.gpt-oss-120b-1:0",
        "--reflector-type",
        "rr",
        "--num-trials",
        "1",
        "--max-num-steps",
        "50",
        "--max-workers",
        str(workers),
        "--no-benchmark",
        "--logfire",
        "--verbose",
    ]


IGNORED_NOTE = (
    "note: flags with no effect on this run, ignored (--agent-model, --user-model, --num-trials, --max-num-steps: "
    "no agent runs with --traces (and no --benchmark))"
)


@pytest.fixture(scope="module")
def tau_collection(airline_data: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return import_trajectories(airline_data, tmp_path_factory.mktemp("tau") / "collection")


def test_the_designs_literal_command_runs_up_to_its_credentials_check(
    tau_collection: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With no scripted models and no AWS credentials, the design's command goes as far as the preflight, which
    asks for the credentials: the agent's flags are a note, not a refusal."""
    monkeypatch.chdir(tmp_path)
    for var in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_PROFILE", "AWS_SESSION_TOKEN", "ACE_MODEL"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    result = CliRunner().invoke(main, smoke_args(tau_collection, 1))
    assert result.stderr.count("note: flags with no effect") == 1 and IGNORED_NOTE in result.stderr
    assert "drop them" not in result.output
    assert result.exit_code == 2 and "AWS" in result.stderr, result.output  # the credentials check, not the flags
    assert not (tmp_path / "results").exists()  # refused before a run folder is written


def swap_models(monkeypatch: pytest.MonkeyPatch, reflector: ScriptedReflector, **kwargs: Any) -> None:
    """`ace-eval e2e` runs with scripted models (the runner's injection point)."""
    injections = scripted_injections(reflector, **kwargs)
    monkeypatch.setattr("ace_eval.commands.e2e.run_e2e", functools.partial(runner.run_e2e, injections=injections))


@pytest.fixture
def scripted(monkeypatch: pytest.MonkeyPatch) -> ScriptedReflector:
    """Scripted models and the hashing test embedder behind `ace-eval e2e`; no Logfire token."""
    reflector = ScriptedReflector()
    swap_models(monkeypatch, reflector)
    monkeypatch.delenv("LOGFIRE_TOKEN", raising=False)
    for var in ("ACE_MODEL", "ACE_REFLECTOR_MODEL", "ACE_EMBEDDING_MODEL", "ACE_E2E_OUTPUT_DIR"):
        monkeypatch.delenv(var, raising=False)
    return reflector


def run_folder_of(result: Result) -> Path:
    [line] = [line for line in result.stdout.splitlines() if line.startswith("Run folder: ")]
    return Path(line.removeprefix("Run folder: "))


def test_smoke_command_runs_end_to_end_and_verifies(
    tau_collection: Path, scripted: ScriptedReflector, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # the smoke test writes to the default results/e2e
    cli = CliRunner()
    skillbooks: dict[int, dict[str, Any]] = {}
    for workers in (1, 4):
        # ordered sessions with 4 workers, so the two runs must learn the same (concurrent: tests/test_training.py)
        result = cli.invoke(main, [*smoke_args(tau_collection, workers), "--sm-sessions", "ordered"])
        assert result.exit_code == 0, result.output
        assert result.stderr.count("note: flags with no effect") == 1 and IGNORED_NOTE in result.stderr
        folder = run_folder_of(result)
        assert folder.parent == Path("results/e2e") and folder.name.startswith("run_") and len(folder.name) == 16
        assert result.stdout.rstrip().endswith(f"Skillbook markdown: {folder / 'skillbook.md'}")
        verbose = [line for line in result.stderr.splitlines() if line.startswith("[")]
        assert len(verbose) == 120 and verbose[-1].startswith("[120/120] tau-bench-airline:task-")

        verify = cli.invoke(main, ["verify", str(folder)])
        assert verify.exit_code == 0, verify.output
        assert verify.output.count("PASS") == 10 and "FAIL" not in verify.output  # incl. no secret in the folder

        record = json.loads((folder / "run.json").read_text(encoding="utf-8"))
        assert record["status"] == "completed" and record["run_id"] == folder.name
        assert record["models"]["reflector"] == HAIKU and record["models"]["skill_manager"] == HAIKU
        assert record["resolved_models"]["reflector"] == "function:scripted-reflector"
        assert record["config"]["reflector_type"] == "rr" and record["config"]["max_workers"] == workers
        assert record["config"]["sources"]["reflector_model"] == "flag"
        assert record["training"] == {**record["training"], "samples": 120, "errors": 0, "resumed_samples": 0}
        assert len(record["samples"]) == 120 and record["errors"] == []
        assert record["usage"]["reflector"]["requests"] == 240  # find_errors, then the reflection
        assert record["usage"]["skill_manager"]["requests"] == 360
        assert record["benchmark"] is None  # --no-benchmark
        assert {"ace", "ace_eval", "python"} <= set(record["versions"])
        assert record["timings"]["train"] > 0 and record["collection"]["traces_used"] == 120
        # the run keeps the collection redacted: the tau-bench users' e-mails are placeholders, the ids are kept
        kept = (folder / "collection" / "traces.jsonl").read_text(encoding="utf-8").splitlines()
        source = (tau_collection / "traces.jsonl").read_text(encoding="utf-8").splitlines()
        assert [json.loads(k)["trace_uid"] for k in kept] == [json.loads(s)["trace_uid"] for s in source]
        assert "[REDACTED:email#1]" in "".join(kept) and record["redaction"]["collection"]["email"] > 0
        assert set(record["redaction"]["collection"]) == {"email"}

        spans = [json.loads(line) for line in (folder / "spans.jsonl").read_text(encoding="utf-8").splitlines()]
        names = [s["name"] for s in spans]
        assert names.count("sm.session") == 120 and names.count("rr.session") == 120
        assert any(n.startswith("chat ") for n in names)  # --logfire instruments pydantic-ai, locally only
        book = Skillbook.load_from_file(folder / "skillbook.json")
        assert book.embedding_model == "test-hashing" and all(s.embedding is not None for s in book.skills())
        skillbooks[workers] = {s.id: (s.issue, s.keywords, len(s.occurrences)) for s in book.skills()}
    assert sum(scripted.calls.values()) == 240  # every trace reflected once per run, nothing twice
    # commits are ordered, so 4 workers learn exactly what 1 worker learns
    assert skillbooks[1] == skillbooks[4] and len(skillbooks[1]) > 20


def test_smoke_command_with_concurrent_sessions_loses_and_repeats_nothing(
    tau_collection: Path, scripted: ScriptedReflector, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The smoke command word for word with 4 workers: the default concurrent skill-manager sessions."""
    monkeypatch.chdir(tmp_path)
    cli = CliRunner()
    result = cli.invoke(main, smoke_args(tau_collection, 4))
    assert result.exit_code == 0, result.output
    folder = run_folder_of(result)
    verify = cli.invoke(main, ["verify", str(folder)])
    assert verify.exit_code == 0 and verify.output.count("PASS") == 10, verify.output
    record = json.loads((folder / "run.json").read_text(encoding="utf-8"))
    assert record["config"]["sm_sessions"] == "concurrent" and record["errors"] == []
    assert record["usage"]["skill_manager"]["requests"] >= 360  # 3 per session, plus one per conflict
    lines = [json.loads(line) for line in (folder / "samples.jsonl").read_text(encoding="utf-8").splitlines()]
    assert sorted(line["index"] for line in lines) == list(range(120))
    collisions = [r["reason"] for line in lines for r in line["refusals"] if "another session" in r["reason"]]
    assert collisions and all("[4 samples ran at once (--max-workers;" in r for r in collisions)
    book = Skillbook.load_from_file(folder / "skillbook.json")
    # every sample's edits are in the skillbook once, attributed to it, and no widening overwrote another
    logged = Counter(op.trace_uid for op in book.operations)
    assert logged == Counter({line["trace_uid"]: len(line["operations"]) for line in lines if line["operations"]})
    widenings = [(s, o) for s in book.skills() for o in s.occurrences if o.operation_type == "UPDATE"]
    assert len(widenings) > 10
    for skill, occurrence in widenings:
        assert f"Seen again in {occurrence.trace_id}." in skill.issue, (skill.id, occurrence.trace_id)


def test_inspect_shows_sessions_of_the_smoke_run(
    tau_collection: Path, scripted: ScriptedReflector, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    swap_models(monkeypatch, scripted, embedder=None)  # the embedding model 'local': the offline MiniLM
    cli = CliRunner()
    result = cli.invoke(main, [*smoke_args(tau_collection, 2), "--limit", "6", "--sm-sessions", "ordered"])
    assert result.exit_code == 0, result.output
    folder = run_folder_of(result)
    assert Skillbook.load_from_file(folder / "skillbook.json").embedding_model == "all-MiniLM-L6-v2-onnx-int8"
    assert cli.invoke(main, ["verify", str(folder)]).exit_code == 0

    text = cli.invoke(main, ["inspect", str(folder), "--trace", "tau-bench-airline:task-1-trial-0"])
    assert text.exit_code == 0, text.output
    lines = [line.strip() for line in text.output.splitlines()]
    assert lines[0] == f"Run {folder.name} (completed): 1 sample, 0 errors"
    assert "[1] tau-bench-airline:task-1-trial-0  epoch 0  ok" in " ".join(lines)
    assert any(line.startswith("reflection: Check the policy first (task") for line in lines)
    assert "find_errors()" in lines  # the recursive reflector's tool call
    assert "search_skills(query=…, top_k=5) -> ['context-00001']" in lines
    assert "update_skill(skill_id='context-00001', issue=…, keywords=[3]) -> ok" in lines
    assert "skills changed: context-00001" in lines

    payload = json.loads(cli.invoke(main, ["inspect", str(folder), "--json"]).output)
    assert [s["trace_uid"] for s in payload["samples"]] == [f"tau-bench-airline:task-{i}-trial-0" for i in range(6)]
    first = payload["samples"][0]
    assert first["reflection"]["key_insight"].startswith("Check the policy first")
    assert [s["kind"] for s in first["sessions"]] == ["rr", "sm"]
    assert first["sessions"][1]["tool_calls"][-1]["signature"].startswith("add_skill(section='context', issue=…")

    missing = cli.invoke(main, ["inspect", str(folder), "--trace", "tau-bench-airline:task-1-trial-9"])
    assert missing.exit_code == 2 and "Did you mean tau-bench-airline:task-1-trial-0" in missing.output
