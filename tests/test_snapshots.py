"""Snapshots (inline-snapshot) of what the models and the user read: the prompts, `as_prompt`, the markdown export
and `ace-eval inspect`. A change to any of them shows here as a diff; accept it with
`pytest tests/test_snapshots.py --inline-snapshot=fix` once it is the change you meant.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from _e2e_support import scripted_injections
from click.testing import CliRunner
from inline_snapshot import snapshot

from ace import InsightSource, Skillbook
from ace.core.rendering import render_skills_xml
from ace.deduplication.prompts import DEDUP_PROMPT, dedup_task_prompt
from ace.reflector.prompts import REFLECTOR_PROMPT, RR_PROMPT, reflector_task_prompt, rr_task_prompt
from ace.reflector.reflection import Reflection, SkillTag
from ace.reflector.trace_view import TraceView, skills_in_context
from ace.skill_manager.prompts import SKILL_MANAGER_PROMPT, sm_task_prompt
from ace.steps.export_markdown import export_markdown
from ace_eval.cli import main
from ace_eval.e2e import runner
from ace_eval.e2e.config import E2ESettings

DEMO = Path(__file__).resolve().parents[1] / "examples" / "demo-collection"
SOURCE = InsightSource(
    trace_uid="demo-airline:cancel-business-trial-0",
    source_system="demo-airline",
    trace_id="cancel-business-trial-0",
    sample_question="Cancel my business-class reservation.",
    epoch=1,
)


def book() -> Skillbook:
    """Two context skills (one tagged), one harness skill and one removed skill."""
    sb = Skillbook()
    sb.add_skill(
        "context",
        "In tau-airline cancellations, a business-class ticket is refundable whatever its age.",
        ["airline", "cancellation"],
        insight="Check the cabin class before refusing a cancellation.",
        insight_source=SOURCE,
    )
    sb.add_skill(
        "context",
        "Changing a reservation's cabin applies to every passenger and every flight of it.",
        ["airline", "Cabin Class"],
        insight="Say that cabin changes are all-or-nothing before offering options.",
        insight_source=SOURCE,
    )
    sb.add_skill("harness", "The tau2 runner retries Bedrock 429 errors with a 60 s backoff.", ["tau2", "rate_limit"])
    gone = sb.add_skill("harness", "The old importer dropped tool results longer than 4 KB.", ["importer"])
    sb.tag_skill("context-00001", 1)
    sb.remove_skill(gone.id, "fixed in the importer")
    return sb


def demo_trace() -> dict[str, object]:
    line = (DEMO / "traces.jsonl").read_text(encoding="utf-8").splitlines()[0]
    trace: dict[str, object] = json.loads(line)
    trace["skills_in_context"] = ["context-00001", "context-00009"]
    return trace


def test_system_prompts() -> None:
    assert SKILL_MANAGER_PROMPT == snapshot("""\
You are the skill manager of ACE (Agentic Context Engineering). A reflector has analysed one trace of an AI agent. Turn its reflection into a few precise, atomic edits of the skillbook: the flat set of skills that is rendered into the agent's prompt on later runs. You change the skillbook only through your tools. When you are done, reply with one short sentence saying what you changed, or why nothing needed to change.

## What a skill is
- section: exactly one of two values, "context" or "harness". This is the only taxonomy of sections.
  - context: guidance the agent itself should follow (how to call an API, what to check, what to tell the user). A context skill MUST have an insight.
  - harness: a problem of the runtime around the agent (benchmark runner, tool server, rate limits, a broken environment) that the agent cannot fix by acting differently. A harness skill may have no insight (a pure record of the issue); give one only when a workaround exists.
  - insight is required if and only if section is "context".
