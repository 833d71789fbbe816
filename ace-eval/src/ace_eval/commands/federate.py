"""`ace-eval federate`: push a project's skills to a hub, see the clusters, promote or reject them, pull the global
skills (a hub is a folder: `--hub PATH`, `$ACE_FEDERATION_HUB`, or `[federation] hub` in ace-eval.toml)."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

import click

from ace.embeddings.base import Embedder, EmbeddingMatrix
from ace_eval.reporting import UserFix

__all__ = ["LazyEmbedder", "federate"]

_F = TypeVar("_F", bound=Callable[..., Any])
_PATH = click.Path(path_type=Path)


def _hub_option(f: _F) -> _F:
    return click.option(
        "--hub",
        type=_PATH,
        default=None,
        help="The hub folder (default: $ACE_FEDERATION_HUB, else [federation] hub in ace-eval.toml).",
    )(f)


class LazyEmbedder:
    """The default embedder, loaded only when two distinct skills of a section must be compared."""

    def __init__(self) -> None:
        self._inner: Embedder | None = None

    def _load(self) -> Embedder:
        if self._inner is None:
            from ace.embeddings import default_embedder

            self._inner = default_embedder()
        return self._inner

    @property
    def model_name(self) -> str:
        return self._load().model_name

    @property
    def dimension(self) -> int:
        return self._load().dimension

    def embed(self, texts: Sequence[str]) -> EmbeddingMatrix:
        return self._load().embed(texts)


def _open(hub: Path | None) -> Any:
    from ace_eval.federation import Hub, resolve_hub

    return Hub(resolve_hub(hub))


@click.group()
def federate() -> None:
    """Share skills across projects through a hub: push, status, promote, reject, revoke, pull."""


@federate.command()
@click.argument("source", type=_PATH)
@click.option("--project", required=True, help="This project's name in the hub (letters, digits, . _ -).")
@_hub_option
def push(source: Path, project: str, hub: Path | None) -> None:
    """Contribute SOURCE's eligible skills (a skillbook or a store), replacing the project's previous push."""
    from ace_eval.federation import push as do_push

    r = do_push(_open(hub), source, project=project, embedder=LazyEmbedder())
    done = "its first push" if r.first else "replaced" if r.changed else "unchanged"
    click.echo(f"{project}: {r.eligible} eligible, {r.contradicting} contradicting ({done})")
    for gid in r.revoked:
        click.echo(f"global skill {gid} quarantined: contradicted by too many projects")


@federate.command()
@_hub_option
@click.option("--json", "as_json", is_flag=True, help='Print {"clusters": [...]} as JSON.')
def status(hub: Path | None, as_json: bool) -> None:
    """The clusters of the hub: projects, contradictions, promotable, status."""
    from ace_eval.federation import read_state

    state = read_state(_open(hub).require(), LazyEmbedder())
    data = state.to_json()
    if as_json:
        click.echo(json.dumps(data, indent=2))
        return
    for c in data["clusters"]:
        flag = " promotable" if c["promotable"] else ""
        click.echo(
            f"{c['id']}  {c['status']:<11} {c['section']:<8} projects: {', '.join(c['projects']) or '-'}"
            f"  contradicting: {', '.join(c['contradicting']) or '-'}{flag}"
        )


def _decide(action: str, hub: Path | None, cluster: tuple[str, ...], all_: bool, by: str, reason: str) -> None:
    from ace_eval.federation import promote, reject

    if bool(cluster) == all_:
        raise UserFix("pass --cluster ID (one or more) or --all, not both")
    h = _open(hub)
    if action == "promote":
        done = promote(h, list(cluster) or None, by=by, reason=reason, embedder=LazyEmbedder())
    else:
        if all_:
            raise UserFix("reject names its clusters: pass --cluster ID")
        done = reject(h, list(cluster), by=by, reason=reason, embedder=LazyEmbedder())
    click.echo(f"{action}d: {', '.join(done) or 'nothing (no promotable cluster)'}")


@federate.command()
@_hub_option
@click.option("--cluster", multiple=True, help="A cluster id from `federate status` (repeatable).")
@click.option("--all", "all_", is_flag=True, help="Every promotable cluster.")
@click.option("--by", required=True, help="Who promotes (checked against policy.toml).")
@click.option("--reason", required=True, help="Why (kept in the global version, redacted).")
def promote(hub: Path | None, cluster: tuple[str, ...], all_: bool, by: str, reason: str) -> None:
    """Promote clusters into a new version of the global store (policy checked; clusters re-checked)."""
    _decide("promote", hub, cluster, all_, by, reason)


@federate.command()
@_hub_option
@click.option("--cluster", multiple=True, help="A cluster id from `federate status` (repeatable).")
@click.option("--by", required=True, help="Who rejects (checked against policy.toml's promoters).")
@click.option("--reason", required=True, help="Why.")
def reject(hub: Path | None, cluster: tuple[str, ...], by: str, reason: str) -> None:
    """Reject candidate clusters: they stay out of the global store until their members change."""
    _decide("reject", hub, cluster, False, by, reason)


@federate.command()
@_hub_option
@click.option("--into", type=_PATH, required=True, help="The project's skillbook or store.")
def pull(hub: Path | None, into: Path) -> None:
    """Add the global skills to a project; quarantine there the ones the hub quarantined."""
    from ace_eval.federation import pull as do_pull

    r = do_pull(_open(hub), into, embedder=LazyEmbedder())
    click.echo(f"{into}: {len(r.added)} added, {len(r.quarantined)} quarantined")


@federate.command()
@_hub_option
@click.option("--global-id", "global_id", required=True, help="The global skill's id (`federate status`).")
@click.option("--by", required=True, help="Who revokes (checked against policy.toml's revokers).")
@click.option("--reason", required=True, help="Why (kept in the global version, redacted).")
def revoke(hub: Path | None, global_id: str, by: str, reason: str) -> None:
    """Quarantine a global skill in a new global version; the next pull quarantines it in every project."""
    from ace_eval.federation import revoke as do_revoke

    do_revoke(_open(hub), global_id, by=by, reason=reason, embedder=LazyEmbedder())
    click.echo(f"revoked: {global_id}")
