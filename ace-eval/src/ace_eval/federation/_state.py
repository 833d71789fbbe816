"""The hub as it stands: the global skills (from the global store's versions), the clusters and their status."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ace.core.skillbook import Skillbook
from ace.embeddings.base import Embedder
from ace_eval.federation._clusters import Cluster, find_clusters
from ace_eval.federation._hub import Hub, Policy

__all__ = ["GlobalSkill", "HubState", "read_state"]


@dataclass
class GlobalSkill:
    """A promoted skill: its cluster, member hashes and projects, who promoted it and why; when quarantined, why."""

    global_id: str
    cluster: str
    section: str
    hashes: list[str]
    projects: list[str]
    by: str
    reason: str
    version: int
    quarantined: dict[str, Any] | None = None
    contradicting: list[str] = field(default_factory=list[str])


@dataclass
class HubState:
    policy: Policy
    contributions: dict[str, dict[str, Any]]
    globals: dict[str, GlobalSkill]
    clusters: list[Cluster]
    events: list[dict[str, Any]]
    """Promotions, revocations and rejections, oldest first (action, ids, who, why, version or time)."""
    global_book: Skillbook | None

    def to_json(self) -> dict[str, Any]:
        return {"clusters": [c.to_json(self.policy) for c in self.clusters]}


def _global_skills(hub: Hub) -> tuple[dict[str, GlobalSkill], list[dict[str, Any]], Skillbook | None]:
    store = hub.global_store()
    found: dict[str, GlobalSkill] = {}
    events: list[dict[str, Any]] = []
    current = store.current_number()
    for version in store.versions():
        if current is None or version.number > current:
            break  # a version past `current` (a kill before the pointer moved, or a rollback) does not count
        details = version.record.produced_by.details
        action = details.get("action")
        if action == "promote":
            for item in details.get("promoted", []):  # type: ignore[union-attr]
                assert isinstance(item, dict)
                g = GlobalSkill(
                    global_id=str(item["global_id"]),
                    cluster=str(item["cluster"]),
                    section=str(item["section"]),
                    hashes=[str(h) for h in item["hashes"]],  # type: ignore[union-attr]
                    projects=[str(p) for p in item["projects"]],  # type: ignore[union-attr]
                    by=str(details["by"]),
                    reason=str(details["reason"]),
                    version=version.number,
                )
                found[g.global_id] = g
                events.append(
                    {
                        "action": "promote",
                        "cluster": g.cluster,
                        "global_id": g.global_id,
                        "projects": g.projects,
                        "by": g.by,
                        "reason": g.reason,
                        "version": version.number,
                    }
                )
        elif action == "revoke":
            gid = str(details["global_id"])
            if gid in found:
                found[gid].quarantined = {k: details[k] for k in ("by", "reason", "projects")} | {
                    "version": version.number
                }
            events.append(
                {
                    "action": "revoke",
                    "cluster": found[gid].cluster if gid in found else None,
                    "global_id": gid,
                    "projects": details["projects"],
                    "by": details["by"],
                    "reason": details["reason"],
                    "version": version.number,
                }
            )
    book = store.load() if current is not None else None
    return found, events, book


def read_state(hub: Hub, embedder: Embedder | None) -> HubState:
    """Clusters of the eligible contributions, each marked `global` / `quarantined` when it holds a promoted skill's
    hash, `rejected` when a reviewer rejected that very cluster, else `candidate`; contradictions counted per
    project (a project's skill in a contradicting state that a pull linked to the global skill or that has one of
    its hashes)."""
    policy = hub.policy()
    contributions = hub.contributions()
    globals_, events, book = _global_skills(hub)
    rejections = hub.rejections()
    for cid, r in rejections.items():
        events.append(
            {
                "action": "reject",
                "cluster": cid,
                "global_id": None,
                "projects": r.get("projects", []),
                "by": r["by"],
                "reason": r["reason"],
                "version": None,
                "at": r.get("at"),
            }
        )
    for g in globals_.values():
        g.contradicting = sorted(
            project
            for project, data in contributions.items()
            if any(
                e["state"] == "contradicting" and (g.global_id in e["linked"] or e["content_hash"] in g.hashes)
                for e in data["skills"]
            )
        )
    clusters = find_clusters(contributions, policy, embedder) if contributions else []
    by_hash = {h: g for g in globals_.values() for h in g.hashes}
    claimed: set[str] = set()
    for c in clusters:
        held = next((by_hash[h] for h in c.hashes if h in by_hash), None)
        if held is not None and held.global_id not in claimed:
            claimed.add(held.global_id)
            c.id, c.global_id, c.contradicting = held.cluster, held.global_id, held.contradicting
            c.status = "quarantined" if held.quarantined else "global"
            continue
        c.contradicting = sorted(
            p
            for p, data in contributions.items()
            if any(e["state"] == "contradicting" and e["content_hash"] in c.hashes for e in data["skills"])
        )
        if c.id in rejections:
            c.status = "rejected"
    for g in globals_.values():  # a global skill no project supports any more still shows
        if g.global_id not in claimed:
            clusters.append(
                Cluster(
                    members=[],
                    section=g.section,
                    id=g.cluster,
                    global_id=g.global_id,
                    status="quarantined" if g.quarantined else "global",
                    contradicting=g.contradicting,
                )
            )
    return HubState(policy, contributions, globals_, clusters, events, book)