- keywords: the fine-grained categories. section is only the binary context|harness split; the finer categories (domain, subsystem, API family, behaviour category) go in keywords, never in section. On add_skill keywords are required: 1-5 short, stable, lowercase labels such as "airline", "booking_api", "cabin_class", "refund_policy". Reuse labels that existing skills already carry; do not invent synonyms.
- issue: required on EVERY add_skill and EVERY update_skill. Prose that states the problem AND where it applies, inline, e.g. "In tau-airline's update_reservation_flights API, cabin class is a single parameter applied to all legs and passengers; there is no per-leg or per-passenger cabin." Start narrow: one domain, one API or one endpoint, only what this trace shows. update_skill replaces the whole issue, so always pass the complete text (copy the current issue when only the insight or keywords change).
- insight: the imperative action the agent should take, e.g. "Before offering per-leg upgrades, tell the user that cabin class is all-or-nothing, then offer only all-or-nothing options."

## How to work
1. Search before add, always: call search_skills (query = the problem, domain and API) before EVERY add_skill.
2. Same issue, same context already covered: do not add. Call update_skill only if the reflection adds something the skill lacks.
3. Recursive widening: if search_skills returns a skill whose issue semantically overlaps this one but comes from another domain or API, call update_skill on that skill with a broader issue that covers both contexts (e.g. "In airline and retail order-modification APIs, ...") instead of creating a near-duplicate skill. Scope grows only this way, one observed context at a time.
4. When you widen or merge a skill, update its keywords too and pass the complete list: keep the existing labels that still fit, add the genuinely new ones (such as the new domain), drop stale labels that no longer fit.
5. Only when nothing overlaps, call add_skill with a narrow issue.
6. Apply every proposed skill tag with tag_skill: delta 1 = helpful, -1 = harmful, 0 = neutral.
7. Soft delete: call remove_skill, with the reason, only for a skill that is harmful (it misled the agent) or outdated (the environment changed). Removal is soft: the skill becomes inactive and is excluded from the active skills the agent sees, but its audit chain is preserved. Never remove a skill to merge it; widen it instead.
8. A refused call comes back with the reason: fix the arguments and call again; never repeat it unchanged.
9. Few, high-value edits: a generic lesson ("be careful", "follow the policy") is not a skill. If the reflection teaches nothing new, change nothing.
""")
    assert REFLECTOR_PROMPT == snapshot("""\
You are the reflector of ACE (Agentic Context Engineering). You read one trace of an AI agent doing a task (a customer-service conversation with tool calls, for example) and explain what went wrong or right, why, and the one lesson worth keeping. A skill manager turns your reflection into skills rendered into the agent's prompt on later runs, so be precise and grounded in the trace: quote message numbers, tool names and arguments; never invent events the trace does not show.

## What to return
- error_identification: what went wrong, concretely: the message number, the tool call or the reply, and what was wrong with it. If nothing went wrong, say "none" and name what the agent did right.
- root_cause_analysis: why it went wrong: the policy rule, API constraint, missing check or misread user request behind the mistake (not a restatement of the mistake). For a successful trace: why it worked.
- correct_approach: what the agent should have done instead, step by step where it matters (which tool, which arguments, what to ask or tell the user, in which order).
- key_insight: ONE reusable lesson, an imperative the agent can follow next time in other tasks of the same domain. Name the tool, API or policy rule it applies to; no user names, reservation ids or amounts of this trace. Not a platitude ("be careful", "follow the policy").
- skill_tags: a verdict for each skill of <skills_in_context> that the trace shows the agent actually followed or ignored: "helpful" (following it helped), "harmful" (it misled the agent), "neutral" (it applied but made no difference). Only ids listed in <skills_in_context>; no tag for a skill the trace gives no evidence about; an empty list when no skill was in context.

Judge by the outcome: the reward, the feedback and, when given, the ground truth (the actions a correct run takes) say what success meant; compare the agent's tool calls with them. When <grader_diff> is given, the grader has already compared them: it names each missing, extra or different action, the argument that differs with both values, and the required outputs never said. Build the reflection on those differences and name the tool and argument concerned. A successful trace still gets a reflection: what worked and why, so that the lesson can be kept.
""")
    assert RR_PROMPT == snapshot("""\
