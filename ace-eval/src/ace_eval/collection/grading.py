"""How a run differs from the gold: the grader's verdict as data (`GraderReport`, a trace's `grader` field).

A benchmark with gold actions (tau-bench: tool name + arguments) and required outputs knows more than
"reward 0": which gold action the agent never made, which one it made with another argument (and both
values), which action it made that the gold does not, and which required output it never said. The
report holds that as typed data plus a rendered `text`, which is what the reflectors read.

Matching: the agent's tool calls whose result is not an error are matched to the gold actions of the same
tool, exact matches first, then each remaining gold action to the same-tool call with the fewest differing
arguments. Write actions (those that change the database: not `get_*`, `search_*`, `list_*`, `find_*`,
`calculate`, `think`, `transfer_to_human_agents`) matter most and come first; other calls are reported only
when missing or different.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, JsonValue

from ace.reflector.trace_view import TraceView

__all__ = [
    "READ_TOOL_PREFIXES",
    "RESPOND_ACTION",
    "ActionDiff",
    "AgentAction",
    "ArgumentDiff",
    "DatabaseVerdict",
    "GraderReport",
    "agent_actions",
    "diff_against_gold",
    "find_outputs",
    "is_write_tool",
    "render_report",
]

RESPOND_ACTION = "respond"
"""The name tau-bench gives an agent's reply to the user when it is logged as an action (never a gold action)."""
READ_TOOL_PREFIXES = ("get_", "search_", "list_", "find_")
_NON_WRITE_TOOLS = frozenset({"calculate", "think", "transfer_to_human_agents"})
_VALUE_CHARS = 80
_CALL_CHARS = 160
_MAX_ARGUMENT_DIFFS = 6

DatabaseVerdict = Literal["matches", "differs", "unknown"]
_STRICT = ConfigDict(frozen=True, extra="forbid", strict=True)


def is_write_tool(name: str) -> bool:
    """Whether a tool changes the database: everything but reads (`get_*`, `search_*`, `list_*`, `find_*`),
    `calculate`, `think` and `transfer_to_human_agents`."""
    return not (name.startswith(READ_TOOL_PREFIXES) or name in _NON_WRITE_TOOLS)


class ArgumentDiff(BaseModel):
    """One argument (or nested field) whose value differs from the gold."""

    model_config = _STRICT
    path: str
    """`cabin`, `flights[1].date`, `payment_methods[0].amount`."""
    given: JsonValue = None
    gold: JsonValue = None
    absent: Literal["given", "gold"] | None = None
    """Which side lacks the argument altogether (`None`: both have it)."""

    def render(self) -> str:
        given = "(not given)" if self.absent == "given" else _value(self.given)
        gold = "(not in the gold)" if self.absent == "gold" else _value(self.gold)
        return f"{self.path}: gave {given}, gold {gold}"


class ActionDiff(BaseModel):
    """A gold action the agent missed or made differently, or an action it made that the gold does not."""

    model_config = _STRICT
    kind: Literal["missing", "extra", "different"]
    tool: str
    write: bool
    """Whether the tool changes the world (these decide the final database)."""
    gold: dict[str, JsonValue] | None = None
    """The gold action's arguments (`None` for an extra action)."""
    given: dict[str, JsonValue] | None = None
    """The agent's arguments: of the matched call, of the closest failed attempt for a missing action, or `None`."""
    message_index: int | None = None
    """The assistant message that made the call (the failed attempt for a missing action)."""
    gold_index: int | None = None
    """Position among the gold actions."""
    arguments: list[ArgumentDiff] = Field(default_factory=list)
    """For a different action (or a failed attempt at a missing one): the arguments that differ."""
    error: str | None = None
    """For a missing action the agent attempted: the error its attempt got."""

    def render(self) -> str:
        at = f" (message [{self.message_index}])" if self.message_index is not None else ""
        kind = "write" if self.write else "call"
        shown = self.arguments[:_MAX_ARGUMENT_DIFFS]
        more = f"; and {len(self.arguments) - len(shown)} more" if len(self.arguments) > len(shown) else ""
        diffs = "; ".join(f"{self.tool}.{a.render()}" for a in shown) + more
        if self.kind == "different":
            return f"different {kind} {self.tool}{at}: {diffs}"
        if self.kind == "extra":
            return f"extra {kind} {_call(self.tool, self.given)}{at}: the gold actions do not make this call"
        line = f"missing {kind} {_call(self.tool, self.gold)}: the agent never made it"
        if self.error is not None:
            line += f"; its attempt{at} failed with {_one_line(self.error, _VALUE_CHARS)!r}"
            line += f" and differs in {diffs}" if diffs else " with the gold arguments"
        return line


