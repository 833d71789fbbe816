"""The skill manager's system prompt and the task prompt of one skill-manager session."""

from __future__ import annotations

from collections.abc import Sequence

from ace.core.insight_source import InsightSource
from ace.core.skillbook import Skillbook
from ace.reflector.reflection import Reflection, SkillTag

__all__ = ["SKILL_MANAGER_PROMPT", "SMALL_MODEL_SKILL_MANAGER_PROMPT", "sm_task_prompt"]

SKILL_MANAGER_PROMPT = """\
You are the skill manager of ACE (Agentic Context Engineering). A reflector has analysed one trace of an AI \
agent. Turn its reflection into a few precise, atomic edits of the skillbook: the flat set of skills that is \
rendered into the agent's prompt on later runs. You change the skillbook only through your tools. When you are \
done, reply with one short sentence saying what you changed, or why nothing needed to change.

## What a skill is
- section: exactly one of two values, "context" or "harness". This is the only taxonomy of sections.
  - context: guidance the agent itself should follow (how to call an API, what to check, what to tell the \
user). A context skill MUST have an insight.
  - harness: a problem of the runtime around the agent (benchmark runner, tool server, rate limits, a broken \
environment) that the agent cannot fix by acting differently. A harness skill may have no insight (a pure \
record of the issue); give one only when a workaround exists.
  - insight is required if and only if section is "context".
- keywords: the fine-grained categories. section is only the binary context|harness split; the finer \
categories (domain, subsystem, API family, behaviour category) go in keywords, never in section. On add_skill \
keywords are required: 1-5 short, stable, lowercase labels such as "airline", "booking_api", "cabin_class", \
"refund_policy". Reuse labels that existing skills already carry; do not invent synonyms.
- issue: required on EVERY add_skill and EVERY update_skill. Prose that states the problem AND where it applies, \
inline, e.g. "In tau-airline's update_reservation_flights API, cabin class is a single parameter applied to all \
legs and passengers; there is no per-leg or per-passenger cabin." Start narrow: one domain, one API or one \
endpoint, only what this trace shows. update_skill replaces the whole issue, so always pass the complete text \
(copy the current issue when only the insight or keywords change).
- insight: the imperative action the agent should take, e.g. "Before offering per-leg upgrades, tell the user \
that cabin class is all-or-nothing, then offer only all-or-nothing options."

## How to work
1. Search before add, always: call search_skills (query = the problem, domain and API) before EVERY add_skill.
2. Same issue, same context already covered: do not add. Call update_skill only if the reflection adds \
something the skill lacks.
3. Recursive widening: if search_skills returns a skill whose issue semantically overlaps this one but comes \
from another domain or API, call update_skill on that skill with a broader issue that covers both contexts \
(e.g. "In airline and retail order-modification APIs, ...") instead of creating a near-duplicate skill. Scope \
grows only this way, one observed context at a time.
4. When you widen or merge a skill, update its keywords too and pass the complete list: keep the existing \
labels that still fit, add the genuinely new ones (such as the new domain), drop stale labels that no longer fit.
5. Only when nothing overlaps, call add_skill with a narrow issue.
6. Apply every proposed skill tag with tag_skill: delta 1 = helpful, -1 = harmful, 0 = neutral.
7. Soft delete: call remove_skill, with the reason, only for a skill that is harmful (it misled the agent) or \
outdated (the environment changed). Removal is soft: the skill becomes inactive and is excluded from the active \
skills the agent sees, but its audit chain is preserved. Never remove a skill to merge it; widen it instead.
8. A refused call comes back with the reason: fix the arguments and call again; never repeat it unchanged.
9. Few, high-value edits: a generic lesson ("be careful", "follow the policy") is not a skill. If the \
reflection teaches nothing new, change nothing.
"""
"""The skill manager's instructions, covering every rule of the spec's "SM prompt rewrite" list."""


SMALL_MODEL_SKILL_MANAGER_PROMPT = """\
You keep a skillbook of short lessons for an AI customer-service agent. Turn the reflection into one skill with \
add_skill: issue = the agent's mistake, in the words of the reflection; insight = what the agent should do instead; \
keywords = one to three words naming the tool or the topic. If a relevant skill already teaches the same lesson, \
call tag_skill on it with delta 1 instead. Then reply with one sentence saying what you changed."""
"""The skill manager's system prompt for a small model (the embedded one): one instruction, because a 135M model
loses the rules of `SKILL_MANAGER_PROMPT` and copies its wording and the task's into the skill."""


def sm_task_prompt(
    reflections: Sequence[Reflection],
    *,
    source: InsightSource,
    skillbook: Skillbook,
    relevant_skills_xml: str,
    show_trace: bool = True,
) -> str:
    """The user prompt of one session: the trace, the reflections, the proposed tags, the relevant skills."""
    parts = [
        *([_trace_block(source)] if show_trace else []),
        "<reflections>\n"
        + "\n".join(
            f'<reflection index="{i}">\n{r.as_prompt_text() or "(empty)"}\n</reflection>'
            for i, r in enumerate(reflections, 1)
        )
        + "\n</reflections>",
        _tags_block([t for r in reflections for t in r.skill_tags], skillbook),
        "<relevant_skills>\n"
        + (relevant_skills_xml.strip() or "(none: no existing skill resembles these reflections)")
        + "\n</relevant_skills>",
        "Update the skillbook from these reflections: apply the proposed tags, search before any add, widen an "
        "overlapping skill rather than adding a near-duplicate, then reply with a one-sentence summary.",
    ]
    return "\n\n".join(parts)


def _trace_block(source: InsightSource) -> str:
    lines = [f"source_system: {source.source_system}", f"trace_id: {source.trace_id}"]
    if source.epoch is not None:
        lines.append(f"epoch: {source.epoch}")
    if source.sample_question:
        lines.append(f"task: {source.sample_question.strip()}")
    return "<trace>\n" + "\n".join(lines) + "\n</trace>"


def _tags_block(tags: Sequence[SkillTag], skillbook: Skillbook) -> str:
    """One line per proposed tag (the last verdict on a skill wins); tags on unknown or removed skills are marked."""
    latest = {t.skill_id: t for t in tags}
    if not latest:
        return "<proposed_skill_tags>\n(none)\n</proposed_skill_tags>"
    lines: list[str] = []
    for skill_id, tag in latest.items():
        skill = skillbook.get_skill(skill_id)
        if skill is None:
            lines.append(f"- {skill_id}: {tag.tag} (no such skill: skip it)")
        elif not skill.active:
            lines.append(f"- {skill_id}: {tag.tag} (skill was removed: skip it)")
        else:
            lines.append(f'- {skill_id}: {tag.tag} -> tag_skill(skill_id="{skill_id}", delta={tag.delta})')
    return "<proposed_skill_tags>\n" + "\n".join(lines) + "\n</proposed_skill_tags>"
