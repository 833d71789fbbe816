"""Matching across projects: eligible skills are one cluster when they have the same content hash, or, in the same
section, an embedding cosine at or above the policy's threshold (the dedup detector's comparison)."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ace.core.skill import embedding_input
from ace.deduplication.detector import similar_pairs_in_matrix
from ace.embeddings.base import Embedder
from ace_eval.federation._hub import Policy

__all__ = ["Cluster", "Member", "find_clusters"]


@dataclass(frozen=True)
class Member:
    """One project's eligible skill in a cluster."""

    project: str
    skill_id: str
    section: str
    content_hash: str
    helpful: int
    harmful: int
    issue: str
    insight: str | None
    keywords: tuple[str, ...]
    trace_ids: tuple[str, ...]


@dataclass
class Cluster:
    """Skills of several projects that say the same thing; `id` changes whenever its members do."""

    members: list[Member]
    section: str
    id: str = ""
    status: str = "candidate"
    global_id: str | None = None
    contradicting: list[str] = field(default_factory=list[str])

    @property
    def projects(self) -> list[str]:
        return sorted({m.project for m in self.members})

    @property
    def hashes(self) -> list[str]:
        return sorted({m.content_hash for m in self.members})

    def promotable(self, policy: Policy) -> bool:
        return (
            self.status == "candidate"
            and len(self.projects) >= policy.min_projects
            and len(self.contradicting) < policy.max_contradictions
        )

    def to_json(self, policy: Policy) -> dict[str, Any]:
        return {
            "id": self.id,
            "section": self.section,
            "projects": self.projects,
            "contradicting": self.contradicting,
            "counts": {
                "projects": len(self.projects),
                "contradicting": len(self.contradicting),
                "helpful": sum(m.helpful for m in self.members),
                "harmful": sum(m.harmful for m in self.members),
            },
            "promotable": self.promotable(policy),
            "status": self.status,
            "global_id": self.global_id,
        }


def _members(contributions: dict[str, dict[str, Any]]) -> list[Member]:
    out: list[Member] = []
    for project, data in sorted(contributions.items()):
        for e in data["skills"]:
            if e["state"] != "eligible":
                continue
            out.append(
                Member(
                    project=project,
                    skill_id=e["skill_id"],
                    section=e["section"],
                    content_hash=e["content_hash"],
                    helpful=e["helpful"],
                    harmful=e["harmful"],
                    issue=e["issue"],
                    insight=e.get("insight"),
                    keywords=tuple(e["keywords"]),
                    trace_ids=tuple(e["trace_ids"]),
                )
            )
    return out


def find_clusters(contributions: dict[str, dict[str, Any]], policy: Policy, embedder: Embedder | None) -> list[Cluster]:
    """Union-find over the eligible skills: same hash, or same section and cosine >= threshold. Texts are embedded
    only when a section holds two or more distinct hashes (no embedder is needed otherwise)."""
    members = _members(contributions)
    parent = list(range(len(members)))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    def union(i: int, j: int) -> None:
        a, b = find(i), find(j)
        if a != b:
            parent[max(a, b)] = min(a, b)

    first_of: dict[str, int] = {}
    for i, m in enumerate(members):
        if m.content_hash in first_of:
            union(first_of[m.content_hash], i)
        else:
            first_of[m.content_hash] = i
    for section in sorted({m.section for m in members}):
        distinct = [i for h, i in first_of.items() if members[i].section == section]
        if len(distinct) < 2:
            continue
        if embedder is None:
            raise ValueError("an embedder is needed to compare distinct skills")
        texts = [embedding_input(members[i].issue, members[i].insight, list(members[i].keywords)) for i in distinct]
        rows, cols, _ = similar_pairs_in_matrix(np.asarray(embedder.embed(texts)), policy.threshold)
        for a, b in zip(rows.tolist(), cols.tolist(), strict=True):
            union(distinct[a], distinct[b])
    groups: dict[int, list[Member]] = {}
    for i, m in enumerate(members):
        groups.setdefault(find(i), []).append(m)
    clusters = [Cluster(members=g, section=g[0].section) for g in groups.values()]
    for c in clusters:
        key = "|".join(f"{m.project}:{m.content_hash}" for m in sorted(c.members, key=lambda m: m.project))
        c.id = "c-" + hashlib.sha256(key.encode("utf-8")).hexdigest()[:12]
    return sorted(clusters, key=lambda c: (-len(c.projects), c.id))
