"""Skills as prompt text: the skillbook's prompt block (`Skillbook.as_prompt`) and the `<skills>` XML of search
results and tool answers (`render_skills_xml`)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any
from xml.sax.saxutils import escape, quoteattr

from ace.core.skill import Section, Skill

__all__ = ["escape_text", "one_line", "render_prompt", "render_skills_xml", "skillbook_stats"]


def escape_text(text: str) -> str:
    """`text` for an XML element of a prompt: `&`, `<` and `>` escaped and line breaks as `&#10;` (a learned or
    traced text can neither close its element nor start a line that looks like a section of the prompt)."""
    return one_line(escape(text))


def one_line(text: str) -> str:
    """`text` with its line breaks as `&#10;` / `&#13;`: in the line-based prompt format a skill's text cannot start
    a line of its own (a forged `- [context-...]` entry, an end marker, a `# SYSTEM` heading)."""
    return text.replace("\r", "&#13;").replace("\n", "&#10;")


def render_prompt(sections: Mapping[Section, Iterable[Skill]]) -> str:
    """Visible skills (active, not quarantined) under their sections, in the spec's prompt format, each text on its
    line (`one_line`); `""` when none."""
    lines: list[str] = []
    for section, skills in sections.items():
        shown = [s for s in skills if s.visible]
        if not shown:
            continue
        lines.append(f"## {section}")
        for s in shown:
            lines.append(f"- [{s.id}]")
            lines.append(f"Keywords: {one_line(', '.join(s.keywords))}")
            lines.append(f"Issue: {one_line(s.issue)}")
            if s.insight:
                lines.append(f"Insight: {one_line(s.insight)}")
    return "\n".join(lines)


def render_skills_xml(skills: Sequence[Skill]) -> str:
    """Skills as `<skill>` elements inside `<skills>`, text escaped, for an agent's tool result or prompt.

    ```
    <skills count="1">
    <skill id="context-00001" section="context" helpful="2" harmful="0" neutral="1" used="3">
    <keywords>airline, booking_api</keywords>
    <issue>...</issue>
    <insight>...</insight>
    </skill>
    </skills>
    ```
    An absent insight (harness skills) renders no `<insight>` element; inactive skills carry `active="false"`,
    quarantined ones `quarantined="true"`.
    """
    lines = [f'<skills count="{len(skills)}">']
    for s in skills:
        attrs = (
            f'id={quoteattr(s.id)} section={quoteattr(s.section)} helpful="{s.helpful_count}" '
            f'harmful="{s.harmful_count}" neutral="{s.neutral_count}" used="{s.used_count}"'
        )
        if not s.active:
            attrs += ' active="false"'
        elif s.quarantine is not None:
            attrs += ' quarantined="true"'
        lines.append(f"<skill {attrs}>")
        lines.append(f"<keywords>{escape(', '.join(s.keywords))}</keywords>")
        lines.append(f"<issue>{escape(s.issue)}</issue>")
        if s.insight:
            lines.append(f"<insight>{escape(s.insight)}</insight>")
        lines.append("</skill>")
    lines.append("</skills>")
    return "\n".join(lines)


def skillbook_stats(skills: Sequence[Skill], operations: int, sections: Sequence[Section]) -> dict[str, Any]:
    """Counts for dashboards and logs: skills by section and state, tags, occurrences, cached vectors."""
    active = [s for s in skills if s.active]
    return {
        "skills": len(skills),
        "active": len(active),
        "inactive": len(skills) - len(active),
        "quarantined": sum(1 for s in active if s.quarantine is not None),
        "sections": {sec: sum(1 for s in active if s.section == sec) for sec in sections},
        "tags": {
            "helpful": sum(s.helpful_count for s in skills),
            "harmful": sum(s.harmful_count for s in skills),
            "neutral": sum(s.neutral_count for s in skills),
        },
        "occurrences": sum(len(s.occurrences) for s in skills),
        "operations": operations,
        "embedded": sum(1 for s in skills if s.embedding is not None),
    }
