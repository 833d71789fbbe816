"""push, promote, reject, pull: each checks the policy itself, takes the hub's lock and writes atomically."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ace.core.insight_source import InsightSource, utc_now
from ace.core.skillbook import Skillbook
from ace.embeddings.base import Embedder
from ace.redaction import Redactor
from ace_eval.federation._clusters import Cluster, Member
from ace_eval.federation._contribution import (
    build_contribution,
    linked_globals,
    load_project_skillbook,
    skill_hash,
)
from ace_eval.federation._hub import FederationError, Hub, check_project
from ace_eval.federation._state import HubState, read_state
from ace_eval.store import ProducedBy, SkillbookStore, is_store, resolve_skillbook

__all__ = ["PullResult", "PushResult", "promote", "pull", "push", "reject", "revoke"]


@dataclass
class PushResult:
    project: str
    eligible: int
    contradicting: int
    changed: bool
    revoked: list[str] = field(default_factory=list[str])
    first: bool = False
    """The project's first push to this hub (nothing was replaced)."""


@dataclass
class PullResult:
    added: list[str] = field(default_factory=list[str])
    quarantined: list[str] = field(default_factory=list[str])

    @property
    def changed(self) -> bool:
        return bool(self.added or self.quarantined)


def _same(old: dict[str, Any] | None, new: dict[str, Any]) -> bool:
    return old is not None and {k: v for k, v in old.items() if k != "pushed_at"} == {
        k: v for k, v in new.items() if k != "pushed_at"
    }


def push(hub: Hub, source: Path, *, project: str, embedder: Embedder | None) -> PushResult:
    """Replace `project`'s contribution by what `source` holds now; a global skill that reaches the policy's
    `max_contradictions` is quarantined in a new global version (the revocation)."""
    check_project(project)
    book = load_project_skillbook(source)
    with hub.locked():
        hub.create()
        policy = hub.policy()
        data = build_contribution(book, project=project, source=source, source_system=hub.source_system, policy=policy)
        old = hub.contributions().get(project)
        changed = not _same(old, data)
        if changed:
            hub.write_contribution(project, data)
        skills = data["skills"]
        counts = {s: sum(1 for e in skills if e["state"] == s) for s in ("eligible", "contradicting")}
        hub.journal(
            "push",
            project=project,
            counts=counts,
            decision="replaced" if changed else "unchanged",
            hashes=sorted({e["content_hash"] for e in skills}),
        )
        state = read_state(hub, embedder)
        revoked = [
            _revoke(
                hub, state, g.global_id, g.contradicting, by=f"policy:max_contradictions={policy.max_contradictions}"
            )
            for g in state.globals.values()
            if g.quarantined is None and len(g.contradicting) >= policy.max_contradictions
        ]
    return PushResult(project, counts["eligible"], counts["contradicting"], changed, revoked, first=old is None)


def revoke(hub: Hub, global_id: str, *, by: str, reason: str, embedder: Embedder | None) -> str:
    """A person's revocation of a global skill (checked against the policy's revokers): quarantined in a new
    global version; the next pull quarantines it in every project that holds it."""
    hub.require()
    _check(hub, "revoke", by, reason)
    with hub.locked():
        state = read_state(hub, embedder)
        g = state.globals.get(global_id)
        if g is None or g.quarantined is not None:
            known = ", ".join(k for k, v in state.globals.items() if v.quarantined is None) or "none"
            raise FederationError(
                f"{global_id} is not a global skill in service (in service: {known}); nothing changed"
            )
        return _revoke(hub, state, global_id, g.contradicting, by=by, reason=Redactor().redact_text(reason))


def _revoke(hub: Hub, state: HubState, global_id: str, projects: list[str], *, by: str, reason: str = "") -> str:
    assert state.global_book is not None
    book = Skillbook.from_dict(state.global_book.to_dict())
    reason = reason or f"contradicted by {len(projects)} project(s): {', '.join(projects)}"
    evidence = [f"{p}:{global_id}" for p in projects]
    book.quarantine_skill(global_id, reason, evidence=evidence, insight_source=InsightSource.manual(reason))
    details: dict[str, Any] = {
        "action": "revoke",
        "global_id": global_id,
        "projects": projects,
        "by": by,
        "reason": reason,
    }
    version = hub.global_store().publish_skillbook(
        book, produced_by=ProducedBy(kind="federation", details=details), ungated_reason="federation revocation"
    )
    hub.journal(
        "revoke",
        global_id=global_id,
        projects=projects,
        by=by,
        version=version.number,
        counts={"contradicting": len(projects)},
        decision="quarantined",
    )
    return global_id


def _pick(state: HubState, ids: Sequence[str] | None, *, promotable: bool) -> list[Cluster]:
    if ids is None:
        return [c for c in state.clusters if c.promotable(state.policy)] if promotable else []
    by_id = {c.id: c for c in state.clusters}
    out: list[Cluster] = []
    for cid in ids:
        c = by_id.get(cid)
        if c is None:
            raise FederationError(
                f"cluster {cid} is not in the hub as it is now: a contribution changed since it was listed "
                "(the provenance recheck); run `ace-eval federate status` and decide again; nothing was changed"
            )
        if promotable and not c.promotable(state.policy):
            raise FederationError(
                f"cluster {cid} is not promotable ({c.status}, {len(c.projects)} project(s) of "
                f"{state.policy.min_projects} needed, {len(c.contradicting)} contradicting); nothing was changed"
            )
        out.append(c)
    return out


