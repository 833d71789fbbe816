"""A review run on the demo collection with a scripted skill manager whose every edit is stated here.

The published skillbook has two skills (`context-00001` about cancellations, `context-00002` about bags). Over the
first six demo traces the skill manager: adds a refund skill; updates, then tags `context-00001`; searches and
refines the refund skill it staged three samples earlier (it sees its own staged edit); removes `context-00002`;
adds a near-duplicate of the refund skill. Four candidates: the add (three edits, three traces), the update,
the tag and the remove.
"""

from __future__ import annotations

import json
import shutil
import threading
from pathlib import Path
from typing import Any

from _e2e_support import ScriptedReflector, last_search, prompt_text, responses
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from ace import Skillbook
from ace.embeddings.test import TestEmbedder
from ace_eval.e2e.config import E2ESettings
from ace_eval.e2e.runner import E2EResult, RunInjections, run_e2e

DEMO = Path(__file__).resolve().parents[1] / "examples" / "demo-collection"
LIMIT = 6
REFUND_ISSUE = "Before cancelling a business booking the agent does not confirm the refund method with the user."
REFINED_ISSUE = "Before cancelling any booking the agent does not confirm the refund method with the user."
NEAR_DUPLICATE_ISSUE = "Before cancelling a business booking, the agent does not confirm the refund method with users."
WIDENED_ISSUE = "Agents cancel basic economy or business bookings without checking the cancellation policy first."
PLAN: dict[str, list[tuple[str, dict[str, Any]]]] = {
    "cancel-business-trial-0": [
        (
            "add_skill",
            {
                "section": "context",
                "issue": REFUND_ISSUE,
                "keywords": ["airline", "refund"],
                "insight": "Ask how the user wants the refund before cancelling.",
            },
        )
    ],
    "cancel-basic-economy-trial-0": [("update_skill", {"skill_id": "context-00001", "issue": WIDENED_ISSUE})],
    "cancel-basic-economy-trial-1": [("tag_skill", {"skill_id": "context-00001", "delta": 1})],
    "upgrade-one-passenger-trial-0": [
        ("search_skills", {"query": "refund method before cancelling", "keywords": ["refund"]}),
        ("update_found", {"issue": REFINED_ISSUE}),
    ],
    "add-one-bag-trial-0": [("remove_skill", {"skill_id": "context-00002", "reason": "Bag fees are now shown."})],
    "change-flight-gift-card-trial-0": [
        (
            "add_skill",
            {
                "section": "context",
                "issue": NEAR_DUPLICATE_ISSUE,
                "keywords": ["refund", "airline"],
                "insight": "Ask how the user wants the refund before cancelling.",
            },
        )
    ],
}


class PlannedSkillManager:
    """Makes exactly the calls `PLAN` lists for the session's trace, then says it is done; records what the
    `update_found` step found in its search (the staged skill)."""

    def __init__(self) -> None:
        self.found: list[str] = []
        self._lock = threading.Lock()

    def __call__(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        prompt = prompt_text(messages)
        trace_id = next((t for t in PLAN if f"trace_id: {t}" in prompt), None)
        actions = PLAN.get(trace_id or "", [])
        step = responses(messages)
        if step >= len(actions):
            return ModelResponse(parts=[TextPart("Done.")])
        tool, args = actions[step]
        if tool == "update_found":
            hits = last_search(messages)
            refund = [h for h in hits if "refund" in h["keywords"]]
            assert refund, f"the session did not see its staged refund skill: {hits}"
            with self._lock:
                self.found.append(refund[0]["id"])
            return ModelResponse(parts=[ToolCallPart("update_skill", {"skill_id": refund[0]["id"], **args})])
        return ModelResponse(parts=[ToolCallPart(tool, args)])


def published_skillbook(path: Path) -> Path:
    """Write the published skillbook of the scenario to `path`."""
    book = Skillbook()
    book.add_skill(
        "context",
        "Agents cancel basic economy bookings without checking the cancellation policy.",
        ["airline", "cancellation"],
        "Read the cancellation rules for the fare before cancelling.",
    )
    book.add_skill(
        "context",
        "Agents add checked bags without telling the user the fee.",
        ["airline", "baggage"],
        "State the bag fee and get a yes before adding a bag.",
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    book.save_to_file(path)
    return path


def demo_collection(tmp: Path) -> Path:
    """A copy of the demo collection (tests edit it)."""
    out = tmp / "collection"
    shutil.copytree(DEMO, out)
    return out


def review_settings(collection: Path, skillbook: Path, out: Path, **more: Any) -> E2ESettings:
    return E2ESettings(
        traces=collection,
        no_benchmark=True,
        limit=LIMIT,
        review=True,
        skillbook=skillbook,
        output_dir=out,
        **more,
    )


def review_injections(manager: PlannedSkillManager | None = None, **more: Any) -> RunInjections:
    return RunInjections(
        models={
            "reflector": FunctionModel(ScriptedReflector(), model_name="scripted-reflector"),
            "skill_manager": FunctionModel(manager or PlannedSkillManager(), model_name="planned-sm"),
        },
        embedder=TestEmbedder(),
        show_progress=False,
        **more,
    )


def review_run(collection: Path, skillbook: Path, out: Path, manager: PlannedSkillManager | None = None) -> E2EResult:
    """One uninterrupted review run of the scenario."""
    return run_e2e(review_settings(collection, skillbook, out), injections=review_injections(manager))


def queue_of(skillbook: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(skillbook.with_name(f"{skillbook.stem}.review.json").read_text("utf-8"))
    return data


def comparable(queue: dict[str, Any]) -> list[tuple[Any, ...]]:
    """The queue without run ids and times: kinds, targets, edits and sources."""
    return [
        (
            c["id"],
            c["kind"],
            c["target"],
            c["status"] if "status" in c else c["decision"],
            [(e["key"], e["staged_skill_id"], e["operation"]["type"], e["operation"]["issue"]) for e in c["edits"]],
            [(s["trace_uid"], s["epoch"], s["trace_sha256"]) for s in c["sources"]],
        )
        for c in queue["candidates"]
    ]
