"""`ace-eval verify`'s quality section: warnings with counts for what a small model makes up, never failures."""

from __future__ import annotations

from pathlib import Path

from _e2e_support import ScriptedReflector, prompt_text, responses
from click.testing import CliRunner
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from ace.embeddings.test import TestEmbedder
from ace_eval.cli import main
from ace_eval.e2e import runner
from ace_eval.e2e.config import E2ESettings
from ace_eval.e2e.segment import RunInjections
from ace_eval.run.quality import repeats_a_token

DEMO = Path(__file__).resolve().parents[3] / "examples" / "demo-collection"


def babbling_manager(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """What SmolLM2 did in the demo: one skill per trace, the token repeated, keywords from nowhere."""
    if responses(messages) > 0:
        return ModelResponse(parts=[TextPart("Added a skill.")])
    trace_id = prompt_text(messages).split("trace_id: ", 1)[1].split()[0]
    args = {
        "section": "context",
        "issue": f"The agent failed to respond to a request for a refund of urn urn urn urn ({trace_id}).",
        "keywords": ["zeppelin"],
        "insight": "Respond to the request.",
    }
    return ModelResponse(parts=[ToolCallPart("add_skill", args)])


def test_verify_warns_with_counts_on_a_run_that_learned_nonsense(tmp_path: Path) -> None:
    models = {
        "reflector": FunctionModel(ScriptedReflector(), model_name="scripted-reflector"),  # blames every trace
        "skill_manager": FunctionModel(babbling_manager, model_name="babbling-sm"),
    }
    settings = E2ESettings(traces=DEMO, no_benchmark=True, output_dir=tmp_path / "out", max_workers=1)
    result = runner.run_e2e(
        settings, injections=RunInjections(models=models, embedder=TestEmbedder(), show_progress=False)
    )
    assert result.record.status == "completed"
    verify = CliRunner().invoke(main, ["verify", str(result.folder.path)])
    assert verify.exit_code == 0, verify.output  # warnings, not failures
    lines = [line for line in verify.output.splitlines() if "quality:" in line]
    assert lines[0].startswith("WARN  quality: 10 of 10 skills repeat one token (context-00001, ")
    assert lines[1].startswith("WARN  quality: 5 of 10 reflections claim a failure on a trace whose reward is 1 (")
    assert "demo-airline:cancel-business-trial-0#0" in lines[1]
    assert lines[2].startswith("WARN  quality: 10 of 10 skills share no keyword with the traces that taught them (")
    assert len(lines) == 3


def test_a_grounded_run_has_no_quality_warning(tmp_path: Path) -> None:
    settings = E2ESettings(
        traces=DEMO, no_benchmark=True, reflector_type="grounded", skill_manager_model="rules", output_dir=tmp_path
    )
    result = runner.run_e2e(settings, injections=RunInjections(embedder=TestEmbedder(), show_progress=False))
    verify = CliRunner().invoke(main, ["verify", str(result.folder.path)])
    assert verify.exit_code == 0 and "quality:" not in verify.output, verify.output


def test_repeated_tokens() -> None:
    assert repeats_a_token("a refund of urn urn urn urn")
    assert repeats_a_token("Urn, urn. URN")
    assert not repeats_a_token("check the bag, the bag fee and the bag count")