def _check(hub: Hub, action: str, by: str, reason: str) -> None:
    if not by.strip() or not reason.strip():
        raise FederationError(f"{action} needs --by NAME and --reason TEXT")
    policy = hub.policy()
    if not policy.may(action, by):
        names = policy.promoters if action == "promote" else policy.revokers
        raise FederationError(
            f"{by!r} may not {action} on {hub.root}: {hub.root / 'policy.toml'} allows {', '.join(names)}; ask one "
            "of them, or have the hub's owner add you; nothing was changed"
        )


def _best(members: list[Member]) -> Member:
    return sorted(members, key=lambda m: (-(m.helpful - m.harmful), m.project))[0]


def promote(hub: Hub, clusters: Sequence[str] | None, *, by: str, reason: str, embedder: Embedder | None) -> list[str]:
    """Promote the clusters named (`None`: every promotable one) in one new global version; returns global ids."""
    hub.require()
    _check(hub, "promote", by, reason)
    redactor = Redactor()
    reason = redactor.redact_text(reason)
    with hub.locked():
        state = read_state(hub, embedder)
        chosen = _pick(state, clusters, promotable=True)
        if not chosen:
            return []
        book = Skillbook.from_dict(state.global_book.to_dict()) if state.global_book is not None else Skillbook()
        promoted: list[dict[str, Any]] = []
        for c in chosen:
            best = _best(c.members)
            firsts = {m.project: m for m in sorted(c.members, key=lambda m: m.project)}
            sources = [
                InsightSource(
                    trace_uid=f"{p}:{m.skill_id}",
                    source_system=f"project:{p}",
                    trace_id=m.skill_id,
                    reviewer=by,
                    reviewed_at=utc_now(),
                )
                for p, m in firsts.items()
            ]
            skill = book.add_skill(
                best.section, best.issue, list(best.keywords), best.insight, insight_source=sources[0]
            )
            for s in sources[1:]:
                book.tag_skill(skill.id, 1, insight_source=s)
            promoted.append(
                {
                    "cluster": c.id,
                    "global_id": skill.id,
                    "section": c.section,
                    "hashes": c.hashes,
                    "projects": c.projects,
                }
            )
        details: dict[str, Any] = {"action": "promote", "by": by, "reason": reason, "promoted": promoted}
        version = hub.global_store().publish_skillbook(
            book, produced_by=ProducedBy(kind="federation", details=details), ungated_reason="federation promotion"
        )
        for p in promoted:
            hub.journal(
                "promote",
                cluster=p["cluster"],
                global_id=p["global_id"],
                hashes=p["hashes"],
                projects=p["projects"],
                by=by,
                version=version.number,
                decision="accepted",
                counts={"projects": len(p["projects"])},
            )
    return [str(p["global_id"]) for p in promoted]


def reject(hub: Hub, clusters: Sequence[str], *, by: str, reason: str, embedder: Embedder | None) -> list[str]:
    """Record a reviewer's rejection of candidate clusters (they stop being promotable until their members change)."""
    hub.require()
    _check(hub, "promote", by, reason)
    reason = Redactor().redact_text(reason)
    with hub.locked():
        state = read_state(hub, embedder)
        chosen = _pick(state, clusters, promotable=False)
        for c in chosen:
            hub.write_rejection(
                c.id, {"by": by, "reason": reason, "at": utc_now(), "projects": c.projects, "hashes": c.hashes}
            )
            hub.journal("reject", cluster=c.id, hashes=c.hashes, projects=c.projects, by=by, decision="rejected")
    return [c.id for c in chosen]


def pull(hub: Hub, into: Path, *, embedder: Embedder | None) -> PullResult:
    """Add the visible global skills `into` lacks, marked `federation:<hub>` (trace id = global id); quarantine, with
    the reason, every skill there that holds a quarantined global skill. A second pull changes nothing."""
    hub.require()
    store = is_store(into)
    book = load_project_skillbook(into)
    result = PullResult()
    with hub.locked():
        state = read_state(hub, embedder)
    if state.global_book is None:
        return result
    system = hub.source_system
    for g in state.globals.values():
        held = [
            s
            for s in book.skills(include_inactive=True)
            if g.global_id in linked_globals(s, system) or skill_hash(s) in g.hashes
        ]
        source = InsightSource(
            trace_uid=f"{system}:{g.global_id}",
            source_system=system,
            trace_id=g.global_id,
            learning_text=f"pulled from hub {hub.name}",
        )
        if g.quarantined is not None:
            reason = f"federation {hub.name}: global skill {g.global_id} quarantined ({g.quarantined['reason']})"
            for s in held:
                if s.active and s.quarantine is None:
                    book.quarantine_skill(s.id, reason, insight_source=source)
                    result.quarantined.append(s.id)
        elif not held:
            gs = state.global_book.get_skill(g.global_id)
            if gs is None:
                continue
            added = book.add_skill(gs.section, gs.issue, list(gs.keywords), gs.insight, insight_source=source)
            result.added.append(added.id)
    if result.changed:
        if store:
            SkillbookStore(into).publish_skillbook(
                book,
                produced_by=ProducedBy(kind="federation", details={"action": "pull", "hub": hub.name}),
                ungated_reason=f"federation pull from {hub.name}",
            )
        else:
            book.save_to_file(resolve_skillbook(into))
    hub.journal(
        "pull",
        hashes=[],
        counts={"added": len(result.added), "quarantined": len(result.quarantined)},
        decision="changed" if result.changed else "unchanged",
    )
    return result
