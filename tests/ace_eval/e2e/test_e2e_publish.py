"""`ace-eval e2e --publish STORE` on the toy benchmark plugin with the reflector and skill manager scripted: the
run's skillbook goes into the store only when the gate (its baseline against its evaluation) promotes it;
`--no-gate` publishes ungated and says so in version.json; a run that scores nothing is refused before it starts."""

from __future__ import annotations

import functools
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from _e2e_support import ScriptedReflector, prompt_text, responses
from _plugins import install_toy_benchmark
from click.testing import CliRunner, Result
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from ace.core.skillbook import Skillbook
from ace.embeddings.test import TestEmbedder
from ace.exceptions import RunError
from ace_eval.cli import main
from ace_eval.e2e import runner
from ace_eval.e2e.runner import RunInjections
from ace_eval.store import ProducedBy, SkillbookStore

EVERY_TASK = (
    "refund-1,cancel-1,address-1,password-1,upgrade-1,refund-2,refund-3,cancel-2,address-2,password-2,"
    "upgrade-2,refund-4"
)
HELPFUL = "Before processing it, do the step the customer's complaint names."
HARMFUL = "Escalate every such request to a human colleague."


def skill_manager(insight: str) -> FunctionModel:
    """Adds one context skill on the topic of the trace's request with `insight` (the toy agent obeys it)."""

    def add(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if responses(messages) > 0:
            return ModelResponse(parts=[TextPart("Updated the skillbook.")])
        from ace_toy_benchmark import TASKS

        topic = next(task.topic for task in TASKS if task.request[:50] in prompt_text(messages))
        args = {"section": "context", "issue": f"{topic} requests go wrong.", "keywords": [topic], "insight": insight}
        return ModelResponse(parts=[ToolCallPart("add_skill", args)])

    return FunctionModel(add, model_name="scripted-sm")


def e2e(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, insight: str, *args: str | Path, evaluate: bool = True
) -> Result:
    models: dict[Any, Any] = {
        "reflector": FunctionModel(ScriptedReflector(), model_name="scripted-reflector"),
        "skill_manager": skill_manager(insight),
    }
    inj = RunInjections(models=models, embedder=TestEmbedder(), show_progress=False)
    monkeypatch.setattr("ace_eval.commands.e2e.run_e2e", functools.partial(runner.run_e2e, injections=inj))
    base = ["e2e", "--benchmark", "toy-support", "--output-dir", str(tmp_path / "out")]
    base += ["--eval-split", EVERY_TASK, "--num-trials", "2"] if evaluate else []
    return CliRunner().invoke(main, [*base, *map(str, args)])


@pytest.fixture
def store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> SkillbookStore:
    install_toy_benchmark(tmp_path / "site", monkeypatch)
    made = SkillbookStore.open_or_create(tmp_path / "store")
    Skillbook().save_to_file(tmp_path / "empty.json")
    made.publish(tmp_path / "empty.json", produced_by=ProducedBy(kind="command"), ungated_reason="first version")
    return made


def test_a_run_that_learned_a_harmful_skill_is_held_and_current_stays(
    store: SkillbookStore, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    result = e2e(monkeypatch, tmp_path, HARMFUL, "--publish", store.root)
    assert result.exit_code == 1, result.output
    assert "decision: HOLD" in result.output and "nothing published" in result.output
    assert store.current_number() == 1 and store.numbers() == [1]
    [run] = (tmp_path / "out").iterdir()
    verdict = json.loads((run / "gate.json").read_text())
    assert verdict["delta"]["mean"] < 0 and verdict["baseline"]["skillbook"] == "none (the run's baseline)"


def test_a_run_that_learned_a_helpful_skill_is_published_with_the_evidence(
    store: SkillbookStore, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    result = e2e(monkeypatch, tmp_path, HELPFUL, "--publish", store.root)
    assert result.exit_code == 0, result.output
    current = store.current()
    assert current is not None and current.number == 2 and current.gate is not None
    assert current.gate["decision"] == "promote" and current.gate["test"]["nonzero"] == 6  # the 6 hard requests
    assert current.produced_by.kind == "run" and current.produced_by.run_dir is not None
    assert "published" in result.output and "through the gate" in result.output
    assert "not with" in result.output and "version 1; to compare with that: ace-eval gate run" in result.output


def test_no_gate_publishes_ungated_and_says_so(
    store: SkillbookStore, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    result = e2e(monkeypatch, tmp_path, HARMFUL, "--publish", store.root, "--no-gate")
    assert result.exit_code == 0, result.output
    current = store.current()
    assert current is not None and current.number == 2 and current.gate is None
    assert current.ungated_reason is not None and "--no-gate" in current.ungated_reason


def test_publishing_a_run_that_scores_nothing_is_refused_before_it_starts(
    store: SkillbookStore, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    result = e2e(monkeypatch, tmp_path, HELPFUL, "--publish", store.root, "--no-benchmark", evaluate=False)
    assert result.exit_code == 2 and "scores no skillbook" in result.output and "--no-gate" in result.output
    assert not (tmp_path / "out").exists()
    (tmp_path / "file").write_text("x")
    result = e2e(monkeypatch, tmp_path, HELPFUL, "--publish", tmp_path / "file")
    assert result.exit_code == 2 and "is not a skillbook store" in result.output
    assert not (tmp_path / "out").exists() and store.numbers() == [1]


def test_a_tau2_run_is_gated_on_tau2s_own_results_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("tau2", reason='tau2-bench is optional: pip install "ace-eval[tau2]"')
    from _tau2_e2e import tau2_injections, tau2_models

    tasks = "create_task_1,update_task_1"
    _, agent, user = tau2_models("mock", tasks.split(","), "e2e-publish")
    monkeypatch.setattr("ace_eval.commands.e2e.run_e2e", lambda s: runner.run_e2e(s, injections=tau2_injections()))
    args = [
        "e2e",
        "--benchmark",
        "tau2-mock",
        "--agent-model",
        agent,
        "--user-model",
        user,
        "--num-trials",
        "2",
        "--max-num-steps",
        "30",
        "--train-split",
        tasks,
        "--eval-split",
        tasks,
        "--output-dir",
        str(tmp_path / "out"),
        "--publish",
        str(tmp_path / "store"),
    ]
    result = CliRunner().invoke(main, args)
    # both tasks go from failing to passing, but two tasks can never reach p < 0.05 (the smallest p is 2/2^2)
    assert result.exit_code == 1, result.output
    [run] = (tmp_path / "out").glob("run_*")
    verdict = json.loads((run / "gate.json").read_text())
    assert verdict["benchmark"] == "tau2-mock" and verdict["delta"]["mean"] == 1.0 and verdict["p_value"] == 0.5
    assert "nothing can be promoted: p < 0.05 needs at least 6 tasks" in result.output
    assert not (tmp_path / "store").exists()  # held: the store is not even created


def test_a_replay_runs_episodes_are_its_scores(tmp_path: Path) -> None:
    """A run whose phases left trace collections (the harness's own episodes): the reward of each trial, an
    errored episode a failure in its side's pass^k but left out of the gate with its pair (evidence neither way, as
    in `gate run`); 6 tasks all better on the pairs without an error promote. Every baseline episode errored:
    nothing to compare, nothing published."""
    from _run_support import good_book, write_run

    from ace_eval.collection import Trace, write_collection
    from ace_eval.e2e.publish import phase_scores, publish_run
    from ace_eval.run.folder import RunFolder

    run = write_run(tmp_path / "run", good_book(), spans=False)

    def episodes(folder: Path, rewards: tuple[float, float], errors: tuple[str | None, str | None]) -> None:
        traces = [
            Trace(
                source_system="replay",
                trace_id=f"{task}-{trial}",
                task_id=task,
                question="q",
                reward=rewards[trial],
                messages=[{"role": "user", "content": "q"}],
                metadata={"error": errors[trial]} if errors[trial] else {},
            )
            for task in ("a", "b", "c", "d", "e", "f")
            for trial in range(2)
        ]
        shutil.rmtree(folder, ignore_errors=True)
        write_collection(folder, traces, source_system="replay")

    episodes(run / "baseline", (1.0, 1.0), ("rate limited", "rate limited"))
    episodes(run / "evaluation", (1.0, 1.0), (None, None))
    with pytest.raises(RunError, match=r"every trial errored on one side or the other \(baseline 12, candidate 0"):
        publish_run(run, tmp_path / "store")
    assert not (tmp_path / "store").exists() and not (run / "gate.json").exists()

    episodes(run / "baseline", (1.0, 0.0), ("rate limited", None))  # the pairs of trial 0 are no evidence
    pair = phase_scores(RunFolder.open(run))
    assert pair is not None
    before, after = pair
    assert before.successes() == {task: [False, False] for task in "abcdef"} and before.tasks["a"][0].error
    assert after.successes() == {task: [True, True] for task in "abcdef"}
    outcome = publish_run(run, tmp_path / "store")
    assert outcome.result is not None and outcome.result.decision == "promote" and outcome.version is not None
    assert outcome.result.baseline.errors == 6 and outcome.result.num_trials == 1
    assert outcome.version.number == 1 and outcome.version.gate == json.loads((run / "gate.json").read_text())


def tau_bench_models(airline_data: Path, insight: str) -> dict[Any, Any]:
    """tau-bench airline, scripted: the user names its task's case number; the agent performs that task's gold
    actions (and says its outputs) only when a skill in its instructions says `HELPFUL`, else it only apologises
    (which fails each of tasks 0-5: each needs a write). The skill manager adds one skill saying `insight`."""
    import re

    from ace_eval.benchmarks.tau_bench.data import load_airline_data

    tasks = load_airline_data(airline_data).tasks

    def user(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        case = next(i for i, task in enumerate(tasks) if task.instruction in (info.instructions or ""))
        return ModelResponse(
            parts=[TextPart(f"Help me with case {case}." if responses(messages) == 0 else "###STOP###")]
        )

    def agent(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        task = tasks[int(re.findall(r"case (\d+)", prompt_text(messages))[0])]
        gold = [(a.name, a.kwargs) for a in task.actions] if HELPFUL in (info.instructions or "") else []
        done = responses(messages)
        if done < len(gold):
            return ModelResponse(parts=[ToolCallPart(*gold[done])])
        return ModelResponse(parts=[TextPart(f"Done: {', '.join(task.outputs)}." if gold else "Sorry, I cannot.")])

    def sm(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if responses(messages) > 0:
            return ModelResponse(parts=[TextPart("Updated the skillbook.")])
        args = {"section": "context", "issue": "Changes were not made.", "keywords": ["airline"], "insight": insight}
        return ModelResponse(parts=[ToolCallPart("add_skill", args)])

    return {
        "reflector": FunctionModel(ScriptedReflector(), model_name="scripted-reflector"),
        "skill_manager": FunctionModel(sm, model_name="scripted-sm"),
        "agent": FunctionModel(agent, model_name="scripted-agent"),
        "user": FunctionModel(user, model_name="scripted-user"),
    }


@pytest.mark.parametrize(("insight", "promoted"), [(HELPFUL, True), (HARMFUL, False)])
def test_a_tau_bench_run_is_gated_against_its_collected_episodes(
    airline_data: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, insight: str, promoted: bool
) -> None:
    """tau-bench airline collects on the tasks it evaluates: its collected episodes (no baseline/ folder) are the
    baseline the gate pairs with the evaluation, task by task."""
    made = SkillbookStore.open_or_create(tmp_path / "store")
    Skillbook().save_to_file(tmp_path / "empty.json")
    made.publish(tmp_path / "empty.json", produced_by=ProducedBy(kind="command"), ungated_reason="first version")
    inj = RunInjections(models=tau_bench_models(airline_data, insight), embedder=TestEmbedder(), show_progress=False)
    monkeypatch.setattr("ace_eval.commands.e2e.run_e2e", functools.partial(runner.run_e2e, injections=inj))
    monkeypatch.setenv("ACE_TAU_BENCH_DATA", str(airline_data))
    args = [
        "e2e",
        "--benchmark",
        "tau-bench-airline",
        "--limit",
        "6",
        "--max-num-steps",
        "8",
        "--output-dir",
        str(tmp_path / "out"),
        "--publish",
        str(made.root),
    ]
    result = CliRunner().invoke(main, args)
    [run] = (tmp_path / "out").iterdir()
    assert not (run / "baseline").exists()
    assert (run / "gate.json").is_file(), result.output
    verdict = json.loads((run / "gate.json").read_text())
    assert verdict["benchmark"] == "tau-bench-airline" and verdict["tasks"] == 6 and verdict["num_trials"] == 1
    assert verdict["baseline"]["skillbook"] == "none (the run's baseline: collection/)"
    assert verdict["baseline"]["pass_hat_k"][0]["value"] == 0.0
    if promoted:
        assert result.exit_code == 0, result.output
        assert verdict["decision"] == "promote" and verdict["delta"]["mean"] == 1.0 and verdict["p_value"] < 0.05
        current = made.current()
        assert current is not None and current.number == 2 and current.gate == verdict
    else:
        assert result.exit_code == 1, result.output
        assert verdict["decision"] == "hold" and verdict["delta"]["mean"] == 0.0
        assert "nothing published" in result.output and made.current_number() == 1 and made.numbers() == [1]


def test_a_baseline_of_other_episodes_than_the_evaluation_is_refused(airline_data: Path, tmp_path: Path) -> None:
    """A run whose collected episodes (its baseline) miss a task the evaluation ran cannot be paired: refused
    with the difference and the command that scores both on the same tasks; nothing is published."""
    from ace.exceptions import UserError
    from ace_eval.collection import read_collection, write_collection
    from ace_eval.e2e.config import E2ESettings
    from ace_eval.e2e.publish import publish_run

    settings = E2ESettings(data_dir=airline_data, limit=2, max_num_steps=4, output_dir=tmp_path / "out")
    inj = RunInjections(models=tau_bench_models(airline_data, HELPFUL), embedder=TestEmbedder(), show_progress=False)
    run = runner.run_e2e(settings, injections=inj).folder.path
    manifest, traces = read_collection(run / "collection")
    write_collection(
        tmp_path / "fewer",
        [t for t in traces if t.task_id != "1"],
        source_system=manifest.source_system,
        benchmark=manifest.benchmark,
    )
    for name in ("manifest.json", "traces.jsonl"):
        (run / "collection" / name).write_bytes((tmp_path / "fewer" / name).read_bytes())
    with pytest.raises(UserError, match=r"baseline \(collection/\) and its evaluation \(evaluation/\)") as refused:
        publish_run(run, tmp_path / "store")
    assert "only the evaluation has task(s) 1" in str(refused.value) and "ace-eval gate run" in str(refused.value)
    assert not (tmp_path / "store").exists() and not (run / "gate.json").exists()
