"""The sessions of a run, rebuilt from its local files (`spans.jsonl`, `samples.jsonl`, `run.json`, read by
`ace_eval.run.read_run`): which trace, which reflection, which tool calls with their atomic signature, which skills
changed. No Logfire account needed."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ace_eval.run.record import RunRecord
from ace_eval.run.sample import SampleResult

__all__ = ["SIGNATURES", "RunView", "SampleView", "SessionView", "ToolCallView", "sample_views", "signature"]

SIGNATURES: dict[str, tuple[str, ...]] = {
    "add_skill": ("section", "issue", "keywords", "insight"),
    "update_skill": ("skill_id", "issue", "keywords", "insight"),
    "tag_skill": ("skill_id", "delta"),
    "remove_skill": ("skill_id", "reason"),
    "search_skills": ("query", "top_k", "section", "keywords"),
    "read_skill": ("skill_id",),
}
"""The skill manager's atomic tool surface: each tool's parameters, in order."""
_CONTENT = frozenset({"issue", "insight", "reason", "query"})
_SESSION_SUFFIX = ".session"
_SESSION_NAMES = frozenset({"reflect"})
"""Spans that are sessions without the suffix: the simple reflector's one call."""
_INTERNAL = frozenset(
    {"ace.tool", "ace.result", "ace.refusal", "ace.results_count", "ace.result_ids", "ace.has_insight"}
)


@dataclass(frozen=True, kw_only=True)
class ToolCallView:
    """One tool call of a session."""

    tool: str
    signature: str
    """e.g. `add_skill(section='context', issue=…, keywords=[3], insight=…) -> context-00001`."""
    result: str | None
    """`ok`, `refused` or `conflict` (another session changed the skill first)."""
    skill_id: str | None
    start_time: str | None
    refusal: str | None = None


@dataclass(frozen=True, kw_only=True)
class SessionView:
    """One `*.session` span (`sm.session`, `rr.session`) and the tool calls under it."""

    name: str
    """The span's name: `sm.session`, `rr.session`, `reflect`."""
    kind: str
    """`sm` (skill manager), `rr` (recursive reflector) or `reflect` (simple reflector)."""
    span_id: str
    trace_uid: str | None
    epoch: int | None
    start_time: str | None
    duration_ms: float | None
    status: str
    attributes: dict[str, Any]
    tool_calls: list[ToolCallView]

    @property
    def usage(self) -> dict[str, int] | None:
        """`requests`, `input_tokens`, `output_tokens` of the session's model calls, when its span recorded them."""
        values = {k: self.attributes.get(f"ace.{k}") for k in ("requests", "input_tokens", "output_tokens")}
        if not all(isinstance(v, int) for v in values.values()):
            return None
        return {k: int(v) for k, v in values.items() if isinstance(v, int)}

    @property
    def changed_ids(self) -> list[str]:
        """Skills the session changed (from the span, else from its successful mutating calls)."""
        ids = self.attributes.get("ace.changed_ids")
        if isinstance(ids, list):
            return [str(i) for i in ids]
        mutating = ("add_skill", "update_skill", "tag_skill", "remove_skill")
        return list(dict.fromkeys(c.skill_id for c in self.tool_calls if c.tool in mutating and c.skill_id))


