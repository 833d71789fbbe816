"""The pipeline through `ace-eval`: `steps list`, `--step` / `--no-step` / `--dedup`, the example plugin installed
as a distribution, broken and missing plugins, failing end-of-run steps and `--resume`, a different pipeline."""

from __future__ import annotations

import dataclasses
import functools
import json
import re
from pathlib import Path
from typing import Any

import pytest
from _e2e_support import ScriptedReflector, scripted_injections
from _plugins import install_distribution, install_example_plugin
from click.testing import CliRunner, Result
from pydantic_ai.messages import ModelMessage, ModelResponse, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from ace import Skillbook
from ace_eval.cli import main
from ace_eval.e2e import runner
from ace_eval.e2e.runner import RunInjections

DEMO = Path(__file__).resolve().parents[3] / "examples" / "demo-collection"
CANCELLATIONS = {"demo-airline:cancel-business-trial-0", "demo-airline:cancel-basic-economy-trial-0"}


def invoke(monkeypatch: pytest.MonkeyPatch, args: list[str], injections: RunInjections | None = None) -> Result:
    """`ace-eval ARGS` with the run's models scripted (the same injection point the other e2e tests use)."""
    inj = injections or scripted_injections()
    monkeypatch.setattr("ace_eval.commands.e2e.run_e2e", functools.partial(runner.run_e2e, injections=inj))
    monkeypatch.setattr("ace_eval.commands.e2e.resume_e2e", functools.partial(runner.resume_e2e, injections=inj))
    return CliRunner().invoke(main, args)


def replay(out: Path, *extra: str) -> list[str]:
    return ["e2e", "--traces", str(DEMO), "--no-benchmark", "--output-dir", str(out), *extra]


def only_run(out: Path) -> Path:
    [folder] = [p for p in out.iterdir() if p.is_dir()]
    return folder


def samples(folder: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (folder / "samples.jsonl").read_text().splitlines()]


def pipeline_steps(folder: Path) -> list[dict[str, Any]]:
    steps: list[dict[str, Any]] = json.loads((folder / "run.json").read_text())["pipeline"]["steps"]
    return steps


def span_names(folder: Path) -> list[str]:
    return [json.loads(line)["name"] for line in (folder / "spans.jsonl").read_text().splitlines()]


def test_steps_list_shows_the_built_ins_with_their_distribution() -> None:
    result = CliRunner().invoke(main, ["steps", "list"])
    assert result.exit_code == 0, result.output
    heads = [line for line in result.stdout.splitlines() if not line.startswith(" ")]
    names = [h.split()[0] for h in heads]
    assert names == [
        "redact",
        "reflect",
        "update",
        "quarantine",
        "checkpoint",
        "review",
        "deduplicate",
        "export_markdown",
        "persist",
    ]
    assert "redact  [before_reflect]  agentic-context-engine 0.1.0" in heads  # main's redaction, now a registered step
    assert "deduplicate  [end_of_epoch]  agentic-context-engine 0.1.0" in heads
    assert "checkpoint  [commit]  ace-eval 0.1.0" in heads  # the harness's own step, registered the same way
    assert "    requires: epoch, reflections, skillbook, trace   provides: sm_result" in result.stdout
    rows = json.loads(CliRunner().invoke(main, ["steps", "list", "--json"]).stdout)
    by_name = {row["name"]: row for row in rows}
    assert by_name["deduplicate"]["options"]["threshold"]["default"] == 0.85
    assert by_name["quarantine"]["options"]["min_harmful_traces"]["default"] == 2
    assert by_name["review"]["options"]["skillbook"]["required"] is True
    assert "default" not in by_name["review"]["options"]["skillbook"]
    assert any(
        line.startswith("    option skillbook (required): The published skillbook")
        for line in result.stdout.splitlines()
    )
    assert "PydanticUndefined" not in result.stdout


