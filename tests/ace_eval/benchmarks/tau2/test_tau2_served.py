"""tau2 episodes whose agent and user are models of this process, served on 127.0.0.1 and called through litellm's
`openai/` provider (`tau2.served`); scripted pydantic-ai models stand in for the embedded one, no network."""

from __future__ import annotations

import json
import socket
from pathlib import Path
from typing import Any, ClassVar

import pytest

pytest.importorskip("tau2", reason='tau2-bench is optional: pip install "ace-eval[tau2]"')

from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel

from ace.llm.openai_server import PLACEHOLDER_KEY, OpenAIServer
from ace_eval.benchmarks import load_benchmark
from ace_eval.benchmarks._protocol import BenchmarkEnv
from ace_eval.benchmarks.tau2 import EpisodeConfig, EpisodesFailedError, run_episodes, served
from ace_eval.benchmarks.tau2_plugin import LOCAL_MAX_STEPS, TAU2_MAX_STEPS

STOP = "###STOP###"


def returned(messages: list[ModelMessage]) -> int:
    return sum(isinstance(p, ToolReturnPart) for m in messages if isinstance(m, ModelRequest) for p in m.parts)


def user(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """Asks for the meeting task, asks again until the agent's last words end the conversation, then stops."""
    if not any(isinstance(m, ModelResponse) for m in messages):
        return ModelResponse(parts=[TextPart("Please create a task 'Important Meeting' for user_1.")])
    last = messages[-1].parts[-1] if isinstance(messages[-1], ModelRequest) else None
    if isinstance(last, UserPromptPart) and str(last.content).startswith(("Created", "I'm here")):
        return ModelResponse(parts=[TextPart(f"Thanks. {STOP}")])
    return ModelResponse(parts=[TextPart("Please go on.")])


def gold_agent(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """Creates the task (the gold action) with the tool tau2 offered, then says so."""
    assert "create_task" in [t.name for t in info.function_tools]
    if returned(messages) == 0:
        return ModelResponse(parts=[ToolCallPart("create_task", {"user_id": "user_1", "title": "Important Meeting"})])
    return ModelResponse(parts=[TextPart("Created 'Important Meeting' for you.")])


def garbling_agent(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """What a small model does: a call cut off mid-arguments, a tool that does not exist, then prose."""
    if sum(isinstance(m, ModelResponse) for m in messages) == 1:  # only tau2's greeting so far
        return ModelResponse(parts=[ToolCallPart("create_task", '{"user_id": "user_1", "title": "Impor')])
    if returned(messages) == 0:
        return ModelResponse(parts=[ToolCallPart("delete_everything", {"really": True})])
    return ModelResponse(parts=[TextPart("I'm here to assist you.")])


class Recording(OpenAIServer):
    """Remembers every server started, to look at its port after the run."""

    started: ClassVar[list[Recording]] = []

    def start(self) -> None:
        super().start()
        self.port = self.address[1]
        Recording.started.append(self)


@pytest.fixture
def servers(monkeypatch: pytest.MonkeyPatch) -> list[Recording]:
    Recording.started = []
    monkeypatch.setattr(served, "OpenAIServer", Recording)
    return Recording.started


def closed(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=2).close()
    except ConnectionRefusedError:
        return True
    return False


def config(agent: Any, **kw: Any) -> EpisodeConfig:
    models = {"agent": FunctionModel(agent, model_name="scripted"), "user": FunctionModel(user)}
    return EpisodeConfig(domain="mock", agent_model="local", user_model="local", max_steps=20, models=models, **kw)


def test_a_served_agent_and_user_play_a_task_through_litellm(tmp_path: Path, servers: list[Recording]) -> None:
    results = run_episodes(config(gold_agent), ["create_task_1"], tmp_path)
    (run,) = json.loads(results.read_text())["simulations"]
    assert run["reward_info"]["reward"] == 1.0 and run["termination_reason"] == "user_stop"
    calls = [c for m in run["messages"] if m["role"] == "assistant" for c in m.get("tool_calls") or []]
    assert [(c["name"], c["arguments"]) for c in calls] == [
        ("create_task", {"user_id": "user_1", "title": "Important Meeting"})
    ]
    (server,) = servers
    assert server.requests == 4  # agent: call, answer; user: opening, stop
    assert closed(server.port)
    # The endpoint is of this run only: neither its port nor the placeholder key is written anywhere.
    for name in ("plan.json", "results.json", "episodes.jsonl"):
        text = (tmp_path / name).read_text()
        assert f":{server.port}" not in text and PLACEHOLDER_KEY not in text and "api_base" not in text
    assert json.loads((tmp_path / "plan.json").read_text())["agent_model"] == "local"


def test_malformed_calls_make_a_failed_episode_not_a_crash(tmp_path: Path, servers: list[Recording]) -> None:
    results = run_episodes(config(garbling_agent), ["create_task_1"], tmp_path)
    (run,) = json.loads(results.read_text())["simulations"]
    assert run["reward_info"]["reward"] == 0.0
    agent_turns = [m for m in run["messages"] if m["role"] == "assistant"]
    assert agent_turns[1]["content"] == 'create_task({"user_id": "user_1", "title": "Impor)'  # sent as text
    assert agent_turns[2]["tool_calls"][0]["name"] == "delete_everything"
    tool_results = [m for m in run["messages"] if m["role"] == "tool"]
    assert tool_results and tool_results[0]["error"]  # the unknown tool: tau2's error, fed back
    assert closed(servers[0].port)


def test_the_server_stops_when_an_episode_raises(tmp_path: Path, servers: list[Recording]) -> None:
    def raising(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        raise RuntimeError("the runtime fell over")

    with pytest.raises(EpisodesFailedError, match="the runtime fell over"):
        run_episodes(config(raising), ["create_task_1"], tmp_path)
    (server,) = servers
    assert closed(server.port)


def test_nothing_is_served_when_every_episode_is_done(tmp_path: Path, servers: list[Recording]) -> None:
    run_episodes(config(gold_agent), ["create_task_1"], tmp_path)
    run_episodes(config(gold_agent), ["create_task_1"], tmp_path)  # a resume with nothing left: no server, no load
    assert len(servers) == 1


def test_the_plugin_routes_local_roles_and_shortens_their_episodes(
    tmp_path: Path, servers: list[Recording], monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[EpisodeConfig] = []

    def recorded(cfg: EpisodeConfig, *args: Any, **kwargs: Any) -> Path:
        seen.append(cfg)
        return tmp_path / "results.json"

    monkeypatch.setattr("ace_eval.benchmarks.tau2.run_episodes", recorded)
    monkeypatch.setattr("ace_eval.benchmarks.tau2.check_against_tau2", lambda path: {})
    local = BenchmarkEnv(model_names={"agent": "local", "user": "local"})
    hosted = BenchmarkEnv(model_names={"agent": "openai/gpt-4.1", "user": "openai/gpt-4.1"})
    for env, options in ((local, {}), (hosted, {}), (local, {"max_num_steps": 12})):
        bench = load_benchmark("tau2-mock", options)
        bench.run(env, skillbook=None, task_ids=["create_task_1"], num_trials=1, directory=tmp_path, phase="x")
    assert [c.max_steps for c in seen] == [LOCAL_MAX_STEPS, TAU2_MAX_STEPS, 12]
    load_benchmark("tau2-mock", {}).check(local)  # the embedded model is installed here: accepted


def test_through_e2e_settings_the_embedded_models_cap_holds_unless_given_and_is_noted(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """e2e fills `max_num_steps` with tau2's default (its record then takes the value resolved); that filled value is
    not an option given, so the embedded model's cap applies (a run on main once played 200 messages an episode); a
    flag still sets it."""
    from ace_eval.e2e.config import resolve_settings

    local = BenchmarkEnv(model_names={"agent": "local", "user": "local"})
    unset = resolve_settings({"benchmark": "tau2-mock"}, cwd=tmp_path)
    assert unset.max_num_steps == TAU2_MAX_STEPS and "max_num_steps" not in unset.benchmark_raw_options()
    bench = load_benchmark("tau2-mock", unset.benchmark_raw_options())
    assert bench._max_steps(local) == LOCAL_MAX_STEPS  # type: ignore[attr-defined]
    bench.check(local)
    assert f"at most {LOCAL_MAX_STEPS} messages an episode" in capsys.readouterr().err
    given = resolve_settings({"benchmark": "tau2-mock", "max_num_steps": 200}, cwd=tmp_path)
    assert given.benchmark_raw_options()["max_num_steps"] == 200
    bench = load_benchmark("tau2-mock", given.benchmark_raw_options())
    assert bench._max_steps(local) == TAU2_MAX_STEPS  # type: ignore[attr-defined]
    bench.check(local)
    assert "messages an episode" not in capsys.readouterr().err
