"""Scripted projects for the federation tests: skillbooks whose skills carry helpful (or harmful) tags from traces."""

from __future__ import annotations

from pathlib import Path

from ace.core.insight_source import InsightSource
from ace.core.skillbook import Skillbook

RATE_LIMIT = (
    "harness",
    "The tool API returns rate limit errors under burst load from the agent",
    ["rate-limit", "retry"],
    "Wait and retry the call with exponential backoff when rate limited",
)
RATE_LIMIT_PARAPHRASE = (
    "harness",
    "The tool API returns rate limit errors under burst load from agents",
    ["rate-limit", "retry"],
    "Wait and retry the call with exponential backoff when rate limited",
)
CONFIRM = (
    "context",
    "Writes to a booking happen without asking the user first",
    ["confirmation", "write"],
    "Confirm with the user before any write to a booking",
)
OWN = (
    "context",
    "Telecom plans have roaming add-ons the agent forgets to list",
    ["roaming", "plans"],
    "List the roaming add-ons when the user asks about travel",
)
SECRET = "sk-ant-api03-PLANTEDSECRETxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"


def source(project: str, n: int) -> InsightSource:
    return InsightSource(trace_uid=f"{project}:trace-{n}", source_system=project, trace_id=f"trace-{n}")


def project_book(path: Path, project: str, skills: list[tuple[str, str, list[str], str]], helpful: int = 2) -> Path:
    book = Skillbook()
    for k, (section, issue, keywords, insight) in enumerate(skills):
        skill = book.add_skill(section, issue, keywords, insight, insight_source=source(project, k))
        for n in range(helpful):
            book.tag_skill(skill.id, 1, insight_source=source(project, 100 * k + n))
    path.parent.mkdir(parents=True, exist_ok=True)
    book.save_to_file(path)
    return path


def find_harmful(path: Path, project: str, skill_id: str, times: int = 5) -> None:
    book = Skillbook.load_from_file(path)
    for n in range(times):
        book.tag_skill(skill_id, -1, insight_source=source(project, 900 + n))
    book.save_to_file(path)
