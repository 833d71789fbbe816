"""The page of a skillbook store: its versions with their lineage, which is current, who produced each, what changed
from its parent, and each gate's evidence rendered from its JSON (whatever fields the gate wrote: scalars, a
`{mean, ci95}` estimate, `pass_hat_k` lists of each side)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import ace_eval
from ace.core.insight_source import utc_now
from ace.core.skillbook import Skillbook
from ace.core.storage import atomic_write, bytes_writer
from ace.exceptions import AceError
from ace_eval.report.render import environment
from ace_eval.store import SkillbookStore, Version, diff_skillbooks

__all__ = ["GateView", "StoreVersionView", "gate_view", "render_store_page", "write_store_page"]

_INTERVAL_KEYS = ("ci95", "ci", "interval")
_VALUE_KEYS = ("mean", "value", "estimate", "point")


@dataclass(frozen=True)
class GateView:
    """A gate's evidence as the page shows it: its decision, one row per other field, a pass^k table."""

    decision: str | None
    rows: list[tuple[str, str]]
    pass_k_sides: list[str]
    pass_k: list[tuple[int, list[str]]]
    """(k, one cell per side) for k = 1, 2, ..."""
    raw: str


@dataclass(frozen=True, kw_only=True)
class StoreVersionView:
    """One version's row and details."""

    version: Version
    current: bool
    depth: int
    """Its distance from the root of its lineage (for the indented lineage list)."""
    skills: int | None
    change: str
    """What changed from its parent (`+2 -1 ~3`), or why that is unknown."""
    gate: GateView | None
    children: list[int] = field(default_factory=list)


def _number(value: float) -> str:
    return f"{value:.4g}" if isinstance(value, float) else str(value)


def _cell(value: object) -> str:
    """A value as text: `0.2 [0.05, 0.35]` for an estimate with an interval, numbers shortened, else JSON."""
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return "—" if value is None else str(value)
    if isinstance(value, int | float):
        return _number(value)
    if isinstance(value, Sequence) and all(isinstance(v, int | float) for v in value) and len(value) == 2:
        return f"[{_number(value[0])}, {_number(value[1])}]"
    if isinstance(value, Mapping):
        point = next((value[k] for k in _VALUE_KEYS if isinstance(value.get(k), int | float)), None)
        interval = next((value[k] for k in _INTERVAL_KEYS if k in value), None)
        if point is not None:
            return _number(point) + (f" {_cell(interval)}" if interval is not None else "")
    return json.dumps(value, ensure_ascii=False)


def _gate_result_view(evidence: Mapping[str, object]) -> GateView | None:
    """The view of evidence `ace-eval gate` wrote (a `GateResult`): its own rows and pass^k table; else `None`."""
    from pydantic import ValidationError

    from ace_eval.gate import GateResult, gate_rows, pass_hat_k_cells

    try:
        result = GateResult.model_validate(evidence)
    except ValidationError:
        return None
    return GateView(
        decision=result.decision,
        rows=gate_rows(result),
        pass_k_sides=["baseline", "candidate"],
        pass_k=pass_hat_k_cells(result),
        raw=json.dumps(evidence, indent=2, ensure_ascii=False),
    )


def gate_view(evidence: Mapping[str, object]) -> GateView:
    """The page's view of a gate's evidence: the gate's own table when `ace-eval gate` wrote it, else any JSON
    object rendered field by field (a side is a field holding a `pass_hat_k` list)."""
    typed = _gate_result_view(evidence)
    if typed is not None:
        return typed
    sides = {
        name: value["pass_hat_k"]
        for name, value in evidence.items()
        if isinstance(value, Mapping) and isinstance(value.get("pass_hat_k"), list)
    }
    rows: list[tuple[str, str]] = []
    for name, value in evidence.items():
        if name == "decision":
            continue
        if name in sides:
            rest = {k: v for k, v in value.items() if k != "pass_hat_k"} if isinstance(value, Mapping) else {}
            rows += [(f"{name}.{k}", _cell(v)) for k, v in rest.items()]
        elif isinstance(value, Mapping) and _cell(value).startswith("{"):
            rows += [(f"{name}.{k}", _cell(v)) for k, v in value.items()]
        else:
            rows.append((name, _cell(value)))
    depth = max((len(v) for v in sides.values()), default=0)
    table = [(k + 1, [_cell(v[k]) if k < len(v) else "—" for v in sides.values()]) for k in range(depth)]
    decision = evidence.get("decision")
    return GateView(
        decision=decision if isinstance(decision, str) else None,
        rows=rows,
        pass_k_sides=list(sides),
        pass_k=table,
        raw=json.dumps(evidence, indent=2, ensure_ascii=False),
    )


def _skillbook(version: Version) -> Skillbook | None:
    try:
        return Skillbook.load_from_file(version.skillbook_path)
    except (AceError, OSError):
        return None


def store_views(store: SkillbookStore) -> list[StoreVersionView]:
    """Every version, in lineage order (each after its parent, children by number), with its parent diff."""
    versions = {v.number: v for v in store.versions()}
    current = store.current_number()
    books = {n: _skillbook(v) for n, v in versions.items()}
    children: dict[int | None, list[int]] = {}
    for v in versions.values():
        children.setdefault(v.parent if v.parent in versions else None, []).append(v.number)
    views: list[StoreVersionView] = []

    def visit(number: int, depth: int) -> None:
        v, book = versions[number], books[number]
        parent_book = books.get(v.parent) if v.parent is not None else None
        if book is None:
            change = "unreadable skillbook"
        elif v.parent is None:
            change = f"+{len(book.skills())} (first)"
        elif parent_book is None:
            change = "parent unreadable"
        else:
            d = diff_skillbooks(parent_book, book)
            change = f"+{len(d.added)} −{len(d.removed)} ~{len(d.changed)}"
        views.append(
            StoreVersionView(
                version=v,
                current=number == current,
                depth=depth,
                skills=len(book.skills()) if book is not None else None,
                change=change,
                gate=gate_view(v.gate) if v.gate is not None else None,
                children=sorted(children.get(number, [])),
            )
        )
        for child in sorted(children.get(number, [])):
            visit(child, depth + 1)

    for root in sorted(children.get(None, [])):
        visit(root, 0)
    return views


def render_store_page(store: SkillbookStore) -> str:
    """The HTML page about `store`."""
    views = store_views(store)
    problems = store.verify()
    template = environment().get_template("store.html.j2")
    return template.render(
        store=str(store.root),
        views=views,
        current=store.current_number(),
        problems=[str(p) for p in problems],
        generated_at=utc_now(),
        version=ace_eval.__version__,
    )


def write_store_page(store: SkillbookStore, path: Path) -> int:
    """Render the store's page and replace `path` atomically; returns its size in bytes."""
    data = render_store_page(store).encode("utf-8")
    atomic_write(path, bytes_writer(data))
    return len(data)
