"""A third party's benchmark (`examples/plugins/ace-toy-benchmark`, installed as a distribution) through `ace-eval
e2e --benchmark toy-support` and `ace-eval report`, with the reflector and skill manager scripted: the run collects
the learn split, learns a skill per failed topic, and scores the test split without and with it (pass^k)."""

from __future__ import annotations

import functools
import json
import re
from pathlib import Path
from typing import Any

import pytest
from _e2e_support import ScriptedReflector, prompt_text, responses
from _plugins import install_toy_benchmark
from click.testing import CliRunner, Result
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from ace.embeddings.test import TestEmbedder
from ace_eval.benchmarks.scores import read_scores
from ace_eval.cli import main
from ace_eval.e2e import runner
from ace_eval.e2e.runner import RunInjections


class TopicSkillManager:
    """Adds one context skill on the topic of the trace's request (named in the reflection) with `insight`."""

    def __init__(self, insight: str) -> None:
        self.insight = insight

    def __call__(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if responses(messages) > 0:
            return ModelResponse(parts=[TextPart("Updated the skillbook.")])
        from ace_toy_benchmark import TASKS  # the plugin's sources are on the path once it is installed

        prompt = prompt_text(messages)
        topic = next(task.topic for task in TASKS if task.request[:50] in prompt)
        args = {
            "section": "context",
            "issue": f"{topic} requests fail when the agent skips a step.",
            "keywords": [topic],
            "insight": self.insight,
        }
        return ModelResponse(parts=[ToolCallPart("add_skill", args)])


def invoke(monkeypatch: pytest.MonkeyPatch, args: list[str], insight: str) -> Result:
    models: dict[Any, Any] = {
        "reflector": FunctionModel(ScriptedReflector(), model_name="scripted-reflector"),
        "skill_manager": FunctionModel(TopicSkillManager(insight), model_name="scripted-sm"),
    }
    inj = RunInjections(models=models, embedder=TestEmbedder(), show_progress=False)
    monkeypatch.setattr("ace_eval.commands.e2e.run_e2e", functools.partial(runner.run_e2e, injections=inj))
    monkeypatch.setattr("ace_eval.commands.e2e.resume_e2e", functools.partial(runner.resume_e2e, injections=inj))
    return CliRunner().invoke(main, args)


@pytest.fixture
def toy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    install_toy_benchmark(tmp_path / "site", monkeypatch)


def only_run(out: Path) -> Path:
    [folder] = [p for p in out.iterdir() if p.is_dir()]
    return folder


@pytest.mark.usefixtures("toy")
def test_the_toy_benchmark_runs_end_to_end_and_a_helpful_skill_raises_pass_k(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    args = ["e2e", "--benchmark", "toy-support", "--num-trials", "2", "--output-dir", str(tmp_path / "out")]
    result = invoke(monkeypatch, args, "Before processing it, do the step the customer's complaint names.")
    assert result.exit_code == 0, result.output
    folder = only_run(tmp_path / "out")
    record = json.loads((folder / "run.json").read_text())
    assert record["config"]["benchmark"] == "toy-support"
    # collect: the train split (6 requests x 2 trials) as the collection the skillbook learned from
    assert record["collection"]["traces_used"] == 12
    before, after = read_scores(folder / "baseline" / "scores.json"), read_scores(folder / "evaluation" / "scores.json")
    assert (
        sorted(before.tasks)
        == sorted(after.tasks)
        == ["address-2", "cancel-2", "password-2", "refund-3", "refund-4", "upgrade-2"]
    )
    assert before.seeds == after.seeds  # the phases are paired: the same trials
    assert {t for t, ok in before.successes().items() if not all(ok)} == {"address-2", "refund-3", "refund-4"}
    assert all(all(ok) for ok in after.successes().values())  # refund and address skills were learned
    benchmark = record["benchmark"]
    assert benchmark["before"]["pass_hat_k"] == [0.5, 0.5]
    assert benchmark["after"]["pass_hat_k"] == [1.0, 1.0]
    assert {d["task_id"]: d["delta"] for d in benchmark["task_deltas"]}["refund-3"] == 1.0
    assert "pass^1    50.0 [ 16.7,  83.3]  100.0 [100.0, 100.0]  +50.0" in result.output.splitlines()

    page = tmp_path / "report.html"
    report = CliRunner().invoke(main, ["report", str(folder), "--output", str(page)])
    assert report.exit_code == 0, report.output
    html = page.read_text(encoding="utf-8")
    assert "toy-support" in html
    # the page's pass^k comes from the phases' scores.json: the test split before and after, not the learn split
    [row1] = re.findall(r"<tr><td>pass\^1</td>.*?</tr>", html, re.S)
    assert "0.500" in row1 and "1.000" in row1 and "+0.500" in row1
    assert re.search(r'<td class="mono">refund-3</td><td class="n">0(\.0+)?</td><td class="n">1(\.0+)?</td>', html)


@pytest.mark.usefixtures("toy")
def test_a_harmful_skill_lowers_the_toy_benchmarks_score(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    args = ["e2e", "--benchmark", "toy-support", "--output-dir", str(tmp_path / "out")]
    result = invoke(monkeypatch, args, "Escalate every such request to a human colleague.")
    assert result.exit_code == 0, result.output
    folder = only_run(tmp_path / "out")
    before = read_scores(folder / "baseline" / "scores.json").successes()
    after = read_scores(folder / "evaluation" / "scores.json").successes()
    # every topic of the learn split got a skill telling the agent to escalate: the easy requests it solved alone
    # now fail, and the hard ones still do (the skill names no missing step)
    assert before == {
        "refund-3": [False],
        "cancel-2": [True],
        "address-2": [False],
        "password-2": [True],
        "upgrade-2": [True],
        "refund-4": [False],
    }
    assert after == {task: [False] for task in before}


@pytest.mark.usefixtures("toy")
def test_a_benchmark_option_is_checked_by_the_plugins_options_model(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    args = ["e2e", "--benchmark", "toy-support", "--benchmark-option", "flakyness=0.1", "--output-dir", str(out)]
    result = invoke(monkeypatch, args, "x")
    assert result.exit_code == 2, result.output
    assert "benchmark 'toy-support': option 'flakyness': Extra inputs are not permitted" in result.output
    assert "its options: train_split, eval_split, flakiness, seed" in result.output
    assert not out.exists()


@pytest.mark.usefixtures("toy")
def test_the_flags_of_the_harness_fill_the_plugins_options_and_bad_task_ids_are_refused(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    args = ["e2e", "--benchmark", "toy-support", "--eval-split", "refund-3,nope", "--output-dir", str(out)]
    result = invoke(monkeypatch, args, "x")
    assert result.exit_code == 2, result.output
    assert (
        "benchmark 'toy-support': nope is neither a split nor a task id; its splits: train (6 tasks)" in result.output
    )
    assert not out.exists()
    args = [
        "e2e",
        "--benchmark",
        "toy-support",
        "--eval-split",
        "refund-3",
        "--benchmark-option",
        "flakiness=0.5",
        "--num-trials",
        "4",
        "--output-dir",
        str(out),
    ]
    result = invoke(monkeypatch, args, "Before processing it, do the step the customer's complaint names.")
    assert result.exit_code == 0, result.output
    after = read_scores(only_run(out) / "evaluation" / "scores.json")
    assert list(after.tasks) == ["refund-3"] and 0 < sum(after.successes()["refund-3"]) < 4  # flaky, seeded
    record = json.loads((only_run(out) / "run.json").read_text())
    assert record["config"]["benchmark_options"] == {"flakiness": "0.5"}


@pytest.mark.usefixtures("toy")
def test_a_run_that_fails_while_evaluating_resumes_with_the_phases_it_is_missing(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from ace_toy_benchmark import ToySupport

    scored: list[bool] = []
    evaluate = ToySupport.evaluate

    def failing_once(self: ToySupport, env: Any, *, skillbook: Any, **kwargs: Any) -> Any:
        scored.append(skillbook is not None)
        if skillbook is not None and scored.count(True) == 1:
            raise ConnectionError("the scoring service went away")
        return evaluate(self, env, skillbook=skillbook, **kwargs)

    monkeypatch.setattr(ToySupport, "evaluate", failing_once)
    insight = "Before processing it, do the step the customer's complaint names."
    out = tmp_path / "out"
    failed = invoke(monkeypatch, ["e2e", "--benchmark", "toy-support", "--output-dir", str(out)], insight)
    assert failed.exit_code != 0 and "the scoring service went away" in failed.output
    folder = only_run(out)
    baseline = (folder / "baseline" / "scores.json").read_bytes()
    assert not (folder / "evaluation" / "scores.json").exists()
    assert json.loads((folder / "run.json").read_text())["status"] == "failed"

    resumed = invoke(monkeypatch, ["e2e", "--resume", str(folder)], insight)
    assert resumed.exit_code == 0, resumed.output
    assert scored == [False, True, True]  # the baseline was not scored again
    assert (folder / "baseline" / "scores.json").read_bytes() == baseline
    record = json.loads((folder / "run.json").read_text())
    assert record["status"] == "completed" and record["benchmark"]["after"]["pass_hat_k"] == [1.0]


@pytest.mark.usefixtures("toy")
def test_benchmark_options_from_the_config_file_and_flags_merge_key_by_key(tmp_path: Path) -> None:
    from ace_eval.e2e.config import resolve_settings

    config = tmp_path / "ace-eval.toml"
    config.write_text(
        '[e2e]\nbenchmark = "toy-support"\n\n[e2e.benchmark_options]\nflakiness = 0.25\nseed = 3\n', encoding="utf-8"
    )
    settings = resolve_settings(
        {"benchmark_options": {"seed": "9"}, "eval_split": "refund-3"}, config=config, cwd=tmp_path
    )
    assert settings.benchmark == "toy-support"
    assert settings.benchmark_raw_options() == {"eval_split": "refund-3", "flakiness": 0.25, "seed": "9"}
