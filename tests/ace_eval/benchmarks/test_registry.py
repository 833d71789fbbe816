"""The benchmark registry: built-ins registered as entry points exactly as a plugin's, `ace-eval benchmarks list`,
broken and unknown plugins stopped by name, strict options, and `MODULE:FUNCTION` scorers with their return value
checked whole."""

from __future__ import annotations

import functools
import json
import re
import sys
import textwrap
from pathlib import Path

import pytest
from _e2e_support import scripted_injections
from _plugins import install_distribution, install_toy_benchmark
from click.testing import CliRunner

from ace import Skillbook
from ace.exceptions import UserError
from ace.pipeline.registry import PluginError
from ace_eval.benchmarks import Benchmark, BenchmarkEnv, BenchmarkRegistry, load_benchmark
from ace_eval.benchmarks.scorer import ScorerError, check_rewards
from ace_eval.cli import main
from ace_eval.e2e import runner

BUILT_INS = ["tau-bench-airline", "tau2-airline", "tau2-mock", "tau2-retail", "tau2-telecom"]
GROUP = "ace_eval.benchmarks"


def test_the_built_ins_are_entry_points_of_ace_eval() -> None:
    registry = BenchmarkRegistry.from_entry_points()
    assert [b.name for b in registry if b.distribution == "ace-eval"] == BUILT_INS
    import tomllib

    pyproject = Path(__file__).resolve().parents[3] / "ace-eval" / "pyproject.toml"
    declared = tomllib.loads(pyproject.read_text(encoding="utf-8"))["project"]["entry-points"][GROUP]
    assert sorted(declared) == BUILT_INS  # nothing registered behind the entry points' back


def test_benchmarks_list_shows_each_with_its_distribution_and_options() -> None:
    result = CliRunner().invoke(main, ["benchmarks", "list"])
    assert result.exit_code == 0, result.output
    assert "tau2-mock  ace-eval 0.1.0" in result.stdout
    assert "option eval_split=None: The tasks scored: a split or task ids (default test)." in result.stdout
    assert "tau-bench-airline  ace-eval 0.1.0" in result.stdout
    rows = json.loads(CliRunner().invoke(main, ["benchmarks", "list", "--json"]).stdout)
    [airline] = [r for r in rows if r["name"] == "tau-bench-airline"]
    assert airline["distribution"] == "ace-eval"
    assert airline["options"]["max_num_steps"] == {
        "required": False,
        "default": 30,
        "help": airline["options"]["max_num_steps"]["help"],
    }


