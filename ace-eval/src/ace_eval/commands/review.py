"""`ace-eval review`: list, show, accept and reject the candidates a review run queued beside a skillbook."""

from __future__ import annotations

import getpass
import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

import click

from ace.exceptions import AceError, UserError
from ace_eval.review import Candidate, ReviewQueue, accept_candidates, find_candidates, reject_candidates
from ace_eval.run import read_run
from ace_eval.run.folder import RUN_JSON, RunFolderError

__all__ = ["review", "select_candidates"]

_F = TypeVar("_F", bound=Callable[..., Any])
_STATUSES = ("pending", "accepted", "rejected", "all")
_QUEUE_SUFFIX = ".review.json"


class _Refused(click.ClickException):
    """A request refused before anything was written: exit status 2."""

    exit_code = 2


@contextmanager
def _errors() -> Iterator[None]:
    try:
        yield
    except AceError as e:
        error = _Refused if isinstance(e, UserError) else click.ClickException
        raise error(str(e)) from None


def open_queue(path: Path) -> ReviewQueue:
    """The queue of PATH: a review run's folder (its `--skillbook`), a skillbook file, or the queue file itself."""
    if path.is_dir():
        try:
            config = read_run(path).record.config
        except RunFolderError:
            raise _Refused(
                f"{path} is a folder without {RUN_JSON}: pass a review run's folder, a skillbook, or its "
                f"`<stem>{_QUEUE_SUFFIX}` queue"
            ) from None
        if not config.review or not config.skillbook:
            raise _Refused(
                f"{path} is not a review run (it ran without --review, so its edits are in its own skillbook): pass "
                "the folder of an `ace-eval e2e --review --skillbook PATH` run, or that skillbook"
            )
        return ReviewQueue(Path(config.skillbook))
    if path.name.endswith(_QUEUE_SUFFIX):
        return ReviewQueue(path.with_name(path.name[: -len(_QUEUE_SUFFIX)] + ".json"))
    queue = ReviewQueue(path)
    if not queue.path.is_file():
        raise _Refused(
            f"{path} has no review queue (there is no {queue.path.name} beside it): pass a skillbook a review run "
            "queued candidates for (`ace-eval e2e --review --skillbook PATH`), or the run folder"
        )
    return queue


def select_candidates(
    candidates: list[Candidate],
    *,
    status: str = "pending",
    section: str | None = None,
    keyword: str | None = None,
    source: str | None = None,
) -> list[Candidate]:
    """The candidates matching every filter given (`source`: part of a cited trace's uid or id)."""
    out: list[Candidate] = []
    for cand in candidates:
        keywords = {k.lower() for k in cand.keywords} | {
            k.lower() for e in cand.edits for k in (e.operation.get("keywords") or [])
        }
        if status != "all" and cand.status != status:
            continue
        if section is not None and cand.section != section:
            continue
        if keyword is not None and keyword.strip().lower() not in keywords:
            continue
        if source is not None and not any(source in s.trace_uid or source in s.trace_id for s in cand.sources):
            continue
        out.append(cand)
    return out


def _filters(func: _F) -> _F:
    for option in reversed(
        [
            click.option("--section", type=click.Choice(["context", "harness"]), help="Only this section."),
            click.option("--keyword", help="Only candidates with this keyword."),
            click.option("--source", metavar="TRACE", help="Only candidates citing a trace whose uid or id has TRACE."),
        ]
    ):
        func = option(func)
    return func


def _decider(func: _F) -> _F:
    func = click.option("--reason", help="Why (recorded with the decision).")(func)
    return click.option("--reviewer", help="Who decides (recorded; default: the login name).")(func)


def _who(reviewer: str | None) -> str:
    if reviewer:
        return reviewer
    try:
        return getpass.getuser()
    except (OSError, KeyError):
        return "unknown"


def _proposed(cand: Candidate) -> dict[str, Any]:
    """The text the skill has once every edit of the candidate is applied (the last add or update wins)."""
    text: dict[str, Any] = {}
    for edit in cand.edits:
        op = edit.operation
        if op["type"] in ("ADD", "UPDATE"):
            text = {"issue": op["issue"], "insight": op["insight"], "keywords": op["keywords"]}
    return text


def _headline(cand: Candidate) -> str:
    what = cand.target or f"new {cand.section} skill"
    text = _proposed(cand).get("issue") or (cand.base.issue if cand.base else "")
    short = text if len(text) <= 70 else text[:69] + "…"
    sources = len(cand.sources)
    return (
        f"{cand.id}  {cand.kind:<6}  {what:<18}  [{', '.join(cand.keywords)}]  {sources} source"
        f"{'' if sources == 1 else 's'}  {cand.status}  {short}"
    )


