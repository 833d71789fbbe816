"""The page of a federation hub: clusters, the projects x skills matrix, promotions, rejections and revocations with
who and why. Everything it shows was redacted when the hub wrote it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import ace_eval
from ace.core.insight_source import utc_now
from ace.core.storage import atomic_write, bytes_writer
from ace.embeddings.base import Embedder
from ace_eval.federation import Hub, read_state
from ace_eval.report.render import environment

__all__ = ["render_hub_page", "write_hub_page"]


def render_hub_page(hub: Hub, embedder: Embedder | None) -> str:
    """The HTML page about `hub`."""
    state = read_state(hub.require(), embedder)
    clusters: list[dict[str, Any]] = []
    for c in state.clusters:
        row = c.to_json(state.policy)
        best = max(c.members, key=lambda m: m.helpful - m.harmful, default=None)
        if best is not None:
            row["text"] = best.issue
        elif c.global_id and state.global_book is not None and (g := state.global_book.get_skill(c.global_id)):
            row["text"] = g.issue
        else:
            row["text"] = ""
        clusters.append(row)
    return (
        environment()
        .get_template("hub.html.j2")
        .render(
            hub=str(hub.root),
            clusters=clusters,
            projects=sorted(state.contributions),
            policy=state.policy,
            events=state.events,
            generated_at=utc_now(),
            version=ace_eval.__version__,
        )
    )


def write_hub_page(hub: Hub, path: Path, embedder: Embedder | None) -> int:
    """Render the hub's page and replace `path` atomically; returns its size in bytes."""
    data = render_hub_page(hub, embedder).encode("utf-8")
    atomic_write(path, bytes_writer(data))
    return len(data)