def test_an_installed_plugin_is_listed_and_built(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    install_toy_benchmark(tmp_path / "site", monkeypatch)
    listed = CliRunner().invoke(main, ["benchmarks", "list"])
    assert "toy-support  ace-toy-benchmark 0.1.0" in listed.stdout, listed.output
    assert "option flakiness=0.0: Chance a trial fails at random (seeded)." in listed.stdout
    toy = load_benchmark("toy-support", {"flakiness": "0.2"})
    assert isinstance(toy, Benchmark) and toy.name == "toy-support"
    assert list(toy.tasks("evaluate")) == ["refund-3", "cancel-2", "address-2", "password-2", "upgrade-2", "refund-4"]


def test_a_plugin_that_fails_to_import_stops_with_its_name(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    install_distribution(tmp_path, monkeypatch, "acme-bench", "2.0", {"acme": "acme_missing:bench"}, GROUP)
    with pytest.raises(
        PluginError,
        match=r"benchmark plugin 'acme' \(acme_missing:bench\) of acme-bench 2.0 failed "
        r"to import: ModuleNotFoundError.*pip uninstall acme-bench",
    ):
        BenchmarkRegistry.from_entry_points()
    result = CliRunner().invoke(main, ["e2e", "--benchmark", "tau2-mock", "--output-dir", str(tmp_path / "out")])
    assert result.exit_code == 2 and "acme-bench 2.0 failed to import" in result.output
    assert not (tmp_path / "out").exists()


def test_an_entry_point_that_is_no_factory_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "acme_plain.py").write_text("bench = 42\n", encoding="utf-8")
    install_distribution(tmp_path, monkeypatch, "acme-bench", "2.0", {"acme": "acme_plain:bench"}, GROUP)
    with pytest.raises(
        PluginError, match=r"names acme_plain:bench, a int, not an ace_eval\.benchmarks\.BenchmarkFactory"
    ):
        BenchmarkRegistry.from_entry_points()


def test_an_unknown_benchmark_is_refused_with_the_installed_ones(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["e2e", "--benchmark", "tau2-airlin", "--output-dir", str(tmp_path / "out")])
    assert result.exit_code == 2
    assert "unknown benchmark 'tau2-airlin'. Did you mean 'tau2-airline'?" in result.output
    assert f"Installed benchmarks: {', '.join(BUILT_INS)}" in result.output
    assert not (tmp_path / "out").exists()


def test_a_built_ins_option_typo_is_refused_by_name() -> None:
    with pytest.raises(UserError, match="benchmark 'tau-bench-airline': option 'max_steps': Extra inputs are not"):
        load_benchmark("tau-bench-airline", {"max_steps": "3"})


@pytest.fixture
def scorer_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """`my_evals` on the path: `score` succeeds on a task when a skill's keywords name it; the others misbehave."""
    (tmp_path / "my_evals.py").write_text(
        textwrap.dedent(
            """
            def score(skillbook, task_ids, num_trials):
                known = {k for s in skillbook.skills() for k in s.keywords}
                return {t: [1.0 if t in known else 0.25] * num_trials for t in task_ids}

            def short(skillbook, task_ids, num_trials):
                return {t: [1.0] for t in task_ids}

            def text(skillbook, task_ids, num_trials):
                return {t: ["1"] * num_trials for t in task_ids}

            def listed(skillbook, task_ids, num_trials):
                return [1.0]

            def no_args():
                return {}
            """
        ),
        encoding="utf-8",
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "my_evals", raising=False)
    return "my_evals"


def test_a_scorer_function_is_a_benchmark(scorer_module: str, tmp_path: Path) -> None:
    bench = load_benchmark(f"{scorer_module}:score", {"tasks": ["a", "b"]})
    book = Skillbook()
    book.add_skill(section="context", issue="Task a needs a check.", keywords=["a"], insight="Check it first.")
    scores = bench.evaluate(
        BenchmarkEnv(), skillbook=book, task_ids=["a", "b"], num_trials=2, seeds=None, directory=tmp_path
    )
    assert scores.rewards() == {"a": [1.0, 1.0], "b": [0.25, 0.25]}
    assert scores.successes() == {"a": [True, True], "b": [False, False]}  # success is reward >= 1
    assert [row.value for row in scores.pass_hat_ks()] == [0.5, 0.5]


@pytest.mark.parametrize(
    ("function", "message"),
    [
        ("short", "task 'a' has 1 reward(s) for 2 trial(s)"),
        ("text", "task 'a' has the reward '1', not a finite number"),
        ("listed", "returned a list: return a mapping task id -> a list of 2 reward(s)"),
        ("no_args", "no_args must take (skillbook, task_ids, num_trials)"),
        ("missing", "my_evals has no function 'missing'"),
    ],
)
def test_a_scorer_that_returns_the_wrong_shape_names_the_fix(
    scorer_module: str, tmp_path: Path, function: str, message: str
) -> None:
    def score() -> None:  # a bad function is refused when built (signature) or when it returns (its value)
        bench = load_benchmark(f"{scorer_module}:{function}", {"tasks": ["a"]})
        bench.evaluate(BenchmarkEnv(), skillbook=None, task_ids=["a"], num_trials=2, seeds=None, directory=tmp_path)

    with pytest.raises(ScorerError, match=re.escape(message)):
        score()


def test_rewards_for_other_tasks_than_asked_are_refused() -> None:
    with pytest.raises(ScorerError, match="missing task\\(s\\) b; task\\(s\\) not asked for c"):
        check_rewards("m:f", {"a": [1.0], "c": [0.0]}, ["a", "b"], 1)


def test_a_scorer_module_that_cannot_be_imported_stops_the_run_before_writing(tmp_path: Path) -> None:
    demo = Path(__file__).resolve().parents[3] / "examples" / "demo-collection"
    args = ["e2e", "--traces", str(demo), "--benchmark", "no_such_module:score", "--output-dir", str(tmp_path / "o")]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 2
    assert "module 'no_such_module' cannot be imported" in result.output
    assert not (tmp_path / "o").exists()


def test_a_scorer_scores_a_replayed_run_before_and_after(
    scorer_module: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    demo = Path(__file__).resolve().parents[3] / "examples" / "demo-collection"
    inj = scripted_injections()
    monkeypatch.setattr("ace_eval.commands.e2e.run_e2e", functools.partial(runner.run_e2e, injections=inj))
    args = [
        "e2e",
        "--traces",
        str(demo),
        "--benchmark",
        f"{scorer_module}:score",
        "--benchmark-option",
        "tasks=airline",
        "--benchmark-option",
        "tasks=trains",
        "--num-trials",
        "2",
        "--output-dir",
        str(tmp_path / "out"),
    ]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    [folder] = list((tmp_path / "out").iterdir())
    record = json.loads((folder / "run.json").read_text())
    # the scripted skill manager's skills carry the keyword `airline`: the scorer passes that task with them
    assert record["benchmark"]["before"]["pass_hat_k"] == [0.0, 0.0]
    assert record["benchmark"]["after"]["pass_hat_k"] == [0.5, 0.5]
    assert record["config"]["benchmark_options"] == {"tasks": ["airline", "trains"]}


def test_tau2_records_the_message_cap_its_episodes_get_with_the_runs_models() -> None:
    """run.json's `resolved_benchmark` says what the episodes used: the embedded model's shorter cap when unset."""
    from ace_eval.benchmarks import resolved_options
    from ace_eval.benchmarks.tau2_plugin import LOCAL_MAX_STEPS, TAU2_MAX_STEPS

    local = {"agent": "local", "user": "local"}
    hosted = {"agent": "openai/gpt-4o-mini", "user": "openai/gpt-4o-mini"}
    unset = load_benchmark("tau2-mock", {})
    assert resolved_options("tau2-mock", {}, unset, local)["max_num_steps"] == LOCAL_MAX_STEPS
    assert resolved_options("tau2-mock", {}, unset, {**hosted, "user": "local"})["max_num_steps"] == LOCAL_MAX_STEPS
    assert resolved_options("tau2-mock", {}, unset, hosted)["max_num_steps"] == TAU2_MAX_STEPS
    given = load_benchmark("tau2-mock", {"max_num_steps": 12})
    assert resolved_options("tau2-mock", {"max_num_steps": 12}, given, local)["max_num_steps"] == 12


def test_tau2_plays_the_embedded_models_episodes_one_at_a_time_with_a_note(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Its requests are served one at a time: two episodes at once took about 3x as long in all (docs)."""
    from ace_eval.benchmarks.tau2 import EpisodeConfig
    from ace_eval.benchmarks.tau2_plugin import LOCAL_MAX_WORKERS

    seen: list[EpisodeConfig] = []

    def recorded(cfg: EpisodeConfig, *args: object, **kwargs: object) -> Path:
        seen.append(cfg)
        return tmp_path / "results.json"

    monkeypatch.setattr("ace_eval.benchmarks.tau2.run_episodes", recorded)
    monkeypatch.setattr("ace_eval.benchmarks.tau2.check_against_tau2", lambda path: {})
    bench = load_benchmark("tau2-mock", {})
    local = BenchmarkEnv(model_names={"agent": "openai/gpt-4.1", "user": "local"}, max_workers=4)
    hosted = BenchmarkEnv(model_names={"agent": "openai/gpt-4.1", "user": "openai/gpt-4.1"}, max_workers=4)
    for env in (local, hosted):
        bench.run(env, skillbook=None, task_ids=["create_task_1"], num_trials=1, directory=tmp_path, phase="x")
    assert [c.max_workers for c in seen] == [LOCAL_MAX_WORKERS, 4]
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-sent")  # check() looks for the hosted agent's key only
    bench.check(local)
    assert f"episodes {LOCAL_MAX_WORKERS} at a time" in capsys.readouterr().err
    bench.check(BenchmarkEnv(model_names=local.model_names, max_workers=1))  # nothing lowered: no note
    assert "at a time" not in capsys.readouterr().err
