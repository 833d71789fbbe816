"""A grader's structured verdict, read from a trace: what the grounded reflector reflects on.

Two shapes travel in a trace (both written at import or collection time by `ace_eval`, which `ace` does not
import; this module reads them as plain JSON):

- `trace["grader"]`: the gold-action comparison (`ace_eval.e2e.grading.gold_diff.GraderReport` as a dict):
  `reward`, `database`, `actions` (`kind` missing / different / extra, `tool`, `write`, `gold`, `given`,
  `arguments` with `path`, `given`, `gold`, `absent`, and `error`), `outputs` (required output -> said).
  tau-bench traces and the demo collection carry it.
- `trace["metadata"]["reward_info"]`: tau2-bench's reward breakdown as the tau2 importer keeps it: `db_check`
  (`db_match`), `action_checks` (`action` `{name, arguments}`, `action_match`), `communicate_checks` (`info`,
  `met`), `nl_assertions` (`nl_assertion`, `met`, `justification`).

Each finding is one concrete item of the verdict (a tool, an argument, a sentence the user never heard), so a
reflection built from them names what the grader saw, and nothing else.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

__all__ = ["Finding", "FindingKind", "Verdict", "read_verdict"]

FindingKind = Literal[
    "missing_action", "wrong_arguments", "forbidden_write", "not_communicated", "policy_not_met", "database_differs"
]
_VALUE_CHARS = 60


@dataclass(frozen=True, kw_only=True)
class Finding:
    """One thing the grader says went wrong."""

    kind: FindingKind
    tool: str | None = None
    """The tool concerned (`None` for a sentence not said or a policy assertion)."""
    arguments: tuple[str, ...] = ()
    """Argument paths that differ (`cabin`, `flights[0].date`), or the arguments of a missing/forbidden call."""
    detail: str
    """The item in words: `payment_id: gave "credit_card_1", expected "gift_card_2"`."""
    expected: str = ""
    """What the gold does instead (`update_reservation_flights(payment_id="gift_card_2")`), when known."""
    error: str | None = None
    """The error the agent's attempt got (a missing action it tried)."""


@dataclass(frozen=True, kw_only=True)
class Verdict:
    """The grader's verdict on one trace: its reward and its findings (none on a success)."""

    source: Literal["gold_diff", "tau2"]
    reward: float | None
    findings: tuple[Finding, ...]


def read_verdict(trace: Mapping[str, Any]) -> Verdict | None:
    """The trace's structured verdict, or `None` when it has none (only a reward, or free-text feedback)."""
    reward = _number(trace.get("reward"))
    grader = trace.get("grader")
    if isinstance(grader, Mapping) and ("actions" in grader or "database" in grader):
        return Verdict(
            source="gold_diff",
            reward=reward if reward is not None else _number(grader.get("reward")),
            findings=tuple(_gold_diff_findings(grader)),
        )
    metadata = trace.get("metadata")
    info = metadata.get("reward_info") if isinstance(metadata, Mapping) else None
    if isinstance(info, Mapping) and any(k in info for k in _TAU2_KEYS):
        return Verdict(
            source="tau2",
            reward=reward if reward is not None else _number(info.get("reward")),
            findings=tuple(_tau2_findings(info)),
        )
    return None


_TAU2_KEYS = ("db_check", "action_checks", "communicate_checks", "nl_assertions")


# ------------------------------------------------------------------------------------ gold-action comparison
def _gold_diff_findings(grader: Mapping[str, Any]) -> list[Finding]:
    findings: list[Finding] = []
    for action in _objects(grader.get("actions")):
        tool = str(action.get("tool") or "?")
        kind = action.get("kind")
        gold = _mapping(action.get("gold"))
        diffs = [_argument(a) for a in _objects(action.get("arguments"))]
        paths = tuple(p for p, _ in diffs)
        said = "; ".join(text for _, text in diffs)
        error = action.get("error")
        if kind == "different":
            findings.append(
                Finding(kind="wrong_arguments", tool=tool, arguments=paths, detail=said, expected=_call(tool, gold))
            )
        elif kind == "extra":
            given = _mapping(action.get("given"))
            findings.append(
                Finding(kind="forbidden_write", tool=tool, arguments=tuple(given), detail=_call(tool, given))
            )
        elif kind == "missing":
            detail = _call(tool, gold)
            if isinstance(error, str):
                detail += f"; the attempt failed with {_short(error)!r}" + (f" ({said})" if said else "")
            findings.append(
                Finding(
                    kind="missing_action",
                    tool=tool,
                    arguments=paths or tuple(gold),
                    detail=detail,
                    expected=_call(tool, gold),
                    error=error if isinstance(error, str) else None,
                )
            )
    outputs = grader.get("outputs")
    if isinstance(outputs, Mapping):
        for output, said_it in outputs.items():
            if not said_it:
                findings.append(Finding(kind="not_communicated", detail=str(output)))
    if grader.get("database") == "differs" and not any(f.tool for f in findings):
        findings.append(Finding(kind="database_differs", detail="the final database differs from the gold's"))
    return findings


def _argument(diff: Mapping[str, Any]) -> tuple[str, str]:
    path = str(diff.get("path") or "(arguments)")
    absent = diff.get("absent")
    given = "(not given)" if absent == "given" else _value(diff.get("given"))
    gold = "(not expected)" if absent == "gold" else _value(diff.get("gold"))
    return path, f"{path}: gave {given}, expected {gold}"


# ----------------------------------------------------------------------------------------- tau2 breakdown
def _tau2_findings(info: Mapping[str, Any]) -> list[Finding]:
    findings: list[Finding] = []
    for check in _objects(info.get("action_checks")):
        if check.get("action_match"):
            continue
        action = _mapping(check.get("action"))
        tool = str(action.get("name") or "?")
        arguments = _mapping(action.get("arguments"))
        call = _call(tool, arguments)
        findings.append(
            Finding(
                kind="missing_action",
                tool=tool,
                arguments=tuple(arguments),
                detail=call,
                expected=call,
            )
        )
    for check in _objects(info.get("communicate_checks")):
        if not check.get("met"):
            findings.append(Finding(kind="not_communicated", detail=str(check.get("info") or "")))
    for check in _objects(info.get("nl_assertions")):
        if not check.get("met"):
            why = check.get("justification")
            text = str(check.get("nl_assertion") or "")
            findings.append(Finding(kind="policy_not_met", detail=text + (f" (grader: {_short(why)})" if why else "")))
    db = info.get("db_check")
    if isinstance(db, Mapping) and db.get("db_match") is False and not any(f.tool for f in findings):
        findings.append(Finding(kind="database_differs", detail="the final database differs from the expected one"))
    return findings


# ------------------------------------------------------------------------------------------------ helpers
def _objects(value: object) -> list[Mapping[str, Any]]:
    return [v for v in value if isinstance(v, Mapping)] if isinstance(value, Sequence) else []


def _mapping(value: object) -> Mapping[str, Any]:
    return {str(k): v for k, v in value.items()} if isinstance(value, Mapping) else {}


def _number(value: object) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _value(value: object) -> str:
    return _short(json.dumps(value, ensure_ascii=False, default=str))


def _call(tool: str, arguments: Mapping[str, Any]) -> str:
    return f"{tool}({', '.join(f'{k}={_value(v)}' for k, v in arguments.items())})"


def _short(text: object, width: int = _VALUE_CHARS) -> str:
    flat = " ".join(str(text).split())
    return flat if len(flat) <= width else flat[: width - 3] + "..."