class GraderReport(BaseModel):
    """The grader's comparison of a run with the gold, as data and as the `text` a reflector reads."""

    model_config = _STRICT
    reward: float | None = Field(default=None, allow_inf_nan=False)
    database: DatabaseVerdict = "unknown"
    """Whether the final database equals the one the gold actions produce."""
    gold_actions: int = Field(default=0, ge=0)
    matched_actions: int = Field(default=0, ge=0)
    """Gold actions the agent made with exactly the gold arguments."""
    actions: list[ActionDiff] = Field(default_factory=list)
    """Write actions first, then other calls; extra calls that write nothing are not listed."""
    outputs: dict[str, bool] = Field(default_factory=dict)
    """Each required output and whether some reply of the agent said it."""
    text: str = ""
    """The whole report in words (what the reflectors get)."""

    @property
    def missing_outputs(self) -> list[str]:
        """The required outputs no reply said."""
        return [o for o, said in self.outputs.items() if not said]


@dataclass(frozen=True, kw_only=True)
class AgentAction:
    """One tool call of the agent, with its parsed arguments and whether it failed."""

    tool: str
    kwargs: dict[str, JsonValue]
    message_index: int
    error: str | None


def agent_actions(messages: Sequence[Mapping[str, object]]) -> list[AgentAction]:
    """The agent's tool calls in order; `error` holds the result of a call that failed (an error or exception)."""
    view = TraceView.from_trace({"messages": list(messages)})
    actions: list[AgentAction] = []
    for call in view.tool_calls:
        try:
            parsed = json.loads(call.arguments) if call.arguments else {}
        except json.JSONDecodeError:
            parsed = None
        kwargs: dict[str, JsonValue] = (
            _json_object(parsed) if isinstance(parsed, dict) else {"_unparsed_arguments": call.arguments}
        )
        failed = call.error_kind in ("error", "exception")
        actions.append(
            AgentAction(
                tool=call.name,
                kwargs=kwargs,
                message_index=call.message_index,
                error=(call.result or "") if failed else None,
            )
        )
    return actions


def diff_against_gold(
    messages: Sequence[Mapping[str, object]],
    gold: Sequence[Mapping[str, object]],
    *,
    outputs: Mapping[str, bool] | None = None,
    reward: float | None = None,
    database: DatabaseVerdict = "unknown",
) -> GraderReport:
    """Compare the agent's tool calls in `messages` with the `gold` actions (`{"name", "kwargs"}` each).

    `outputs` is the grader's outputs check (required output -> said); `database` its verdict on the final
    database, when known.
    """
    calls = agent_actions(messages)
    done = [c for c in calls if c.error is None]
    failed = [c for c in calls if c.error is not None]
    gold_list = [(i, str(g.get("name")), _json_object(g.get("kwargs"))) for i, g in enumerate(gold)]
    used: set[int] = set()
    unmatched: list[tuple[int, str, dict[str, JsonValue]]] = []
    matched = 0
    for i, name, kwargs in gold_list:  # exact matches first, so a retried call does not steal another's match
        k = next((k for k, c in enumerate(done) if k not in used and c.tool == name and _same(c.kwargs, kwargs)), None)
        if k is None:
            unmatched.append((i, name, kwargs))
        else:
            used.add(k)
            matched += 1
    diffs: list[ActionDiff] = []
    for i, name, kwargs in unmatched:
        same_tool = [
            (len(_argument_diffs(c.kwargs, kwargs)), k) for k, c in enumerate(done) if k not in used and c.tool == name
        ]
        if same_tool:
            k = min(same_tool)[1]
            used.add(k)
            diffs.append(_compared("different", name, i, kwargs, done[k]))
            continue
        attempts = [c for c in failed if c.tool == name]
        attempt = min(attempts, key=lambda c: len(_argument_diffs(c.kwargs, kwargs))) if attempts else None
        diffs.append(_compared("missing", name, i, kwargs, attempt))
    for k, call in enumerate(done):
        if k not in used and is_write_tool(call.tool):
            diffs.append(
                ActionDiff(
                    kind="extra", tool=call.tool, write=True, given=call.kwargs, message_index=call.message_index
                )
            )
    diffs.sort(key=lambda d: (not d.write, d.gold_index if d.gold_index is not None else len(gold_list)))
    report = GraderReport(
        reward=reward,
        database=database,
        gold_actions=len(gold_list),
        matched_actions=matched,
        actions=diffs,
        outputs=dict(outputs or {}),
    )
    return report.model_copy(update={"text": render_report(report)})