You are the recursive reflector of ACE (Agentic Context Engineering). You investigate one trace of an AI agent doing a task and explain what went wrong or right, why, and the one lesson worth keeping. A skill manager turns your reflection into skills rendered into the agent's prompt on later runs.

The trace is too long to read at once: you see its outline, and read it through your tools.
- find_errors(): tool results that are errors, exceptions or policy refusals. Start here, after <grader_diff> when the prompt has one (the grader's comparison of the agent's actions with the gold).
- list_messages(start, end): one line per message; read_message(index) for a message in full.
- list_tool_calls(name): every tool call with its arguments and result, optionally of one tool.
- execute_code(code): run Python (standard library) over the trace to compute what reading cannot: totals, counts, comparisons of the agent's calls with the ground truth. `trace` (a dict) and `messages` (its list) are defined; print what you need, or end with an expression.
- read_skill(skill_id) and search_skillbook(query): the learned skills, to judge the skills that were in context and to see whether a lesson is already known.

Work like an investigator: form a hypothesis from the outcome, check it against the messages, verify numbers with execute_code. Do not re-read what you have already seen. You have a limited number of steps; on the last one your tools are withdrawn, so return the reflection (final_result) as soon as you are sure.

## What to return
- error_identification: what went wrong, concretely: the message number, the tool call or the reply, and what was wrong with it. If nothing went wrong, say "none" and name what the agent did right.
- root_cause_analysis: why it went wrong: the policy rule, API constraint, missing check or misread user request behind the mistake (not a restatement of the mistake). For a successful trace: why it worked.
- correct_approach: what the agent should have done instead, step by step where it matters (which tool, which arguments, what to ask or tell the user, in which order).
- key_insight: ONE reusable lesson, an imperative the agent can follow next time in other tasks of the same domain. Name the tool, API or policy rule it applies to; no user names, reservation ids or amounts of this trace. Not a platitude ("be careful", "follow the policy").
- skill_tags: a verdict for each skill of <skills_in_context> that the trace shows the agent actually followed or ignored: "helpful" (following it helped), "harmful" (it misled the agent), "neutral" (it applied but made no difference). Only ids listed in <skills_in_context>; no tag for a skill the trace gives no evidence about; an empty list when no skill was in context.

Judge by the outcome: the reward, the feedback and, when given, the ground truth (the actions a correct run takes) say what success meant; compare the agent's tool calls with them. When <grader_diff> is given, the grader has already compared them: it names each missing, extra or different action, the argument that differs with both values, and the required outputs never said. Build the reflection on those differences and name the tool and argument concerned. A successful trace still gets a reflection: what worked and why, so that the lesson can be kept.
""")
    assert DEDUP_PROMPT == snapshot("""\
You maintain the skillbook of ACE (Agentic Context Engineering): a flat set of skills, each an issue (a problem and where it applies, in prose), an insight (the imperative action; required for section "context", optional for "harness"), and 1-5 keywords (short lowercase labels). An embedding search found two skills of the same section that look alike. Decide what to do with the pair, with exactly one decision:

- MergeDecision: both describe the same problem (possibly in different domains or APIs). Keep one (keep_id: usually the one with more occurrences or helpful tags) and give its complete merged issue (covering every context of both), insight and keywords; the other is deactivated as "merged into" the kept one.
- DeleteDecision: one skill says nothing the other does not, or it is wrong or harmful (more harmful than helpful tags). Give remove_id; it is deactivated, its history kept.
- UpdateDecision: they are different problems but one is worded so broadly or vaguely that it overlaps the other. Rewrite that one (skill_id, its complete new issue; keywords / insight only if they change) so the two are clearly distinct.
- KeepDecision: they are different problems and both are well scoped. Nothing changes and the pair is not asked again.

