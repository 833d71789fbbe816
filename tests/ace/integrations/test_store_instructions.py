"""`SkillInstructions` on a skillbook store: the agent sees the current version, and the next one once `current`
moves (publish or rollback), without being rebuilt."""

from __future__ import annotations

from pathlib import Path

from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from ace.core.skillbook import Skillbook
from ace.embeddings import TestEmbedder
from ace.integrations.pydantic_ai import SkillInstructions
from ace_eval.store import ProducedBy, SkillbookStore

BY = ProducedBy(kind="test")


def _book(path: Path, insight: str) -> Path:
    book = Skillbook()
    book.add_skill("context", "Refund requests need the order number", ["refund", "orders"], insight)
    book.save_to_file(path)
    return path


def test_instructions_follow_the_stores_current_version(tmp_path: Path) -> None:
    store = SkillbookStore.create(tmp_path / "st")
    store.publish(_book(tmp_path / "one.json", "Ask for the order number first"), produced_by=BY, ungated_reason="1")
    skills = SkillInstructions(tmp_path / "st", embedder=TestEmbedder())
    seen: list[str] = []

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        seen.append(info.instructions or "")
        return ModelResponse(parts=[TextPart("ok")])

    agent: Agent[None, str] = Agent(FunctionModel(model), instructions=["You handle refunds.", skills])
    prompt = "I want a refund for my order"
    agent.run_sync(prompt)
    assert "Ask for the order number first" in seen[-1] and skills.store_version == 1

    store.publish(_book(tmp_path / "two.json", "Look the order up by e-mail"), produced_by=BY, ungated_reason="2")
    agent.run_sync(prompt)
    assert "Look the order up by e-mail" in seen[-1] and skills.store_version == 2

    store.rollback()
    agent.run_sync(prompt)
    assert "Ask for the order number first" in seen[-1] and skills.store_version == 1


def test_a_skillbook_file_path_is_loaded_once(tmp_path: Path) -> None:
    path = _book(tmp_path / "book.json", "Ask for the order number first")
    skills = SkillInstructions(path, embedder=TestEmbedder())
    assert "Ask for the order number first" in skills.for_prompt("refund my order") and skills.store_version is None