@dataclass(kw_only=True)
class SampleView:
    """One (trace, epoch) of the run: its recorded result and its sessions."""

    trace_uid: str
    epoch: int | None
    sample: SampleResult | None = None
    sessions: list[SessionView] = field(default_factory=list[SessionView])

    @property
    def key_insight(self) -> str | None:
        reflection = self.sample.reflection if self.sample is not None else None
        return reflection.key_insight if reflection is not None else None

    @property
    def changed_ids(self) -> list[str]:
        if self.sample is not None:
            return list(self.sample.changed_skill_ids)
        return list(dict.fromkeys(i for s in self.sessions for i in s.changed_ids))

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready (for `inspect --json`)."""
        reflection = self.sample.reflection if self.sample is not None else None
        return {
            "trace_uid": self.trace_uid,
            "epoch": self.epoch,
            "error": self.sample.error if self.sample is not None else None,
            "reflection": reflection.model_dump() if reflection is not None else None,
            "operations": list(self.sample.operations) if self.sample is not None else [],
            "changed_skill_ids": self.changed_ids,
            "duration_s": self.sample.duration_s if self.sample is not None else None,
            "sessions": [
                {
                    "kind": s.kind,
                    "span_id": s.span_id,
                    "start_time": s.start_time,
                    "duration_ms": s.duration_ms,
                    "status": s.status,
                    "changed_ids": s.changed_ids,
                    "usage": s.usage,
                    "tool_calls": [vars(c) for c in s.tool_calls],
                }
                for s in self.sessions
            ],
        }


@dataclass(frozen=True, kw_only=True)
class RunView:
    """Everything `ace-eval inspect` shows about a run."""

    path: Path
    run: RunRecord
    """`run.json`."""
    samples: list[SampleView]
    has_spans: bool


def _short(value: Any, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…'"


def signature(name: str, attributes: Mapping[str, Any]) -> str:
    """A tool call as `name(arg=value, ...) -> result`, from its span attributes; text arguments show as `…`
    unless the run recorded content (`ace.issue`, `ace.insight`, ...)."""
    params = SIGNATURES.get(name) or tuple(
        k.removeprefix("ace.") for k in attributes if k.startswith("ace.") and k not in _INTERNAL
    )
    args: list[str] = []
    for p in params:
        value = attributes.get(f"ace.{p}")
        if value is not None:
            args.append(f"{p}={_short(value)}")
        elif p == "keywords" and attributes.get("ace.keywords_count") is not None:
            args.append(f"keywords=[{attributes['ace.keywords_count']}]")
        elif p in _CONTENT and not (p == "insight" and _no_insight(attributes)):
            args.append(f"{p}=…")  # text the run did not record (no content opt-in)
    result = attributes.get("ace.result")
    tail = ""
    if result in ("refused", "conflict"):
        tail = f" -> {result}"
    elif name == "search_skills" and attributes.get("ace.result_ids") is not None:
        tail = f" -> {list(attributes['ace.result_ids'])}"
    elif attributes.get("ace.skill_id") and result == "ok":
        tail = f" -> {attributes['ace.skill_id']}" if name == "add_skill" else " -> ok"
    return f"{name}({', '.join(args)}){tail}"


def _no_insight(attributes: Mapping[str, Any]) -> bool:
    """The call passed no insight (add) or left it unchanged (update)."""
    return attributes.get("ace.has_insight") is False or attributes.get("ace.insight_changed") is False


def _is_session(name: str) -> bool:
    return name.endswith(_SESSION_SUFFIX) or name in _SESSION_NAMES


def _inherited(by_id: Mapping[str, dict[str, Any]], span: Mapping[str, Any], key: str) -> Any:
    """`key` of the span's attributes, else of its nearest ancestor's (a reflector's span sits under the sample's
    `train.sample`, which carries the epoch)."""
    hops: int = 0
    current: Mapping[str, Any] | None = span
    while current is not None and hops < 100:
        value = (current.get("attributes") or {}).get(key)
        if value is not None:
            return value
        current, hops = by_id.get(str(current.get("parent_span_id"))), hops + 1
    return None


def _sessions(spans: list[dict[str, Any]]) -> list[SessionView]:
    by_id = {s["span_id"]: s for s in spans if s.get("span_id")}
    session_ids = {sid for sid, s in by_id.items() if _is_session(str(s.get("name", "")))}
    calls: dict[str, list[dict[str, Any]]] = {sid: [] for sid in session_ids}
    for span in spans:
        attrs = span.get("attributes") or {}
        if "ace.tool" not in attrs and span.get("name") not in SIGNATURES:
            continue
        parent, hops = span.get("parent_span_id"), 0
        while parent is not None and parent not in session_ids and hops < 100:
            parent, hops = (by_id.get(parent) or {}).get("parent_span_id"), hops + 1
        if parent in calls:
            calls[parent].append(span)
    out: list[SessionView] = []
    for sid in session_ids:
        span = by_id[sid]
        attrs = dict(span.get("attributes") or {})
        epoch = _inherited(by_id, span, "ace.epoch")
        tool_calls = [
            ToolCallView(
                tool=str(c.get("name")),
                signature=signature(str(c.get("name")), c.get("attributes") or {}),
                result=(c.get("attributes") or {}).get("ace.result"),
                skill_id=(c.get("attributes") or {}).get("ace.skill_id"),
                start_time=c.get("start_time"),
                refusal=(c.get("attributes") or {}).get("ace.refusal"),
            )
            for c in sorted(calls[sid], key=lambda c: str(c.get("start_time")))
        ]
        out.append(
            SessionView(
                name=str(span["name"]),
                kind=str(span["name"]).removesuffix(_SESSION_SUFFIX),
                span_id=sid,
                trace_uid=attrs.get("ace.trace_uid"),
                epoch=epoch if isinstance(epoch, int) else None,
                start_time=span.get("start_time"),
                duration_ms=span.get("duration_ms"),
                status=str(span.get("status", "UNSET")),
                attributes=attrs,
                tool_calls=tool_calls,
            )
        )
    return sorted(out, key=lambda s: str(s.start_time))


def _group(samples: Iterable[SampleResult], sessions: list[SessionView]) -> list[SampleView]:
    views: dict[tuple[str, int | None], SampleView] = {}
    for sample in samples:
        views[(sample.trace_uid, sample.epoch)] = SampleView(
            trace_uid=sample.trace_uid, epoch=sample.epoch, sample=sample
        )
    # sessions that know their epoch first, so that an epoch-less one (the simple reflector's) joins their sample
    for session in sorted(sessions, key=lambda s: s.epoch is None):
        uid = session.trace_uid or "(unknown trace)"
        key = (uid, session.epoch)
        if key not in views:
            # a session whose sample was never recorded (interrupted run), or a span without an epoch
            candidates = [k for k in views if k[0] == uid]
            key = candidates[0] if session.epoch is None and len(candidates) == 1 else key
        views.setdefault(key, SampleView(trace_uid=uid, epoch=session.epoch)).sessions.append(session)

    def order(view: SampleView) -> tuple[int, int, str]:
        if view.sample is not None:
            return (view.sample.epoch, view.sample.index, view.trace_uid)
        return (view.epoch if view.epoch is not None else 1 << 30, 1 << 30, view.trace_uid)

    for view in views.values():
        view.sessions.sort(key=lambda s: str(s.start_time))
        if view.sample is not None and view.sample.refusals:
            _attach_refusals(view.sessions, view.sample.refusals)
    return sorted(views.values(), key=order)


_NOT_APPLIED = frozenset({"refused", "conflict"})


def _attach_refusals(sessions: list[SessionView], refusals: Iterable[Mapping[str, str]]) -> None:
    """Give each refused or conflicting skill-manager call the reason the sample recorded, matched per tool in
    order (a span carries the reason itself only when the run recorded content)."""
    pending: dict[str, list[str]] = {}
    for refusal in refusals:
        pending.setdefault(refusal.get("tool", ""), []).append(refusal.get("reason", ""))
    for session in sessions:
        if session.kind != "sm":
            continue
        for i, call in enumerate(session.tool_calls):
            reasons = pending.get(call.tool)
            if call.result in _NOT_APPLIED and reasons:
                reason = reasons.pop(0)
                session.tool_calls[i] = dataclasses.replace(call, refusal=call.refusal or reason)


def sample_views(samples: Iterable[SampleResult], spans: list[dict[str, Any]]) -> list[SampleView]:
    """Each recorded sample with the sessions its spans hold, and each session whose sample was never recorded
    (an interrupted run), in training order."""
    return _group(samples, _sessions(spans))
