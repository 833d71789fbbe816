"""`export_markdown` / `ExportMarkdownStep`: the skillbook as a `skillbook.md` that reads well on GitHub.

Layout: a title and a stats line, one `##` section per skillbook section (`context`, `harness`) with a `###`
heading per visible skill and its fields as a bold-labelled list (its KPIs among them: uses, helpful / harmful /
neutral tags, distinct harmful traces; the traces that taught it, by uid and epoch), then the quarantined skills
with the reason and the harmful traces, then the inactive skills with the reason they were removed. Skill text,
ids and keywords are escaped, so an issue containing `*`, `_`, `|`, `<tag>` or a line starting with `#` renders
as written.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import IO

from pydantic import BaseModel, ConfigDict, Field

from ace.core.effectiveness import evidence_ledger
from ace.core.skill import Skill
from ace.core.skillbook import Skillbook
from ace.core.storage import atomic_write
from ace.pipeline.context import StepContext
from ace.pipeline.registry import StepEnvironment, StepFactory
from ace.redaction import Redactor

__all__ = ["ExportMarkdownStep", "escape_markdown", "export_markdown", "write_markdown"]

_SECTIONS = (("context", "Context"), ("harness", "Harness"))
_ESCAPED = "\\`*_[]|~"
_HTML = {"&": "&amp;", "<": "&lt;", ">": "&gt;"}
_PLAIN = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")


def escape_markdown(text: str) -> str:
    """`text` as inline markdown that renders literally: markup characters escaped, newlines as `<br>`."""
    out: list[str] = []
    for ch in text:
        if ch in _ESCAPED:
            out.append("\\" + ch)
        else:
            out.append(_HTML.get(ch, ch))
    lines = [line.strip() for line in "".join(out).strip().splitlines()]
    return "<br>".join(line for line in lines if line)


def export_markdown(skillbook: Skillbook, *, title: str = "Skillbook") -> str:
    """The whole skillbook as markdown: stats, visible skills by section, then quarantined and inactive skills with
    their reasons."""
    ledger = evidence_ledger(skillbook)
    harmful_traces = {sid: len(ledger.evidence(sid).harmful_ever) for sid in ledger.tagged_ids()}
    all_skills = skillbook.skills(include_inactive=True)
    active = [s for s in all_skills if s.visible]
    quarantined = [s for s in all_skills if s.active and s.quarantine is not None]
    inactive = [s for s in all_skills if not s.active]
    tags = {k: sum(getattr(s, f"{k}_count") for s in all_skills) for k in ("helpful", "harmful", "neutral")}
    by_section = {key: [s for s in active if s.section == key] for key, _ in _SECTIONS}
    occurrences = sum(len(s.occurrences) for s in all_skills)
    held = f"{len(quarantined)} quarantined · " if quarantined else ""
    lines = [
        f"# {escape_markdown(title)}",
        "",
        f"**{len(active)} active skill{'s' if len(active) != 1 else ''}** "
        f"({', '.join(f'{len(by_section[key])} {key}' for key, _ in _SECTIONS)}) · "
        f"{held}{len(inactive)} inactive · {occurrences} occurrence{'s' if occurrences != 1 else ''} · "
        f"tags: {tags['helpful']} helpful, {tags['harmful']} harmful, {tags['neutral']} neutral",
    ]
    for key, heading in _SECTIONS:
        lines += ["", f"## {heading} ({len(by_section[key])})"]
        if not by_section[key]:
            lines += ["", "_No active skills._"]
        for skill in by_section[key]:
            lines += ["", *_skill_block(skill, harmful_traces.get(skill.id, 0))]
    if quarantined:
        lines += ["", f"## Quarantined skills ({len(quarantined)})"]
        for skill in quarantined:
            lines += ["", *_skill_block(skill, harmful_traces.get(skill.id, 0))]
    if inactive:
        lines += ["", f"## Inactive skills ({len(inactive)})"]
        for skill in inactive:
            lines += ["", *_skill_block(skill, harmful_traces.get(skill.id, 0))]
    return "\n".join(lines) + "\n"


def _code(text: str) -> str:
    """`text` as an inline code span when it is a plain identifier, else as escaped text (an id the skillbook did
    not assign cannot close the span, start a new line or inject HTML)."""
    return f"`{text}`" if _PLAIN.fullmatch(text) else escape_markdown(text)


def _skill_block(skill: Skill, harmful_traces: int) -> list[str]:
    sid = _code(skill.id)
    if not skill.active:
        heading = f"### {sid} ({skill.section}, removed)"
    elif skill.quarantine is not None:
        heading = f"### {sid} ({skill.section}, quarantined)"
    else:
        heading = f"### {sid}"
    rows = [heading, ""]
    if not skill.active:
        rows.append(f"- **Removed:** {escape_markdown(skill.removal_reason or 'no reason recorded')}")
    elif skill.quarantine is not None:
        held = skill.quarantine
        rows.append(f"- **Quarantined:** {escape_markdown(held.reason)} (since {escape_markdown(held.timestamp)})")
        if held.evidence:
            rows.append(f"- **Harmful traces:** {', '.join(_code(t) for t in held.evidence)}")
    rows.append(f"- **Keywords:** {', '.join(_code(k) for k in skill.keywords)}")
    rows.append(f"- **Issue:** {escape_markdown(skill.issue)}")
    if skill.insight:
        rows.append(f"- **Insight:** {escape_markdown(skill.insight)}")
    taught = _taught_by(skill)
    if taught:
        rows.append(f"- **Taught by:** {taught}")
    rows.append(
        f"- **Counters:** used {skill.used_count} · helpful {skill.helpful_count} · harmful {skill.harmful_count} · "
        f"neutral {skill.neutral_count} · harmful traces {harmful_traces} · occurrences {len(skill.occurrences)}"
    )
    return rows


def write_markdown(
    skillbook: Skillbook, path: Path, *, title: str = "Skillbook", redactor: Redactor | None = None
) -> None:
    """Write `export_markdown(skillbook)` to `path` atomically, redacted with `redactor` when given."""
    markdown = export_markdown(skillbook, title=title)
    data = (redactor.redact_text(markdown) if redactor is not None else markdown).encode("utf-8")

    def write(f: IO[bytes]) -> None:
        f.write(data)

    atomic_write(path, write)


def _taught_by(skill: Skill) -> str:
    """The traces whose reflections added or rewrote the skill, as `uid` (epoch N), each once, in order."""
    seen: dict[tuple[str, int | None], None] = {}
    for source in skill.occurrences:
        if source.operation_type in (None, "ADD", "UPDATE") and source.trace_uid != "manual":
            seen.setdefault((source.trace_uid, source.epoch), None)
    return ", ".join(_code(uid) + (f" (epoch {epoch})" if epoch is not None else "") for uid, epoch in seen)


class ExportMarkdownStep:
    """Writes `export_markdown(ctx.skillbook)` to `path` (atomically: a reader never sees half a file), redacted
    with `redactor` when given (the skillbook already redacts what it stores: this catches older skillbooks)."""

    name = "export_markdown"
    requires: frozenset[str] = frozenset({"skillbook"})
    provides: frozenset[str] = frozenset()

    def __init__(
        self, path: str | os.PathLike[str], *, title: str = "Skillbook", redactor: Redactor | None = None
    ) -> None:
        self.path = Path(path)
        self.title = title
        self.redactor = redactor

    async def __call__(self, ctx: StepContext) -> StepContext:
        """Export and return `ctx` unchanged."""
        write_markdown(ctx.skillbook, self.path, title=self.title, redactor=self.redactor)
        return ctx


class ExportOptions(BaseModel):
    """`export_markdown`: the file (relative paths in the run folder) and its title."""

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)
    path: str = Field(default="skillbook.md", min_length=1)
    """The markdown file; a relative path is in the run folder."""
    title: str = "Skillbook"
    """The document's heading."""


def _build(o: ExportOptions, env: StepEnvironment) -> ExportMarkdownStep:
    return ExportMarkdownStep(env.path("export_markdown", "path", o.path), title=o.title, redactor=env.redactor)


factory = StepFactory(
    step=ExportMarkdownStep,
    phase="end_of_run",
    description="Writes the skillbook as markdown (skillbook.md).",
    options=ExportOptions,
    build=_build,
)