def _show(cand: Candidate) -> list[str]:
    lines = [f"Candidate {cand.id} ({cand.status}): {cand.kind} {cand.target or 'a new ' + cand.section + ' skill'}"]
    lines.append(f"Keywords: {', '.join(cand.keywords)}")
    if cand.base is not None:
        lines += [f"Based on {cand.target}: Issue: {cand.base.issue}"]
        if cand.base.insight:
            lines.append(f"  Insight: {cand.base.insight}")
    proposed = _proposed(cand)
    if proposed:
        lines.append(f"Proposed: Issue: {proposed['issue']}")
        if proposed.get("insight"):
            lines.append(f"  Insight: {proposed['insight']}")
        lines.append(f"  Keywords: {', '.join(proposed.get('keywords') or [])}")
    lines.append(f"Edits ({len(cand.edits)}):")
    for n, edit in enumerate(cand.edits, 1):
        op = edit.operation
        detail = {"TAG": f"delta {op.get('delta')}", "REMOVE": f"reason: {op.get('reason')}"}.get(
            op["type"], f"issue: {op.get('issue')}"
        )
        lines.append(f"  {n}. {op['type']} {edit.staged_skill_id} from {op.get('trace_uid')} ({edit.run_id}): {detail}")
    lines.append(f"Sources ({len(cand.sources)}):")
    for s in cand.sources:
        lines.append(f"  - {s.trace_uid} (epoch {s.epoch}, {s.run_id})")
        lines.append(f"    error: {s.error_identification or '-'}")
        lines.append(f"    key insight: {s.key_insight or '-'}")
    d = cand.decision
    if d is not None:
        forced = f" (forced past: {'; '.join(d.problems)})" if d.forced else ""
        lines.append(f"Decision: {d.status} by {d.reviewer} at {d.decided_at}: {d.reason or 'no reason given'}{forced}")
    return lines


@click.group("review")
def review() -> None:
    """Decide the candidates of a review run (`ace-eval e2e --review --skillbook PATH`).

    PATH is the review run's folder, the published skillbook, or its queue (`<stem>.review.json` beside it).
    Accepting re-checks provenance first (the cited traces unchanged in their collection, the target skill
    unchanged) and applies the edits to the skillbook with their original provenance plus the reviewer.
    """


@review.command("list")
@click.argument("path", type=click.Path(path_type=Path))
@click.option("--status", type=click.Choice(_STATUSES), default="pending", show_default=True, help="Which decisions.")
@_filters
@click.option("--json", "as_json", is_flag=True, help="Print the candidates as JSON.")
def list_candidates(
    path: Path, status: str, section: str | None, keyword: str | None, source: str | None, as_json: bool
) -> None:
    """One line per candidate: id, kind, target, keywords, sources, status, proposed issue."""
    with _errors():
        queue = open_queue(path).read()
    found = select_candidates(queue.candidates, status=status, section=section, keyword=keyword, source=source)
    if as_json:
        click.echo(json.dumps([c.model_dump(mode="json") for c in found], indent=1, ensure_ascii=False))
        return
    for cand in found:
        click.echo(_headline(cand))
    if not found:
        click.echo(f"no {'' if status == 'all' else status + ' '}candidates")


@review.command("show")
@click.argument("path", type=click.Path(path_type=Path))
@click.argument("candidate")
@click.option("--json", "as_json", is_flag=True, help="Print the candidate as JSON.")
def show(path: Path, candidate: str, as_json: bool) -> None:
    """Everything about one candidate: base text, proposed text, each edit, each cited trace, the decision."""
    with _errors():
        [cand] = find_candidates(open_queue(path).read(), [candidate], pending=False)
    if as_json:
        click.echo(json.dumps(cand.model_dump(mode="json"), indent=1, ensure_ascii=False))
        return
    click.echo("\n".join(_show(cand)))


def _accept(path: Path, ids: list[str], reviewer: str | None, reason: str | None, force: bool) -> None:
    with _errors():
        done = accept_candidates(open_queue(path), ids, reviewer=_who(reviewer), reason=reason, force=force)
    for a in done:
        forced = f" (forced past: {'; '.join(a.problems)})" if a.problems else ""
        click.echo(f"accepted {a.candidate}: {', '.join(a.skill_ids)}{forced}")


@review.command("accept")
@click.argument("path", type=click.Path(path_type=Path))
@click.argument("candidates", nargs=-1, required=True)
@_decider
@click.option("--force", is_flag=True, help="Accept although a cited trace or the target changed (needs --reason).")
def accept(path: Path, candidates: tuple[str, ...], reviewer: str | None, reason: str | None, force: bool) -> None:
    """Apply the candidates to the skillbook, all or nothing, after re-checking their provenance."""
    _accept(path, list(candidates), reviewer, reason, force)


@review.command("accept-all")
@click.argument("path", type=click.Path(path_type=Path))
@_filters
@_decider
@click.option("--force", is_flag=True, help="Accept although a cited trace or a target changed (needs --reason).")
def accept_all(
    path: Path,
    section: str | None,
    keyword: str | None,
    source: str | None,
    reviewer: str | None,
    reason: str | None,
    force: bool,
) -> None:
    """Accept every pending candidate matching the filters, all or nothing."""
    with _errors():
        queue = open_queue(path).read()
    found = select_candidates(queue.candidates, section=section, keyword=keyword, source=source)
    if not found:
        click.echo("no pending candidates match")
        return
    _accept(path, [c.id for c in found], reviewer, reason, force)


@review.command("reject")
@click.argument("path", type=click.Path(path_type=Path))
@click.argument("candidates", nargs=-1, required=True)
@_decider
def reject(path: Path, candidates: tuple[str, ...], reviewer: str | None, reason: str | None) -> None:
    """Reject the candidates: remembered, so a later review run does not propose the same group again."""
    with _errors():
        ids = reject_candidates(open_queue(path), list(candidates), reviewer=_who(reviewer), reason=reason)
    click.echo(f"rejected {', '.join(ids)}")
