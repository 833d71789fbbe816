"""ACE's agent inside tau2: the skillbook in its prompt (all, top-k, none), tau2's registry and tau2's own CLI."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("tau2", reason='tau2-bench is optional: pip install "ace-eval[tau2]"')

from _tau2_scripts import GoldPlayer

from ace.core.skillbook import Skillbook
from ace.embeddings.test import TestEmbedder
from ace.exceptions import UserError
from ace_eval.benchmarks.tau2 import (
    AGENT_NAME,
    AceAgent,
    EpisodeConfig,
    load_tasks,
    register_ace_agent,
    run_episodes,
    skill_args,
)
from ace_eval.benchmarks.tau2._tau2 import LLMAgent, Results, UserMessage, registry
from ace_eval.benchmarks.tau2.agent import EMBEDDER_ARG
from ace_eval.benchmarks.tau2.scripted import Reply, ScriptInfo, say, scripted_model


def _skillbook(tmp_path: Path) -> Path:
    book = Skillbook()
    book.add_skill("context", "Task updates go unconfirmed.", ["task", "status"], "Read back the new status.")
    book.add_skill("context", "Refund requests stall.", ["refund", "payment"], "Offer the original payment method.")
    path = tmp_path / "skillbook.json"
    book.save_to_file(path)
    return path


def _agent(llm_args: dict[str, object]) -> AceAgent:
    return AceAgent(tools=[], domain_policy="POLICY TEXT", llm="m", llm_args=llm_args)


def test_without_skills_the_prompt_is_tau2s_own(tmp_path: Path) -> None:
    plain = LLMAgent(tools=[], domain_policy="POLICY TEXT", llm="m", llm_args={})
    assert _agent({}).system_prompt == plain.system_prompt
    assert _agent(skill_args(_skillbook(tmp_path), "none")).system_prompt == plain.system_prompt


def test_prompt_injection_puts_every_skill_after_the_policy(tmp_path: Path) -> None:
    agent = _agent({"temperature": 0.0, **skill_args(_skillbook(tmp_path), "prompt")})
    prompt = agent.system_prompt
    assert prompt.index("POLICY TEXT") < prompt.index("<skillbook>")
    assert "Read back the new status." in prompt and "Offer the original payment method." in prompt
    assert agent.llm_args == {"temperature": 0.0}  # the ACE keys never reach litellm


def test_top_k_injection_retrieves_for_the_users_first_message(tmp_path: Path) -> None:
    agent = _agent({**skill_args(_skillbook(tmp_path), "top-k", top_k=1), EMBEDDER_ARG: TestEmbedder()})
    assert "<skillbook>" not in agent.system_prompt
    assert "ace_embedder" not in agent.llm_args  # the embedder never reaches litellm
    seen: list[str] = []

    def reply(messages: list[dict[str, Any]], info: ScriptInfo) -> Reply:
        seen.append(str(messages[0]["content"]))
        return say("Let me look at that refund.")

    agent.llm = scripted_model("topk", reply)
    state = agent.get_init_state()
    agent.generate_next_message(UserMessage(role="user", content="I want a refund to my payment card."), state)
    agent.generate_next_message(UserMessage(role="user", content="Also: task status?"), state)
    assert "Offer the original payment method." in state.system_messages[0].content
    assert "Read back the new status." not in state.system_messages[0].content
    assert seen == [state.system_messages[0].content] * 2  # retrieved once, for the first message


def test_bad_skill_arguments_name_the_fix(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="choose one of prompt, top-k, none"):
        _agent({"ace_skill_injection": "all", "ace_skillbook": str(_skillbook(tmp_path))})
    with pytest.raises(UserError, match="no skillbook file"):
        _agent({"ace_skillbook": str(tmp_path / "missing.json")})


def test_episodes_with_a_skillbook_show_it_to_the_agent(tmp_path: Path) -> None:
    player = GoldPlayer(load_tasks("mock", ["update_task_1"]), needs_skill="Read back the new status.")
    agent_model, user_model = player.models("mock-skills")
    common = {"domain": "mock", "agent_model": agent_model, "user_model": user_model}
    baseline = Results.load(run_episodes(EpisodeConfig(**common), ["update_task_1"], tmp_path / "baseline"))  # type: ignore[arg-type]
    with_ace = EpisodeConfig(**common, skillbook=_skillbook(tmp_path), injection="prompt")  # type: ignore[arg-type]
    learned = Results.load(run_episodes(with_ace, ["update_task_1"], tmp_path / "evaluation"))
    assert [s.reward_info.reward for s in baseline.simulations] == [0.0]
    assert [s.reward_info.reward for s in learned.simulations] == [1.0]
    assert learned.info.agent_info.llm_args["ace_skill_injection"] == "prompt"


def test_the_runs_embedder_reaches_each_agent_and_stays_out_of_the_results(tmp_path: Path) -> None:
    class Recording(TestEmbedder):
        def __init__(self) -> None:
            super().__init__()
            self.texts: list[str] = []

        def embed(self, texts: list[str]) -> Any:
            self.texts.extend(texts)
            return super().embed(texts)

    embedder = Recording()
    player = GoldPlayer(load_tasks("mock", ["update_task_1"]))
    agent_model, user_model = player.models("mock-embedder")
    config = EpisodeConfig(
        domain="mock",
        agent_model=agent_model,
        user_model=user_model,
        skillbook=_skillbook(tmp_path),
        injection="top-k",
        top_k=1,
        embedder=embedder,
    )
    results = run_episodes(config, ["update_task_1"], tmp_path / "run")
    [simulation] = Results.load(results).simulations
    first_from_user = next(m.content for m in simulation.messages if m.role == "user")
    assert embedder.texts[0] == first_from_user  # the run's embedder picked the skills for the user's first message
    assert EMBEDDER_ARG not in results.read_text(encoding="utf-8")


def test_tau2s_own_cli_runs_the_registered_agent(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert register_ace_agent() == AGENT_NAME == register_ace_agent()  # idempotent
    assert AGENT_NAME in registry.get_agents()
    player = GoldPlayer(load_tasks("mock", ["create_task_1"]))
    agent_model, user_model = player.models("cli")
    from ace_eval.benchmarks.tau2.__main__ import main

    argv = ["tau2", "run", "--domain", "mock", "--agent", AGENT_NAME, "--agent-llm", agent_model]
    argv += ["--user-llm", user_model, "--task-ids", "create_task_1", "--num-trials", "1", "--max-concurrency", "1"]
    argv += ["--results-dir", str(tmp_path), "--save-to", "cli-run", "--log-level", "ERROR"]
    monkeypatch.setattr(sys, "argv", argv)
    main()
    results = Results.load(tmp_path / "cli-run.json")
    assert results.info.agent_info.implementation == AGENT_NAME
    assert [s.reward_info.reward for s in results.simulations] == [1.0]