def test_default_run_writes_the_skillbook_files_through_the_export_and_persist_steps(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    result = invoke(monkeypatch, replay(tmp_path / "out", "--limit", "3"))
    assert result.exit_code == 0, result.output
    folder = only_run(tmp_path / "out")
    record = json.loads((folder / "run.json").read_text())
    assert [(s["name"], s["phase"]) for s in record["pipeline"]["steps"]] == [
        ("redact", "before_reflect"),
        ("reflect", "reflect"),
        ("update", "update"),
        ("quarantine", "after_update"),
        ("checkpoint", "commit"),
        ("export_markdown", "end_of_run"),
        ("persist", "end_of_run"),
    ]
    assert {s["distribution"] for s in record["pipeline"]["steps"]} == {"agentic-context-engine", "ace-eval"}
    timings = record["step_timings"]
    assert {k: v["calls"] for k, v in timings.items()} == {
        "redact": 3,
        "reflect": 3,
        "update": 3,
        "quarantine": 3,
        "checkpoint": 3,
        "export_markdown": 1,
        "persist": 1,
    }
    assert all(v["seconds"] > 0 for v in timings.values())
    names = span_names(folder)
    assert names.count("step.reflect") == 3 and names.count("step.persist") == 1
    book = Skillbook.load_from_file(folder / "skillbook.json")
    assert book.active_count > 0 and (folder / "skillbook.embeddings.npz").is_file()  # persist embedded first
    assert (folder / "skillbook.md").read_text().startswith("# Skillbook")
    inspected = CliRunner().invoke(main, ["inspect", str(folder)])
    assert "Steps: redact 3 x" in inspected.stdout and "reflect 3 x" in inspected.stdout
    assert "persist 1 x" in inspected.stdout


def test_no_step_leaves_a_file_out_and_step_options_move_it(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    args = replay(tmp_path / "out", "--limit", "2", "--no-step", "export_markdown", "--step", "persist:path=final.json")
    result = invoke(monkeypatch, args)
    assert result.exit_code == 0, result.output
    folder = only_run(tmp_path / "out")
    assert not (folder / "skillbook.md").exists()
    assert Skillbook.load_from_file(folder / "final.json").active_count > 0
    [persist] = [
        s for s in json.loads((folder / "run.json").read_text())["pipeline"]["steps"] if s["name"] == "persist"
    ]
    assert persist["options"] == {"path": "final.json"}


class MergeFirstJudge:
    """The dedup judge: MERGE the first pair it is shown (keeping the older skill), KEEP every later one."""

    def __init__(self) -> None:
        self.pairs: list[tuple[str, str]] = []

    def __call__(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        prompt = str(getattr(messages[0].parts[-1], "content", ""))
        match = re.search(r"for ((?:context|harness)-\d+) and ((?:context|harness)-\d+)\.$", prompt)
        assert match is not None, prompt
        self.pairs.append((match.group(1), match.group(2)))
        if len(self.pairs) == 1:
            args = {
                "keep_id": match.group(1),
                "issue": "Check the policy first.",
                "keywords": ["airline", "policy"],
                "insight": "Read the policy and get a yes before acting.",
                "reason": "same lesson",
            }
            return ModelResponse(parts=[ToolCallPart("final_result_MergeDecision", args)])
        return ModelResponse(parts=[ToolCallPart("final_result_KeepDecision", {"reason": "different traces"})])


def test_dedup_runs_at_the_end_of_each_epoch(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    judge = MergeFirstJudge()
    base = scripted_injections()
    inj = dataclasses.replace(base, dedup_model=FunctionModel(judge))
    args = replay(tmp_path / "out", "--limit", "4", "--epochs", "2", "--dedup", "--dedup-threshold", "0.5")
    result = invoke(monkeypatch, args, inj)
    assert result.exit_code == 0, result.output
    folder = only_run(tmp_path / "out")
    record = json.loads((folder / "run.json").read_text())
    [dedup] = [s for s in record["pipeline"]["steps"] if s["name"] == "deduplicate"]
    assert (dedup["phase"], dedup["options"]["threshold"]) == ("end_of_epoch", 0.5)
    assert record["step_timings"]["deduplicate"]["calls"] == 2  # once per epoch
    assert record["models"]["dedup"] == record["models"]["skill_manager"]  # the judge's default
    assert record["usage"]["dedup"]["requests"] == len(judge.pairs) > 1
    assert len(set(judge.pairs)) == len(judge.pairs)  # a pair decided KEEP is never asked again
    names = span_names(folder)
    assert names.count("step.deduplicate") == 2
    # the dedup spans come after each epoch's last sample: epoch 0's before any sample of epoch 1
    order = [n for n in names if n in ("step.deduplicate", "train.sample")]
    assert order == ["train.sample"] * 4 + ["step.deduplicate"] + ["train.sample"] * 4 + ["step.deduplicate"]
    spans = {row["span_id"]: row for row in map(json.loads, (folder / "spans.jsonl").read_text().splitlines())}
    epochs = [spans[row["parent_span_id"]] for row in spans.values() if row["name"] == "step.deduplicate"]
    assert [(e["name"], e["attributes"]["ace.epoch"]) for e in epochs] == [("train.epoch", 0), ("train.epoch", 1)]
    book = Skillbook.load_from_file(folder / "skillbook.json")  # written by persist, after the last dedup
    merged_away = judge.pairs[0][1]
    assert not book.require_skill(merged_away).active
    assert len(book.keep_pairs) == len(judge.pairs) - 1
    assert f"`{merged_away}` (context, removed)" in (folder / "skillbook.md").read_text()


def test_the_example_plugin_installed_changes_the_run(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    install_example_plugin(tmp_path / "site", monkeypatch)
    listed = CliRunner().invoke(main, ["steps", "list"])
    assert "domain_filter  [before_reflect]  ace-domain-filter 0.1.0" in listed.stdout, listed.output
    assert "provides: domain_filter.domain, skipped, trace" in listed.stdout

    reflector = ScriptedReflector()
    args = replay(tmp_path / "out", "--step", "domain_filter:only=cancellation")
    result = invoke(monkeypatch, args, scripted_injections(reflector))
    assert result.exit_code == 0, result.output
    folder = only_run(tmp_path / "out")
    lines = samples(folder)
    assert len(lines) == 10 and all(line["error"] is None for line in lines)
    kept = {line["trace_uid"] for line in lines if line["skipped"] is None}
    assert kept == CANCELLATIONS
    assert all(
        "'lookup'" in line["skipped"] or "is filtered out" in line["skipped"] for line in lines if line["skipped"]
    )
    assert sum(reflector.calls.values()) == 2  # a skipped trace costs no model call
    changed = {line["trace_uid"] for line in lines if line["operations"]}
    assert changed == CANCELLATIONS
    redact, plugin = [
        s for s in json.loads((folder / "run.json").read_text())["pipeline"]["steps"] if s["phase"] == "before_reflect"
    ]
    assert redact["name"] == "redact"  # the built-in runs first in its phase: the filter reads a redacted trace
    assert plugin == {
        "name": "domain_filter",
        "phase": "before_reflect",
        "options": {"only": ["cancellation"], "skip": [], "rule": plugin["options"]["rule"]},
        "distribution": "ace-domain-filter",
        "version": "0.1.0",
    }


def test_a_step_that_is_not_installed_lists_the_available_ones(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    result = invoke(monkeypatch, replay(tmp_path / "out", "--step", "domain_filter:only=cancellation"))
    assert result.exit_code == 2
    assert "unknown step 'domain_filter'" in result.output
    assert (
        "Available steps: checkpoint, deduplicate, export_markdown, persist, quarantine, redact, reflect, review, "
        "update" in result.output
    )
    assert not (tmp_path / "out").exists()  # refused before anything was written


def test_a_bad_option_names_the_step_and_the_option(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    result = invoke(monkeypatch, replay(tmp_path / "out", "--step", "deduplicate:treshold=0.9"))
    assert result.exit_code == 2
    assert "step 'deduplicate': option 'treshold': Extra inputs are not permitted" in result.output
    assert "its options: model, threshold, max_pairs" in result.output
    assert not (tmp_path / "out").exists()


def test_a_plugin_that_fails_to_import_stops_everything(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    site = tmp_path / "site"
    site.mkdir()
    (site / "ace_broken_step.py").write_text('raise ImportError("needs libfoo.so")\n')
    install_distribution(site, monkeypatch, "ace-broken-step", "0.3.1", {"broken": "ace_broken_step:factory"})
    result = invoke(monkeypatch, replay(tmp_path / "out"))
    assert result.exit_code == 2
    assert (
        "the step plugin 'broken' (ace_broken_step:factory) of ace-broken-step 0.3.1 failed to import: "
        "ImportError: needs libfoo.so. Fix or uninstall ace-broken-step"
    ) in result.output
    assert not (tmp_path / "out").exists()
    listed = CliRunner().invoke(main, ["steps", "list"])
    assert listed.exit_code == 2 and "ace-broken-step 0.3.1 failed to import" in listed.output


FLAKY_PLUGIN = """
from pathlib import Path
from ace.pipeline import NoOptions, StepFactory

class FlakyExport:
    name = "flaky_export"
    requires = frozenset({"skillbook"})
    provides = frozenset()

    def __init__(self, folder):
        self.folder = folder

    async def __call__(self, ctx):
        if (self.folder / "FAIL").exists():
            raise OSError("disk full")
        (self.folder / "flaky.txt").write_text(str(ctx.skillbook.active_count))
        return ctx

factory = StepFactory(step=FlakyExport, phase="end_of_run", description="Fails while FAIL exists.", options=NoOptions,
                      build=lambda options, env: FlakyExport(env.output_dir))
"""


def test_a_failing_end_of_run_step_fails_the_run_and_resume_finishes_it(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    site = tmp_path / "site"
    site.mkdir()
    (site / "ace_flaky_step.py").write_text(FLAKY_PLUGIN)
    install_distribution(site, monkeypatch, "ace-flaky-step", "1.0", {"flaky_export": "ace_flaky_step:factory"})
    out = tmp_path / "out"
    out.mkdir()
    original = runner.RunFolder.create

    def create(output_dir: Path) -> runner.RunFolder:
        folder = original(output_dir)
        (folder.path / "FAIL").touch()
        return folder

    monkeypatch.setattr(runner.RunFolder, "create", create)
    reflector = ScriptedReflector()
    inj = scripted_injections(reflector)
    result = invoke(monkeypatch, replay(out, "--limit", "3", "--step", "flaky_export"), inj)
    assert result.exit_code == 1
    assert "step 'flaky_export' (end_of_run, epoch 0) failed: OSError: disk full" in result.output
    assert "every finished sample is checkpointed" in result.output
    folder = only_run(out)
    assert json.loads((folder / "run.json").read_text())["status"] == "failed"
    assert len(samples(folder)) == 3 and sum(reflector.calls.values()) == 3

    (folder / "FAIL").unlink()
    resumed = invoke(monkeypatch, ["e2e", "--resume", str(folder)], inj)
    assert resumed.exit_code == 0, resumed.output
    assert sum(reflector.calls.values()) == 3  # nothing re-run, only the end of the run
    assert (folder / "flaky.txt").read_text() == str(Skillbook.load_from_file(folder / "skillbook.json").active_count)
    record = json.loads((folder / "run.json").read_text())
    assert record["status"] == "completed" and record["step_timings"]["flaky_export"]["calls"] == 2


def test_resume_refuses_a_different_pipeline(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    result = invoke(monkeypatch, replay(tmp_path / "out", "--limit", "1", "--no-step", "export_markdown"))
    assert result.exit_code == 0, result.output
    folder = only_run(tmp_path / "out")
    refused = invoke(monkeypatch, ["e2e", "--resume", str(folder), "--dedup", "--step", "persist:path=other.json"])
    assert refused.exit_code == 2
    assert "cannot resume" in refused.output and "with a different pipeline" in refused.output
    assert "step 'deduplicate': not in the run, added now" in refused.output
    assert 'step \'persist\' options: {"path": "skillbook.json"} in the run, {"path": "other.json"} now' in (
        refused.output
    )
    assert "step 'export_markdown'" not in refused.output  # --no-step is part of the recorded settings


def test_the_checkpoint_step_cannot_be_left_out_of_an_e2e_run(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    result = invoke(monkeypatch, replay(tmp_path / "out", "--no-step", "checkpoint"))
    assert result.exit_code == 2 and "cannot leave out the step 'checkpoint'" in result.output
    assert not (tmp_path / "out").exists()


def test_no_step_with_an_unknown_name_is_refused(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    result = invoke(monkeypatch, replay(tmp_path / "out", "--no-step", "export_markdwn"))
    assert result.exit_code == 2, result.output
    assert "cannot leave out the step 'export_markdwn': unknown step 'export_markdwn'" in result.output
    assert "Did you mean 'export_markdown'?" in result.output and "Available steps: checkpoint" in result.output
    assert not (tmp_path / "out").exists()  # refused before anything was written

    config = tmp_path / "ace-eval.toml"
    config.write_text("[e2e.steps]\nnosuch = false\n", encoding="utf-8")
    result = invoke(monkeypatch, replay(tmp_path / "out", "--config", str(config)))
    assert result.exit_code == 2, result.output
    assert "cannot leave out the step 'nosuch': unknown step 'nosuch'" in result.output
    assert not (tmp_path / "out").exists()


def test_the_dedup_judge_is_preflighted_and_recorded(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    result = invoke(monkeypatch, replay(tmp_path / "out", "--dedup-model", "openai/gpt-4.1-mini"))
    assert result.exit_code == 2, result.output
    assert "dedup model 'openai/gpt-4.1-mini' (the step 'deduplicate'; change it with --dedup-model)" in result.output
    assert "set OPENAI_API_KEY" in result.output
    assert not (tmp_path / "out").exists()  # refused before the first sample, not at the end of epoch 0

    inj = dataclasses.replace(scripted_injections(), dedup_model=FunctionModel(MergeFirstJudge()))
    result = invoke(monkeypatch, replay(tmp_path / "out", "--limit", "1", "--dedup-model", "openai/gpt-4.1-mini"), inj)
    assert result.exit_code == 0, result.output  # a scripted judge replaces the model string, as for the roles
    record = json.loads((only_run(tmp_path / "out") / "run.json").read_text())
    assert record["models"]["dedup"] == "openai/gpt-4.1-mini"
    [dedup] = [s for s in record["pipeline"]["steps"] if s["name"] == "deduplicate"]
    assert dedup["options"]["model"] == "openai/gpt-4.1-mini"


def test_the_summary_names_the_markdown_file_the_run_wrote(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    result = invoke(monkeypatch, replay(tmp_path / "moved", "--limit", "1", "--step", "export_markdown:path=book.md"))
    assert result.exit_code == 0, result.output
    folder = only_run(tmp_path / "moved")
    assert f"Skillbook markdown: {folder / 'book.md'}\n" in result.output and (folder / "book.md").is_file()
    assert not (folder / "skillbook.md").exists()

    result = invoke(monkeypatch, replay(tmp_path / "none", "--limit", "1", "--no-step", "export_markdown"))
    assert result.exit_code == 0, result.output
    assert "Skillbook markdown:" not in result.output and not (only_run(tmp_path / "none") / "skillbook.md").exists()


def test_the_checkpoint_snapshot_is_its_own_file_and_persist_alone_publishes(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    inj = dataclasses.replace(scripted_injections(), dedup_model=FunctionModel(MergeFirstJudge()))
    result = invoke(monkeypatch, replay(tmp_path / "none", "--limit", "2", "--dedup", "--no-step", "persist"), inj)
    assert result.exit_code == 0, result.output
    folder = only_run(tmp_path / "none")
    assert not (folder / "skillbook.json").exists() and not (folder / "skillbook.embeddings.npz").exists()
    snapshot = Skillbook.load_from_file(folder / "skillbook.snapshot.json")  # what --resume starts from
    record = json.loads((folder / "run.json").read_text())
    assert record["training"]["skillbook"]["active"] == snapshot.active_count > 0
    checked = CliRunner().invoke(main, ["verify", str(folder)])
    assert "skillbook.snapshot.json conforms to the v2 shape" in checked.output

    result = invoke(monkeypatch, replay(tmp_path / "moved", "--limit", "2", "--step", "persist:path=final.json"))
    assert result.exit_code == 0, result.output
    folder = only_run(tmp_path / "moved")
    assert not (folder / "skillbook.json").exists()  # one published skillbook, where persist was told to put it
    final = Skillbook.load_from_file(folder / "final.json")
    assert json.loads((folder / "run.json").read_text())["training"]["skillbook"] == final.stats()
    checked = CliRunner().invoke(main, ["verify", str(folder)])
    assert checked.exit_code == 0, checked.output
    assert "final.json conforms to the v2 shape" in checked.output


def test_a_run_folder_checkpointed_in_skillbook_json_still_resumes(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A folder from before the snapshot had its own file: the journal and `skillbook.json` beside it."""
    seen: list[str] = []

    def stop_after_two(sample: Any) -> None:
        seen.append(sample.trace_uid)
        if len(seen) == 2:
            raise RuntimeError("stopped")

    reflector = ScriptedReflector()
    stopping = scripted_injections(reflector, on_sample=stop_after_two)
    result = invoke(monkeypatch, replay(tmp_path / "out", "--limit", "4"), stopping)
    assert result.exit_code == 1, result.output
    folder = only_run(tmp_path / "out")
    assert len(samples(folder)) == 2 and not (folder / "skillbook.json").exists()
    (folder / "skillbook.snapshot.json").rename(folder / "skillbook.json")  # the old layout
    for npz in folder.glob("skillbook.snapshot.embeddings.npz"):
        npz.rename(folder / "skillbook.embeddings.npz")

    resumed = invoke(monkeypatch, ["e2e", "--resume", str(folder)], scripted_injections(reflector))
    assert resumed.exit_code == 0, resumed.output
    assert sum(reflector.calls.values()) == 4  # the two committed samples were not run again
    lines = samples(folder)
    assert sorted(line["index"] for line in lines) == [0, 1, 2, 3]
    book = Skillbook.load_from_file(folder / "skillbook.json")  # published by persist, from the old snapshot on
    assert len(book.operations) == sum(len(line["operations"]) for line in lines)
    assert CliRunner().invoke(main, ["verify", str(folder)]).exit_code == 0


def test_config_file_steps_shape_the_run(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    config = tmp_path / "ace-eval.toml"
    config.write_text(
        '[e2e.steps]\nexport_markdown = false\npersist = { path = "book.json" }\n'
        "deduplicate = { threshold = 0.5, max_pairs = 3 }\n",
        encoding="utf-8",
    )
    inj = dataclasses.replace(scripted_injections(), dedup_model=FunctionModel(MergeFirstJudge()))
    result = invoke(monkeypatch, replay(tmp_path / "out", "--limit", "3", "--config", str(config)), inj)
    assert result.exit_code == 0, result.output
    folder = only_run(tmp_path / "out")
    steps = {s["name"]: s["options"] for s in pipeline_steps(folder)}
    assert "export_markdown" not in steps and not (folder / "skillbook.md").exists()
    assert steps["persist"] == {"path": "book.json"} and (folder / "book.json").is_file()
    assert (steps["deduplicate"]["threshold"], steps["deduplicate"]["max_pairs"]) == (0.5, 3)
    assert json.loads((folder / "run.json").read_text())["step_timings"]["deduplicate"]["calls"] == 1
    assert "Skillbook markdown:" not in result.output

    resumed = invoke(monkeypatch, ["e2e", "--resume", str(folder)], inj)  # the recorded steps are the run's
    assert resumed.exit_code == 0, resumed.output