def render_report(report: GraderReport) -> str:
    """The report in words: the verdict, each differing action, the outputs not given, the database."""
    head = f"reward {report.reward:g}: " if report.reward is not None else ""
    writes = sum(1 for d in report.actions if d.write)
    differences = (
        f"{len(report.actions)} difference(s) from the gold, {writes} of them in write actions"
        if report.actions
        else "no difference from the gold"
    )
    if report.gold_actions:
        head += f"{report.matched_actions} of {report.gold_actions} gold actions made exactly; {differences}"
    elif report.actions:
        head += f"the gold makes no tool call; {differences}"
    else:
        head += "the gold makes no tool call and neither did the agent"
    lines = [head + "."]
    lines += [f"- {d.render()}" for d in report.actions]
    missing = report.missing_outputs
    if missing:
        lines.append(
            f"- required output(s) never said to the user: {', '.join(json.dumps(m) for m in missing)} "
            "(each must appear in a reply)"
        )
    elif report.outputs:
        lines.append("- every required output was said to the user")
    verdict = {
        "matches": "equals the one the gold actions produce",
        "differs": "differs from the one the gold actions produce",
        "unknown": "not compared by the grader for this run",
    }[report.database]
    lines.append(f"- final database: {verdict}")
    return "\n".join(lines)


# ------------------------------------------------------------------------------------------------ helpers


def _compared(
    kind: Literal["missing", "different"],
    tool: str,
    gold_index: int,
    gold: dict[str, JsonValue],
    call: AgentAction | None,
) -> ActionDiff:
    """A gold action against the agent's call of its tool (the matched call, or the closest failed attempt)."""
    return ActionDiff(
        kind=kind,
        tool=tool,
        write=is_write_tool(tool),
        gold=gold,
        given=None if call is None else call.kwargs,
        message_index=None if call is None else call.message_index,
        gold_index=gold_index,
        arguments=[] if call is None else _argument_diffs(call.kwargs, gold),
        error=None if call is None else call.error,
    )


def _json(value: object) -> JsonValue:
    """`value` as JSON data: mappings with string keys, lists for sequences, anything else as its `str`."""
    if value is None or isinstance(value, str | bool | int | float):
        return value
    if isinstance(value, Mapping):
        return _json_object(value)
    if isinstance(value, list | tuple):
        return [_json(v) for v in value]
    return str(value)


def _json_object(value: object) -> dict[str, JsonValue]:
    """A mapping as a JSON object (`{}` for anything else: an action without arguments)."""
    return {str(k): _json(v) for k, v in value.items()} if isinstance(value, Mapping) else {}


def _same(a: JsonValue, b: JsonValue) -> bool:
    return not _argument_diffs(a, b) if isinstance(a, dict) and isinstance(b, dict) else _equal(a, b)


def _equal(a: JsonValue, b: JsonValue) -> bool:
    """JSON equality with 1 == 1.0 (but True != 1)."""
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    if isinstance(a, int | float) and isinstance(b, int | float):
        return float(a) == float(b)
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_equal(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_equal(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


def _argument_diffs(given: JsonValue, gold: JsonValue, path: str = "") -> list[ArgumentDiff]:
    """The leaves where `given` differs from `gold`: dicts by key, equal-length lists by position.

    Keys the gold lacks count at the top level only: tools read the nested keys they know and ignore others
    (a flight given with its `origin` next to `flight_number` and `date` books the same flight).
    """
    if isinstance(given, dict) and isinstance(gold, dict):
        out: list[ArgumentDiff] = []
        extra = [k for k in given if k not in gold] if not path else []
        for key in list(gold) + extra:
            sub = f"{path}.{key}" if path else str(key)
            if key not in given:
                out.append(ArgumentDiff(path=sub, gold=gold[key], absent="given"))
            elif key not in gold:
                out.append(ArgumentDiff(path=sub, given=given[key], absent="gold"))
            else:
                out += _argument_diffs(given[key], gold[key], sub)
        return out
    if isinstance(given, list) and isinstance(gold, list) and len(given) == len(gold):
        return [
            d for i, (x, y) in enumerate(zip(given, gold, strict=True)) for d in _argument_diffs(x, y, f"{path}[{i}]")
        ]
    return [] if _equal(given, gold) else [ArgumentDiff(path=path or "(arguments)", given=given, gold=gold)]


def _value(value: JsonValue) -> str:
    return _one_line(json.dumps(value, ensure_ascii=False, default=str), _VALUE_CHARS)


def _call(tool: str, kwargs: Mapping[str, JsonValue] | None) -> str:
    arguments = ", ".join(f"{k}={json.dumps(v, ensure_ascii=False, default=str)}" for k, v in (kwargs or {}).items())
    return f"{tool}({_one_line(arguments)})"


def _one_line(text: str, width: int = _CALL_CHARS) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 3] + "..."


def find_outputs(outputs: Sequence[str], replies: Sequence[str]) -> dict[str, bool]:
    """For each required output: does it appear, lower-cased, in some reply lower-cased with commas removed?"""
    normalised = [reply.lower().replace(",", "") for reply in replies]
    return {output: any(output.lower() in reply for reply in normalised) for output in outputs}