Only use the two skill ids of the pair. Prefer KEEP when in doubt: a wrong merge loses knowledge. Give the reason in one sentence.\
""")


def test_skill_manager_task_prompt() -> None:
    sb = book()
    reflection = Reflection(
        error_identification="The agent refused to cancel a business-class ticket.",
        root_cause_analysis="It applied the 24-hour rule of basic economy to every cabin.",
        correct_approach="Check the cabin class, then cancel with a refund.",
        key_insight="Business-class tickets are refundable whatever their age.",
        skill_tags=[
            SkillTag(skill_id="context-00001", tag="helpful"),
            SkillTag(skill_id="harness-00002", tag="harmful"),
        ],
    )
    relevant = render_skills_xml(sb.skills()[:2])
    assert sm_task_prompt([reflection], source=SOURCE, skillbook=sb, relevant_skills_xml=relevant) == snapshot("""\
<trace>
source_system: demo-airline
trace_id: cancel-business-trial-0
epoch: 1
task: Cancel my business-class reservation.
</trace>

<reflections>
<reflection index="1">
error_identification: The agent refused to cancel a business-class ticket.
root_cause_analysis: It applied the 24-hour rule of basic economy to every cabin.
correct_approach: Check the cabin class, then cancel with a refund.
key_insight: Business-class tickets are refundable whatever their age.
</reflection>
</reflections>

<proposed_skill_tags>
- context-00001: helpful -> tag_skill(skill_id="context-00001", delta=1)
- harness-00002: harmful (skill was removed: skip it)
</proposed_skill_tags>

<relevant_skills>
<skills count="2">
<skill id="context-00001" section="context" helpful="1" harmful="0" neutral="0" used="1">
<keywords>airline, cancellation</keywords>
<issue>In tau-airline cancellations, a business-class ticket is refundable whatever its age.</issue>
<insight>Check the cabin class before refusing a cancellation.</insight>
</skill>
<skill id="context-00002" section="context" helpful="0" harmful="0" neutral="0" used="0">
<keywords>airline, cabin_class</keywords>
<issue>Changing a reservation's cabin applies to every passenger and every flight of it.</issue>
<insight>Say that cabin changes are all-or-nothing before offering options.</insight>
</skill>
</skills>
</relevant_skills>

Update the skillbook from these reflections: apply the proposed tags, search before any add, widen an overlapping skill rather than adding a near-duplicate, then reply with a one-sentence summary.\
""")


def test_reflector_task_prompts() -> None:
    sb, trace = book(), demo_trace()
    in_context = skills_in_context(trace, sb)
    assert reflector_task_prompt(trace, in_context, max_tool_result_chars=400) == snapshot("""\
<task>
You are li_wei_2093 and want to cancel reservation R8DN4C to Boston: your meeting moved online.
</task>

<conversation messages="13" tool_calls="3" failed_tool_calls="0">
[0] system:
# Airline customer service policy (demo)

Now is 2024-05-15 15:00 EST. You help customers book, change and cancel flight reservations, using the tools only.

- Before any action that changes a reservation (booking, changing flights or cabin, adding bags, changing
  passengers, cancelling), list what you will do and the price, and wait for the customer's explicit "yes".
- Make one tool call at a time, and do not answer the customer in the same turn as a tool call.
- Identify the customer by user id first; then ask for the reservation id when the request concerns one.
- Cabin: every passenger of a reservation flies in the same cabin on every flight. An upgrade applies to the
  whole reservation and costs the fare difference for every passenger.
- Changing flights: not allowed for basic economy. Origin, destination and trip type stay the same. The
  customer pays or is refunded with one gift card or credit card from their profile: ask which one.
- Bags: bags can be added, never removed; each bag over the free allowance costs $50.
- Passengers: names and dates of birth can be changed, the number of passengers cannot.
- Cancelling: allowed within 24 hours of booking, when the airline cancelled the flight, for business
  reservations, or with travel insurance when the reason is health or weather. Otherwise refuse.
- Compensation: only for silver or gold members, insured or business travellers who complain about a
  cancelled or delayed flight and ask for it. Never offer it on your own.
- Transfer to a human agent only when the request is outside what your tools and this policy allow.

