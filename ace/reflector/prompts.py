"""The reflectors' prompts: the simple reflector's (one call over the whole trace) and the recursive reflector's."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ace.core.rendering import render_skills_xml
from ace.reflector.trace_view import (
    SkillsInContext,
    TraceView,
    grader_block,
    neutralize_tags,
    render_ground_truth,
    render_outcome,
    render_trace,
    task_block,
)

__all__ = [
    "REFLECTOR_PROMPT",
    "RR_PROMPT",
    "SMALL_MODEL_REFLECTOR_PROMPT",
    "reflector_task_prompt",
    "rr_task_prompt",
    "skills_block",
]

_REFLECTION_FIELDS = """\
## What to return
- error_identification: what went wrong, concretely: the message number, the tool call or the reply, and what \
was wrong with it. If nothing went wrong, say "none" and name what the agent did right.
- root_cause_analysis: why it went wrong: the policy rule, API constraint, missing check or misread user \
request behind the mistake (not a restatement of the mistake). For a successful trace: why it worked.
- correct_approach: what the agent should have done instead, step by step where it matters (which tool, which \
arguments, what to ask or tell the user, in which order).
- key_insight: ONE reusable lesson, an imperative the agent can follow next time in other tasks of the same \
domain. Name the tool, API or policy rule it applies to; no user names, reservation ids or amounts of this \
trace. Not a platitude ("be careful", "follow the policy").
- skill_tags: a verdict for each skill of <skills_in_context> that the trace shows the agent actually \
followed or ignored: "helpful" (following it helped), "harmful" (it misled the agent), "neutral" (it applied \
but made no difference). Only ids listed in <skills_in_context>; no tag for a skill the trace gives no evidence \
about; an empty list when no skill was in context.

Judge by the outcome: the reward, the feedback and, when given, the ground truth (the actions a correct run \
takes) say what success meant; compare the agent's tool calls with them. When <grader_diff> is given, the \
grader has already compared them: it names each missing, extra or different action, the argument that differs \
with both values, and the required outputs never said. Build the reflection on those differences and name the \
tool and argument concerned. A successful trace still gets a \
reflection: what worked and why, so that the lesson can be kept.
"""

REFLECTOR_PROMPT = f"""\
You are the reflector of ACE (Agentic Context Engineering). You read one trace of an AI agent doing a task \
(a customer-service conversation with tool calls, for example) and explain what went wrong or right, why, and \
the one lesson worth keeping. A skill manager turns your reflection into skills rendered into the agent's \
prompt on later runs, so be precise and grounded in the trace: quote message numbers, tool names and \
arguments; never invent events the trace does not show.

{_REFLECTION_FIELDS}"""
"""System prompt of the simple reflector."""

SMALL_MODEL_REFLECTOR_PROMPT = """\
You review one task of an AI customer-service agent: the task, its outcome and how its tool calls differ from the \
correct ones. Explain in plain English what the agent did wrong (or right), why, what it should do instead, and one \
general lesson for next time. Write full sentences; name the tool or the policy rule; no names, ids or amounts."""
"""System prompt of the simple reflector for a small model (the embedded one): short, because a 135M model loses a
long prompt and copies its wording into the answer. Used with `SimpleReflector(conversation=False)`."""

RR_PROMPT = f"""\
You are the recursive reflector of ACE (Agentic Context Engineering). You investigate one trace of an AI \
agent doing a task and explain what went wrong or right, why, and the one lesson worth keeping. A skill manager \
turns your reflection into skills rendered into the agent's prompt on later runs.

The trace is too long to read at once: you see its outline, and read it through your tools.
- find_errors(): tool results that are errors, exceptions or policy refusals. Start here, after <grader_diff> \
when the prompt has one (the grader's comparison of the agent's actions with the gold).
- list_messages(start, end): one line per message; read_message(index) for a message in full.
- list_tool_calls(name): every tool call with its arguments and result, optionally of one tool.
- execute_code(code): run Python (standard library) over the trace to compute what reading cannot: totals, \
counts, comparisons of the agent's calls with the ground truth. `trace` (a dict) and `messages` (its list) are \
defined; print what you need, or end with an expression.
- read_skill(skill_id) and search_skillbook(query): the learned skills, to judge the skills that were in \
context and to see whether a lesson is already known.

Work like an investigator: form a hypothesis from the outcome, check it against the messages, verify numbers \
with execute_code. Do not re-read what you have already seen. You have a limited number of steps; on the last \
one your tools are withdrawn, so return the reflection (final_result) as soon as you are sure.

{_REFLECTION_FIELDS}"""
"""System prompt of the recursive reflector."""


def skills_block(in_context: SkillsInContext) -> str:
    """`<skills_in_context>`: the skills the agent saw, and the listed ids the skillbook no longer has."""
    if not in_context.skills and not in_context.missing:
        return (
            "<skills_in_context>\n(none: the agent had no skill in its context; skill_tags must be empty)\n"
            "</skills_in_context>"
        )
    lines = [render_skills_xml(in_context.skills)] if in_context.skills else ["(none still in the skillbook)"]
    if in_context.missing:
        lines.append(f"(also listed, but removed or unknown now, do not tag: {', '.join(in_context.missing)})")
    return "<skills_in_context>\n" + "\n".join(lines) + "\n</skills_in_context>"


def reflector_task_prompt(
    trace: Mapping[str, Any],
    in_context: SkillsInContext,
    *,
    max_tool_result_chars: int,
    max_system_chars: int = 8_000,
    conversation: bool = True,
) -> str:
    """The simple reflector's user prompt: the whole trace, then the skills that were in context.

    Without the conversation (a small model's prompt) an empty skills block is left out too: there is nothing to
    tag, and a small model copies its "(none: ...)" note into the reflection.
    """
    trace_text = render_trace(
        trace, max_tool_result_chars=max_tool_result_chars, max_system_chars=max_system_chars, conversation=conversation
    )
    skills = [skills_block(in_context)] if conversation or in_context.skills or in_context.missing else []
    return "\n\n".join([trace_text, *skills, "Reflect on this trace and return the reflection."])


def rr_task_prompt(
    trace: Mapping[str, Any],
    view: TraceView,
    in_context: SkillsInContext,
    *,
    index_lines: int,
    width: int,
    max_requests: int,
) -> str:
    """The recursive reflector's user prompt: task, outcome, ground truth, an outline of the trace, the skills."""
    names = ", ".join(f"{name} x{count}" for name, count in view.tool_names().most_common()) or "none"
    errors = len(view.errors) + len(view.orphan_errors)
    shown = min(len(view.messages), index_lines)
    outline = neutralize_tags("\n".join(view.message_line(i, width) for i in range(shown)))
    if shown < len(view.messages):
        outline += f"\n... {len(view.messages) - shown} more messages: list_messages({shown}, {len(view.messages)})"
    parts = [
        task_block(view.question),
        f"<outcome>\n{render_outcome(trace)}\n</outcome>",
    ]
    truth = render_ground_truth(trace)
    if truth is not None:
        parts.append(f"<ground_truth>\n{truth}\n</ground_truth>")
    parts += grader_block(trace)
    parts += [
        f'<outline messages="{len(view.messages)}" tool_calls="{len(view.tool_calls)}" failed_tool_results="{errors}">'
        f"\ntools called: {names}\n{outline}\n</outline>",
        skills_block(in_context),
        f"Investigate this trace with your tools, then return the reflection. You have {max_requests} model "
        "requests in all, this one included; the last one has no tools.",
    ]
    return "\n\n".join(parts)
