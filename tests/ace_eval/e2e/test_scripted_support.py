"""The scripted skill manager the e2e tests share behaves as they assume."""

from __future__ import annotations

from collections import Counter
from typing import cast

from _e2e_support import ScriptedSkillManager
from pydantic_ai.messages import ModelRequest, ModelResponse, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo


def test_scripted_skill_manager_widens_every_third_trace() -> None:
    script = ScriptedSkillManager()
    kinds: Counter[str] = Counter()
    for i in range(30):
        prompt = ModelRequest.user_text_prompt(f"<trace>\ntrace_id: task-{i}-trial-0\n</trace>")
        search = ModelResponse(parts=[ToolCallPart("search_skills", {"query": "q"})])
        hit = [{"id": "context-00001", "issue": "x", "keywords": ["airline"]}]
        back = ModelRequest(parts=[ToolReturnPart("search_skills", hit)])
        part = script([prompt, search, back], cast(AgentInfo, None)).parts[0]  # the script never reads `info`
        assert isinstance(part, ToolCallPart)
        kinds[part.tool_name] += 1
    assert set(kinds) == {"add_skill", "update_skill"} and kinds["update_skill"] >= 5