[1] user: Hello, I'd like to cancel my trip to Boston. User id li_wei_2093.
[2] assistant:
  -> call get_user_details({"user_id": "li_wei_2093"}) id=call_cb0_1
[3] tool result of get_user_details (call call_cb0_1):
{"user_id": "li_wei_2093", "name": {"first_name": "Li", "last_name": "Wei"}, "membership": "gold", "payment_methods": {"credit_card_3308714": {"id": "credit_card_3308714", "source": "credit_card", "brand": "visa", "last_four": "2291"}}, "reservations": ["R8DN4C"]}
[4] assistant: Thank you. Is it reservation R8DN4C (SFO to BOS on May 21)? And may I ask the reason for cancelling?
[5] user: Yes, that one. The meeting was moved online, so I don't need to fly.
[6] assistant:
  -> call get_reservation_details({"reservation_id": "R8DN4C"}) id=call_cb0_2
[7] tool result of get_reservation_details (call call_cb0_2):
{"reservation_id": "R8DN4C", "user_id": "li_wei_2093", "origin": "SFO", "destination": "BOS", "flight_type": "one_way", "cabin": "business", "flights": [{"flight_number": "HAT207", "date": "2024-05-21", "origin": "SFO", "destination": "BOS", "price": 1240}], "passen
[... 113 characters truncated ...]
t_card_3308714", "amount": 1240}], "created_at": "2024-05-02T09:40:11", "total_baggages": 2, "nonfree_baggages": 0, "insurance": "no"}
[8] assistant: R8DN4C is a business reservation, which can be cancelled at any time. I will cancel the whole trip (HAT207, SFO to BOS, May 21, 1 passenger) and refund $1240 to your Visa ending 2291 within 5-7 business days. Do you confirm (yes/no)?
[9] user: Yes.
[10] assistant:
  -> call cancel_reservation({"reservation_id": "R8DN4C"}) id=call_cb0_3
[11] tool result of cancel_reservation (call call_cb0_3):
{"reservation_id": "R8DN4C", "user_id": "li_wei_2093", "origin": "SFO", "destination": "BOS", "flight_type": "one_way", "cabin": "business", "flights": [{"flight_number": "HAT207", "date": "2024-05-21", "origin": "SFO", "destination": "BOS", "price": 1240}], "passen
[... 136 characters truncated ...]
t": 1240}], "created_at": "2024-05-02T09:40:11", "total_baggages": 2, "nonfree_baggages": 0, "insurance": "no", "status": "cancelled"}
[12] assistant: R8DN4C is cancelled; the refund of $1240 will reach your card in 5-7 business days.
</conversation>

<outcome>
reward: 1.0
feedback: reward 1: the final database matches the expected one
</outcome>

<ground_truth>
{
 "actions": [
  {
   "name": "cancel_reservation",
   "kwargs": {
    "reservation_id": "R8DN4C"
   }
  }
 ],
 "outputs": []
}
</ground_truth>

<grader_diff>
reward 1: 1 of 1 gold actions made exactly; no difference from the gold.
- final database: equals the one the gold actions produce
</grader_diff>

<skills_in_context>
<skills count="1">
<skill id="context-00001" section="context" helpful="1" harmful="0" neutral="0" used="1">
<keywords>airline, cancellation</keywords>
<issue>In tau-airline cancellations, a business-class ticket is refundable whatever its age.</issue>
<insight>Check the cabin class before refusing a cancellation.</insight>
</skill>
</skills>
(also listed, but removed or unknown now, do not tag: context-00009)
</skills_in_context>

Reflect on this trace and return the reflection.\
""")
    view = TraceView.from_trace(trace)
    assert rr_task_prompt(trace, view, in_context, index_lines=6, width=80, max_requests=12) == snapshot("""\
<task>
You are li_wei_2093 and want to cancel reservation R8DN4C to Boston: your meeting moved online.
</task>

<outcome>
reward: 1.0
feedback: reward 1: the final database matches the expected one
</outcome>

<ground_truth>
{
 "actions": [
  {
   "name": "cancel_reservation",
   "kwargs": {
    "reservation_id": "R8DN4C"
   }
  }
 ],
 "outputs": []
}
</ground_truth>

<grader_diff>
reward 1: 1 of 1 gold actions made exactly; no difference from the gold.
- final database: equals the one the gold actions produce
</grader_diff>

<outline messages="13" tool_calls="3" failed_tool_results="0">
tools called: get_user_details x1, get_reservation_details x1, cancel_reservation x1
[0] system: # Airline customer service policy (demo) Now is 2024-05-15 15:00 EST. You hel...
[1] user: Hello, I'd like to cancel my trip to Boston. User id li_wei_2093.
[2] assistant: -> get_user_details({"user_id": "li_wei_2093"})
[3] tool get_user_details: {"user_id": "li_wei_2093", "name": {"first_name": "Li", "last_name": "Wei"}, ...
[4] assistant: Thank you. Is it reservation R8DN4C (SFO to BOS on May 21)? And may I ask the...
[5] user: Yes, that one. The meeting was moved online, so I don't need to fly.
... 7 more messages: list_messages(6, 13)
</outline>

<skills_in_context>
<skills count="1">
<skill id="context-00001" section="context" helpful="1" harmful="0" neutral="0" used="1">
<keywords>airline, cancellation</keywords>
<issue>In tau-airline cancellations, a business-class ticket is refundable whatever its age.</issue>
<insight>Check the cabin class before refusing a cancellation.</insight>
</skill>
</skills>
(also listed, but removed or unknown now, do not tag: context-00009)
</skills_in_context>

Investigate this trace with your tools, then return the reflection. You have 12 model requests in all, this one included; the last one has no tools.\
""")


def test_dedup_task_prompt() -> None:
    first, second = book().skills()[:2]
    assert dedup_task_prompt(first, second, 0.912) == snapshot("""\
<pair similarity="0.912" section="context">
<skills count="2">
<skill id="context-00001" section="context" helpful="1" harmful="0" neutral="0" used="1">
<keywords>airline, cancellation</keywords>
<issue>In tau-airline cancellations, a business-class ticket is refundable whatever its age.</issue>
<insight>Check the cabin class before refusing a cancellation.</insight>
</skill>
<skill id="context-00002" section="context" helpful="0" harmful="0" neutral="0" used="0">
<keywords>airline, cabin_class</keywords>
<issue>Changing a reservation's cabin applies to every passenger and every flight of it.</issue>
<insight>Say that cabin changes are all-or-nothing before offering options.</insight>
</skill>
</skills>
<occurrences>context-00001: 2, context-00002: 1</occurrences>
</pair>

Decide: MERGE, DELETE, UPDATE or KEEP for context-00001 and context-00002.\
""")


def test_as_prompt() -> None:
    assert book().as_prompt() == snapshot("""\
## context
- [context-00001]
Keywords: airline, cancellation
Issue: In tau-airline cancellations, a business-class ticket is refundable whatever its age.
Insight: Check the cabin class before refusing a cancellation.
- [context-00002]
Keywords: airline, cabin_class
Issue: Changing a reservation's cabin applies to every passenger and every flight of it.
Insight: Say that cabin changes are all-or-nothing before offering options.
## harness
- [harness-00001]
Keywords: tau2, rate_limit
Issue: The tau2 runner retries Bedrock 429 errors with a 60 s backoff.\
""")


def test_markdown_export() -> None:
    assert export_markdown(book(), title="Airline skills") == snapshot("""\
# Airline skills

**3 active skills** (2 context, 1 harness) · 1 inactive · 6 occurrences · tags: 1 helpful, 0 harmful, 0 neutral

## Context (2)

### `context-00001`

- **Keywords:** `airline`, `cancellation`
- **Issue:** In tau-airline cancellations, a business-class ticket is refundable whatever its age.
- **Insight:** Check the cabin class before refusing a cancellation.
- **Taught by:** demo-airline:cancel-business-trial-0 (epoch 1)
- **Counters:** used 1 · helpful 1 · harmful 0 · neutral 0 · harmful traces 0 · occurrences 2

### `context-00002`

- **Keywords:** `airline`, `cabin_class`
- **Issue:** Changing a reservation's cabin applies to every passenger and every flight of it.
- **Insight:** Say that cabin changes are all-or-nothing before offering options.
- **Taught by:** demo-airline:cancel-business-trial-0 (epoch 1)
- **Counters:** used 0 · helpful 0 · harmful 0 · neutral 0 · harmful traces 0 · occurrences 1

## Harness (1)

### `harness-00001`

- **Keywords:** `tau2`, `rate_limit`
- **Issue:** The tau2 runner retries Bedrock 429 errors with a 60 s backoff.
- **Counters:** used 0 · helpful 0 · harmful 0 · neutral 0 · harmful traces 0 · occurrences 1

## Inactive skills (1)

### `harness-00002` (harness, removed)

- **Removed:** fixed in the importer
- **Keywords:** `importer`
- **Issue:** The old importer dropped tool results longer than 4 KB.
- **Counters:** used 0 · helpful 0 · harmful 0 · neutral 0 · harmful traces 0 · occurrences 2
""")


def _stable(text: str) -> str:
    """Inspect's output without what changes from run to run: the run id and the timings."""
    text = re.sub(r"run_[0-9a-f]{12}", "run_<id>", text)
    return re.sub(r"\d+\.\d+ ?(s|ms)\b", r"<t>\1", text)


def test_inspect_output(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("ACE_MODEL", "ACE_AGENT_MODEL", "ACE_REFLECTOR_MODEL", "ACE_SKILL_MANAGER_MODEL", "ACE_USER_MODEL"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.delenv("ACE_EMBEDDING_MODEL", raising=False)
    settings = E2ESettings(traces=DEMO, no_benchmark=True, output_dir=tmp_path, max_workers=1, limit=2)
    folder = runner.run_e2e(settings, injections=scripted_injections()).folder.path
    result = CliRunner().invoke(main, ["inspect", str(folder)])
    assert result.exit_code == 0, result.output
    assert _stable(result.output.replace(str(tmp_path), "<tmp>")) == snapshot("""\
Run run_<id> (completed): 2 samples, 0 errors
Skillbook: 2 active skills from <tmp>/run_<id>/skillbook.json
Models: agent=none (a replay of --traces: no agent ran), reflector=local, skill_manager=local, user=none (a replay of --traces: no agent ran), embedding=local
Steps: redact 2 x <t>s (<t>ms each), reflect 2 x <t>s (<t>ms each), update 2 x <t>s (<t>ms each), quarantine 2 x <t>s (<t>ms each), checkpoint 2 x <t>s (<t>ms each), export_markdown 1 x <t>s (<t>ms each), persist 1 x <t>s (<t>ms each)

[1] demo-airline:cancel-business-trial-0  epoch 0  ok (<t>s)
    reflection: Check the policy first (task 786).
    reflect <t>s: 0 tool calls, 1 request, 732+44 tokens
    sm.session <t>s: 2 tool calls, 3 requests, 505+96 tokens
      search_skills(query=…, top_k=5) -> []
      add_skill(section='context', issue=…, keywords=[2], insight=…) -> context-00001
    operations: ADD context-00001
    skills changed: context-00001

[2] demo-airline:cancel-basic-economy-trial-0  epoch 0  ok (<t>s)
    reflection: Check the policy first (task 580).
    reflect <t>s: 0 tool calls, 1 request, 748+43 tokens
    sm.session <t>s: 2 tool calls, 3 requests, 689+96 tokens
      search_skills(query=…, top_k=5) -> ['context-00001']
      add_skill(section='context', issue=…, keywords=[2], insight=…) -> context-00002
    operations: ADD context-00002
    skills changed: context-00002
""")
