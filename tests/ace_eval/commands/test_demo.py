"""`ace-eval demo`: replays examples/demo-collection (reflect -> update -> export) and ends with skillbook.md's path.

The embedded model takes minutes, so these tests swap in scripted models at the same injection point the demo
uses for the local ones; the real run is measured by hand (see the README for the time on 2 cores).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest
from _e2e_support import scripted_injections
from click.testing import CliRunner
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from ace.embeddings.test import TestEmbedder
from ace.llm import LocalModel
from ace.reflector.prompts import SMALL_MODEL_REFLECTOR_PROMPT
from ace.skill_manager.prompts import SMALL_MODEL_SKILL_MANAGER_PROMPT
from ace_eval.cli import main
from ace_eval.collection import read_collection, write_collection
from ace_eval.commands import demo as demo_module
from ace_eval.e2e.config import E2ESettings
from ace_eval.e2e.segment import E2EResult, RunInjections

EXAMPLES = Path(__file__).resolve().parents[3] / "examples" / "demo-collection"


@pytest.fixture
def scripted_demo(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(demo_module, "demo_injections", lambda **_: scripted_injections())


def test_demo_replays_the_collection_and_ends_with_the_markdown_path(scripted_demo: None, tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["demo", "--output-dir", str(tmp_path)])
    assert result.exit_code == 0, result.output
    lines = result.stdout.strip().splitlines()
    assert lines[0].startswith("Replayed 10 traces in ") and lines[0].endswith(": 10 samples, 0 errors.")
    assert lines[1].startswith("Skillbook: ") and "active skills" in lines[1]
    assert lines[-1].startswith("Skillbook: ") and lines[-1].endswith("skillbook.md")
    markdown = Path(lines[-1].removeprefix("Skillbook: "))
    assert markdown.is_file() and markdown.read_text(encoding="utf-8").startswith("# Skillbook")
    folder = markdown.parent
    learned = int(lines[1].removeprefix("Skillbook: ").split()[0])
    shown = [line for line in lines if line.startswith("  [")]
    more = [line for line in lines if line.startswith("  ... ")]
    assert len(shown) == min(learned, 3)  # every skill shown, or counted in the line below
    assert more == ([f"  ... {learned - 3} more in {markdown}"] if learned > 3 else [])
    assert lines[-2] == f"See what it learned and from which traces: ace-eval report {folder}"
    assert folder.parent == tmp_path and (folder / "skillbook.embeddings.npz").is_file()
    assert "demo-collection" in result.stderr  # where it replays from
    assert CliRunner().invoke(main, ["verify", str(folder)]).exit_code == 0
    _, traces = read_collection(folder / "collection")
    assert len(traces) == 10


def test_the_demo_counts_the_skills_it_does_not_print(
    scripted_demo: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(demo_module, "_SHOWN_SKILLS", 1)  # the scripted models learn 2 to 4 (two workers race)
    result = CliRunner().invoke(main, ["demo", "--output-dir", str(tmp_path)])
    assert result.exit_code == 0, result.output
    lines = result.stdout.strip().splitlines()
    markdown = lines[-1].removeprefix("Skillbook: ")
    learned = int(lines[1].removeprefix("Skillbook: ").split()[0])
    assert learned >= 2 and len([line for line in lines if line.startswith("  [")]) == 1
    assert f"  ... {learned - 1} more in {markdown}" in lines


def test_demo_accepts_another_collection_and_a_limit(scripted_demo: None, tmp_path: Path) -> None:
    result = CliRunner().invoke(
        main, ["demo", "--traces", str(EXAMPLES), "--limit", "2", "--output-dir", str(tmp_path)]
    )
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("Replayed 2 traces in ")


def test_demo_without_a_collection_names_the_fix(
    scripted_demo: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(demo_module, "find_demo_collection", lambda: None)
    result = CliRunner().invoke(main, ["demo", "--output-dir", str(tmp_path)])
    assert result.exit_code == 2 and "run from the repository root, or pass --traces DIR" in result.output
    assert not any(tmp_path.iterdir())


def test_demo_collection_is_found_from_the_source_tree() -> None:
    assert demo_module.find_demo_collection() == EXAMPLES


def test_demo_uses_the_embedded_model_with_small_budgets() -> None:
    injections = demo_module.demo_injections()
    reflector, manager = injections.models["reflector"], injections.models["skill_manager"]
    assert isinstance(reflector, LocalModel) and isinstance(manager, LocalModel) and reflector is not manager
    assert reflector.settings is not None and reflector.settings.get("max_tokens") == 256
    assert injections.sm_settings is not None
    assert (injections.sm_settings.budget.request_limit, injections.sm_settings.budget.tool_calls_limit) == (2, 1)
    assert injections.reflector_options == {
        "output_retries": 0,
        "conversation": False,
        "instructions": SMALL_MODEL_REFLECTOR_PROMPT,
    }
    assert manager.slots == 2 and reflector.slots == 1  # one prompt cache per concurrent session
    assert injections.sm_instructions == SMALL_MODEL_SKILL_MANAGER_PROMPT
    assert (injections.sm_settings.context_top_k, injections.sm_settings.show_trace) == (0, False)
    assert injections.embedder is None  # 'local': the offline MiniLM


def test_a_demo_that_learns_nothing_says_so_and_how_to_do_better(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    idle = FunctionModel(lambda messages, info: ModelResponse(parts=[TextPart("Nothing to change.")]))
    injections = scripted_injections()
    monkeypatch.setattr(
        demo_module,
        "demo_injections",
        lambda **_: dataclasses.replace(injections, models={**injections.models, "skill_manager": idle}),
    )
    result = CliRunner().invoke(
        main, ["demo", "--reflector-model", "local", "--limit", "2", "--output-dir", str(tmp_path)]
    )
    assert result.exit_code == 0, result.output
    assert "Skillbook: 0 active skills" in result.stdout and "The tiny offline model learned no skill" in result.stdout
    assert result.stdout.strip().splitlines()[-1].endswith("skillbook.md")


def test_the_demos_skill_manager_runs_on_the_small_model_prompt(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    systems: list[str] = []

    def idle(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        systems.append(info.instructions or "")
        return ModelResponse(parts=[TextPart("Nothing to change.")])

    injections = dataclasses.replace(scripted_injections(), sm_instructions=SMALL_MODEL_SKILL_MANAGER_PROMPT)
    monkeypatch.setattr(
        demo_module,
        "demo_injections",
        lambda **_: dataclasses.replace(injections, models={**injections.models, "skill_manager": FunctionModel(idle)}),
    )
    result = CliRunner().invoke(
        main, ["demo", "--reflector-model", "local", "--limit", "2", "--output-dir", str(tmp_path)]
    )
    assert result.exit_code == 0, result.output
    assert systems and all(s.startswith(SMALL_MODEL_SKILL_MANAGER_PROMPT) for s in systems), systems


def test_the_demo_learns_from_the_graders_verdicts_by_default(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    asked: list[bool] = []

    def injections(*, grounded: bool = False, **_: object) -> RunInjections:
        asked.append(grounded)
        return RunInjections(embedder=TestEmbedder(), show_progress=False)

    monkeypatch.setattr(demo_module, "demo_injections", injections)
    result = CliRunner().invoke(main, ["demo", "--output-dir", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert asked == [True]
    assert demo_module.GROUNDED_NOTE in result.stderr
    assert "Skillbook: 5 active skills" in result.stdout  # one per distinct failure of the five failed traces
    assert "[context-00001] In airline, the agent called cancel_reservation when the policy did not allow" in (
        result.stdout
    )


def test_the_graded_demo_numbers_its_skills_in_the_collections_order_as_the_readme_shows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One sample at a time (no model to keep busy): the same skill ids every run, those the README prints (two
    at once numbered them in the order the samples finished, which varied from run to run)."""
    workers: list[int] = []
    real = demo_module.run_e2e

    def run(settings: E2ESettings, **kwargs: Any) -> E2EResult:
        workers.append(settings.max_workers)
        return real(settings, **kwargs)

    monkeypatch.setattr(demo_module, "run_e2e", run)
    monkeypatch.setattr(demo_module, "demo_injections", lambda **_: RunInjections(show_progress=False))
    result = CliRunner().invoke(main, ["demo", "--output-dir", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert workers == [1]
    readme = (EXAMPLES.parents[1] / "README.md").read_text(encoding="utf-8")
    shown = [line.strip() for line in result.stdout.splitlines() if line.strip().startswith("[context-")]
    assert len(shown) == 3 and all(f"  {line}\n" in readme for line in shown), shown
    assert [line.split()[0] for line in shown] == ["[context-00001]", "[context-00002]", "[context-00003]"]
    assert [line for line in readme.splitlines() if line.strip().startswith("[context-")] == [
        f"  {line}" for line in shown
    ]


def test_a_collection_without_verdicts_keeps_the_llm_roles(tmp_path: Path) -> None:
    _, traces = read_collection(EXAMPLES)
    assert demo_module.is_graded(EXAMPLES)
    ungraded = tmp_path / "ungraded"
    write_collection(ungraded, [t.model_copy(update={"grader": None}) for t in traces], source_system="demo-airline")
    assert not demo_module.is_graded(ungraded)
