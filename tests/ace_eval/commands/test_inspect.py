"""`ace-eval inspect`: sessions rebuilt from spans.jsonl + samples.jsonl, atomic signatures, filters, no spans."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from _e2e_support import scripted_injections, scripted_models
from _run_support import good_book, write_run
from click.testing import CliRunner
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from ace.embeddings.test import TestEmbedder
from ace.skill_manager.manager import SMSettings
from ace_eval.cli import main
from ace_eval.e2e import runner
from ace_eval.e2e.config import E2ESettings
from ace_eval.e2e.runner import RunInjections
from ace_eval.run import read_run
from ace_eval.run.sessions import signature

DEMO = Path(__file__).resolve().parents[3] / "examples" / "demo-collection"


@pytest.fixture(scope="module")
def demo_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("runs")
    settings = E2ESettings(traces=DEMO, no_benchmark=True, output_dir=out, max_workers=2, sm_sessions="ordered")
    return runner.run_e2e(settings, injections=scripted_injections()).folder.path


@pytest.mark.parametrize(
    ("name", "attributes", "expected"),
    [
        (
            "add_skill",
            {"ace.section": "context", "ace.keywords_count": 2, "ace.skill_id": "context-00004", "ace.result": "ok"},
            "add_skill(section='context', issue=…, keywords=[2], insight=…) -> context-00004",
        ),
        (
            "update_skill",
            {"ace.skill_id": "context-00001", "ace.insight_changed": False, "ace.result": "refused"},
            "update_skill(skill_id='context-00001', issue=…) -> refused",
        ),
        (
            "add_skill",  # content recorded (the user opted in)
            {
                "ace.section": "harness",
                "ace.issue": "Slow retries.",
                "ace.keywords": ["tau2"],
                "ace.result": "ok",
                "ace.skill_id": "harness-00001",
            },
            "add_skill(section='harness', issue='Slow retries.', keywords=['tau2'], insight=…) -> harness-00001",
        ),
        (
            "tag_skill",
            {"ace.skill_id": "c-1", "ace.delta": -1, "ace.result": "ok"},
            "tag_skill(skill_id='c-1', delta=-1) -> ok",
        ),
        ("list_messages", {"ace.tool": "list_messages", "ace.start": 0, "ace.end": 9}, "list_messages(start=0, end=9)"),
    ],
)
def test_signature_from_span_attributes(name: str, attributes: dict[str, object], expected: str) -> None:
    assert signature(name, attributes) == expected


def test_text_view_of_every_session(demo_run: Path) -> None:
    result = CliRunner().invoke(main, ["inspect", str(demo_run)])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0] == f"Run {demo_run.name} (completed): 10 samples, 0 errors"
    heads = [line for line in lines if line.startswith("[")]
    assert len(heads) == 10 and heads[0].startswith("[1] demo-airline:cancel-business-trial-0  epoch 0  ok")
    assert sum(line.strip().startswith("sm.session") for line in lines) == 10
    assert sum(line.strip().startswith("reflect ") for line in lines) == 10  # the simple reflector's span
    assert sum(line.strip().startswith("reflection: Check the policy first") for line in lines) == 10
    [models] = [line for line in lines if line.startswith("Models: ")]
    none = "none (a replay of --traces: no agent ran)"  # their settings say `local`, but a replay runs neither
    assert f"agent={none}" in models and f"user={none}" in models


def test_json_errors_filter_and_a_run_without_spans(demo_run: Path, tmp_path: Path) -> None:
    copy = tmp_path / "run"
    shutil.copytree(demo_run, copy)
    lines = (copy / "samples.jsonl").read_text(encoding="utf-8").splitlines()
    broken = json.loads(lines[3])
    broken["error"] = "ReflectorError: the reflector model did not return a valid reflection"
    lines[3] = json.dumps(broken)
    (copy / "samples.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    (copy / "spans.jsonl").unlink()

    result = CliRunner().invoke(main, ["inspect", str(copy), "--errors", "--json"])
    assert result.exit_code == 0, result.output
    payload = json.loads(result.output)
    [sample] = payload["samples"]
    assert sample["trace_uid"] == broken["trace_uid"] and sample["error"].startswith("ReflectorError")
    assert sample["sessions"] == [] and sample["changed_skill_ids"] == broken["changed_skill_ids"]
    text = CliRunner().invoke(main, ["inspect", str(copy)]).output
    assert "(no spans.jsonl in" in text and "ERROR ReflectorError" in text


def test_the_benchmark_options_as_resolved_are_shown(demo_run: Path, tmp_path: Path) -> None:
    """run.json's `resolved_benchmark` (e.g. the data folder read from the environment) in the header and the JSON;
    a replay that ran no agent has none and shows none."""
    assert "Benchmark " not in CliRunner().invoke(main, ["inspect", str(demo_run)]).output
    copy = tmp_path / "run"
    shutil.copytree(demo_run, copy)
    record = json.loads((copy / "run.json").read_text(encoding="utf-8"))
    resolved = {"name": "tau-bench-airline", "options": {"data_dir": "/data/tau-bench/airline", "limit": 2}}
    (copy / "run.json").write_text(json.dumps({**record, "resolved_benchmark": resolved}), encoding="utf-8")

    text = CliRunner().invoke(main, ["inspect", str(copy)]).output
    assert "Benchmark tau-bench-airline: data_dir=/data/tau-bench/airline, limit=2" in text.splitlines()
    payload = json.loads(CliRunner().invoke(main, ["inspect", str(copy), "--json"]).output)
    assert payload["resolved_benchmark"] == resolved


def test_an_interrupted_session_without_a_sample_is_still_shown(demo_run: Path, tmp_path: Path) -> None:
    copy = tmp_path / "run"
    shutil.copytree(demo_run, copy)
    lines = (copy / "samples.jsonl").read_text(encoding="utf-8").splitlines()
    (copy / "samples.jsonl").write_text("\n".join(lines[:-1]) + "\n", encoding="utf-8")  # the last never committed
    view = read_run(copy).view()
    last = view.samples[-1]
    assert last.sample is None and [s.kind for s in last.sessions] == ["reflect", "sm"] and last.changed_ids
    assert "not recorded (interrupted)" in CliRunner().invoke(main, ["inspect", str(copy)]).output


@pytest.mark.parametrize("status", ["running", "completed"])
def test_an_empty_span_file_is_refused_saying_why_and_what_to_do(tmp_path: Path, status: str) -> None:
    """A run writes spans.jsonl as its first span ends: empty, it stopped before that (or the file was emptied
    since, when run.json says it completed). Only whitespace or a torn line counts as empty too."""
    folder = write_run(tmp_path / "run", good_book(), status=status)
    for text in ("", "\n\n", '{"name": "sm.sess'):
        (folder / "spans.jsonl").write_text(text, encoding="utf-8")
        for extra in ([], ["--json"]):
            result = CliRunner().invoke(main, ["inspect", str(folder), *extra])
            assert result.exit_code == 2 and "Traceback" not in result.output, result.output
            assert result.output.startswith(f"Error: {folder / 'spans.jsonl'}: holds no span"), result.output
            if status == "completed":
                assert "the file was emptied since. Restore it from a copy, or move it away" in result.output
            else:
                assert "it stopped (or is still running) before its first span ended" in result.output
                assert f"`ace-eval verify {folder}`" in result.output
                assert f"`ace-eval e2e --resume {folder}` continues it" in result.output
    (folder / "spans.jsonl").unlink()  # moved away: the run is shown without its sessions
    assert CliRunner().invoke(main, ["inspect", str(folder)]).exit_code == 0


def test_not_a_run_folder(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["inspect", str(tmp_path)])
    assert result.exit_code == 2 and "is not a run folder (it has no run.json)" in result.output


def _stubborn_skill_manager(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """Adds a context skill without an insight, four times (each refused), then gives up."""
    if sum(isinstance(m, ModelResponse) for m in messages) < 4:
        args = {"section": "context", "issue": "Agents act before checking the policy.", "keywords": ["policy"]}
        return ModelResponse(parts=[ToolCallPart("add_skill", args)])
    return ModelResponse(parts=[TextPart("Nothing I can add.")])


@pytest.fixture(scope="module")
def refused_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("refused")
    models = {**scripted_models(), "skill_manager": FunctionModel(_stubborn_skill_manager, model_name="stubborn")}
    injections = RunInjections(
        models=models, embedder=TestEmbedder(), show_progress=False, sm_settings=SMSettings(tool_retries=5)
    )
    settings = E2ESettings(traces=DEMO, no_benchmark=True, output_dir=out, limit=1)
    return runner.run_e2e(settings, injections=injections).folder.path


def test_refusals_show_their_reason_and_repeats_collapse(refused_run: Path) -> None:
    result = CliRunner().invoke(main, ["inspect", str(refused_run)])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0] == f"Run {refused_run.name} (completed): 1 sample, 0 errors"
    [session] = [line for line in lines if line.startswith("    sm.session")]
    assert re.fullmatch(r"    sm\.session \d+\.\ds: 4 tool calls, 5 requests, [\d,]+\+[\d,]+ tokens", session)
    calls = lines[lines.index(session) + 1 :]
    assert calls[0] == "      add_skill(section='context', issue=…, keywords=[1]) -> refused  x4"
    assert calls[1].startswith("        reason: insight is required for a context skill: pass insight=")
    assert calls[2] == "    skills changed: none"

    payload = json.loads(CliRunner().invoke(main, ["inspect", str(refused_run), "--json"]).output)
    [sm] = [s for s in payload["samples"][0]["sessions"] if s["kind"] == "sm"]
    assert [c["refusal"] is not None and c["refusal"].startswith("insight is required") for c in sm["tool_calls"]] == [
        True
    ] * 4
    assert sm["usage"]["requests"] == 5 and sm["usage"]["input_tokens"] > 0


def test_colour_on_a_terminal_unless_no_color(demo_run: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NO_COLOR", raising=False)
    coloured = CliRunner().invoke(main, ["inspect", str(demo_run)], color=True).output
    assert "\x1b[32mok\x1b[0m (" in coloured and "\x1b[32m0 errors\x1b[0m" in coloured
    assert "\x1b[" not in CliRunner().invoke(main, ["inspect", str(demo_run)]).output  # not a terminal
    monkeypatch.setenv("NO_COLOR", "1")
    assert "\x1b[" not in CliRunner().invoke(main, ["inspect", str(demo_run)], color=True).output
