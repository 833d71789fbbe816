"""Accepting and rejecting candidates: provenance re-checked first, edits applied through the skillbook's own
operations with their original `InsightSource`s plus the reviewer and the decision time."""

from __future__ import annotations

import dataclasses
import difflib
from collections.abc import Sequence
from dataclasses import dataclass

from ace.core.insight_source import InsightSource, utc_now
from ace.core.skillbook import Skillbook
from ace.core.update_operation import UpdateOperation
from ace.exceptions import SkillbookError, UserError
from ace.redaction import Redactor
from ace.steps.export_markdown import write_markdown
from ace_eval.review._model import Candidate, Decision, QueueFile, queue_writer
from ace_eval.review._provenance import CollectionHashes, provenance_problems
from ace_eval.review._queue import ReviewQueue

__all__ = [
    "Accepted",
    "ReviewError",
    "accept_candidates",
    "apply_candidate",
    "find_candidates",
    "load_published",
    "reject_candidates",
]


class ReviewError(UserError, ValueError):
    """A decision that cannot be made as asked (unknown or decided candidate, failed provenance); names the fix."""


@dataclass(frozen=True)
class Accepted:
    """One accepted candidate: the published skills it changed, and the provenance problems forced past."""

    candidate: str
    skill_ids: list[str]
    problems: list[str]


def find_candidates(queue: QueueFile, ids: Sequence[str], *, pending: bool = True) -> list[Candidate]:
    """The candidates with these ids, in the order given; refuses an unknown id (with close matches) and, with
    `pending`, a decided one."""
    by_id = {c.id: c for c in queue.candidates}
    out: list[Candidate] = []
    for cid in dict.fromkeys(ids):
        cand = by_id.get(cid)
        if cand is None:
            close = difflib.get_close_matches(cid, list(by_id), n=3)
            hint = f" Did you mean {', '.join(close)}?" if close else ""
            raise ReviewError(f"no candidate {cid!r} in the queue.{hint} `ace-eval review list PATH` shows them")
        if pending and cand.decision is not None:
            d = cand.decision
            raise ReviewError(
                f"candidate {cid} was already {d.status} by {d.reviewer} at {d.decided_at}: a decision is final; "
                "leave it out (`ace-eval review list PATH` shows the pending ones)"
            )
        out.append(cand)
    return out


def apply_candidate(cand: Candidate, book: Skillbook, *, reviewer: str, decided_at: str) -> list[str]:
    """Replay the candidate's edits on `book`, in order; returns the ids of the skills changed.

    Every edit changes the candidate's one skill: its target, or for an add the skill its first edit creates
    (a later near-duplicate add becomes an update of it, and edits the runs made to their staged copies apply to
    it), so one candidate is one skill citing every trace. Raises `SkillbookError` when the skillbook refuses an
    edit (the caller saves nothing then).
    """
    skill_id = cand.target  # an add's skill gets its id from its first edit
    changed: list[str] = []
    for edit in cand.edits:
        op = UpdateOperation.from_dict(edit.operation)
        source = dataclasses.replace(InsightSource.from_dict(edit.source), reviewer=reviewer, reviewed_at=decided_at)
        if op.type == "ADD" and skill_id is None:
            skill = book.add_skill(
                op.section or "", op.issue or "", op.keywords or [], op.insight, insight_source=source
            )
        elif skill_id is None:
            raise SkillbookError(f"candidate {cand.id} has no target skill for its {op.type}: reject it")
        elif op.type in ("ADD", "UPDATE"):  # a later near-duplicate add updates the candidate's one skill
            skill = book.update_skill(skill_id, op.issue or "", op.keywords, op.insight, insight_source=source)
        elif op.type == "TAG":
            skill = book.tag_skill(skill_id, op.delta if op.delta is not None else 0, insight_source=source)
        elif op.type == "REMOVE":
            skill = book.remove_skill(skill_id, op.reason or "removed in review", insight_source=source)
        else:
            raise SkillbookError(f"candidate {cand.id} holds a {op.type}, which is never a staged edit")
        skill_id = skill.id
        changed.append(skill.id)
    return list(dict.fromkeys(changed))


def _clean(redactor: Redactor, reviewer: str, reason: str | None) -> tuple[str, str | None]:
    """The reviewer's name and the reason through the redaction sink; refuses a blank one (nothing is written)."""
    if not reviewer.strip():
        raise ReviewError("the reviewer's name is blank: pass --reviewer NAME (it is recorded with the decision)")
    if reason is not None and not reason.strip():
        raise ReviewError("--reason is blank: say why (it is recorded with the decision), or leave --reason out")
    clean, _ = redactor.redact_data({"reviewer": reviewer.strip(), "reason": reason and reason.strip()}, numbered=False)
    return str(clean["reviewer"]), clean["reason"]


def load_published(rq: ReviewQueue) -> Skillbook:
    """The published skillbook of the queue (an empty one when its file does not exist yet)."""
    return Skillbook.load_from_file(rq.skillbook) if rq.skillbook.is_file() else Skillbook()


def accept_candidates(
    rq: ReviewQueue, ids: Sequence[str], *, reviewer: str, reason: str | None = None, force: bool = False
) -> list[Accepted]:
    """Check every candidate's provenance, then apply them all to the published skillbook and record the decisions.

    All or nothing: a failed check (without `force`) or a refused edit writes nothing. Raises `ReviewError`
    naming each problem and the next step.
    """
    if force and not (reason or "").strip():
        raise ReviewError("--force needs --reason: say why the candidate is accepted although its sources changed")
    redactor = Redactor()
    reviewer, reason = _clean(redactor, reviewer, reason)
    with rq.editing() as queue:
        cands = find_candidates(queue, ids)
        published = load_published(rq)
        hashes = CollectionHashes()
        problems = {c.id: provenance_problems(c, published, hashes) for c in cands}
        bad = {cid: p for cid, p in problems.items() if p}
        if bad and not force:
            listed = "; ".join(f"{cid}: {', '.join(p)}" for cid, p in bad.items())
            raise ReviewError(
                f"refused, nothing was accepted: the evidence of {', '.join(bad)} changed ({listed}). Re-run the "
                "review over the current traces (`ace-eval e2e --review --skillbook ...`) to propose fresh candidates "
                "and reject these, or accept anyway with --force --reason '...' (the reason and the problems are "
                "recorded)"
            )
        now = utc_now()
        done: list[Accepted] = []
        for cand in cands:
            try:
                changed = apply_candidate(cand, published, reviewer=reviewer, decided_at=now)
            except SkillbookError as e:
                raise ReviewError(
                    f"refused, nothing was accepted: the skillbook refused an edit of {cand.id} ({e}); reject it, "
                    "or re-run the review"
                ) from None
            cand.decision = Decision(
                status="accepted",
                reviewer=reviewer,
                decided_at=now,
                reason=reason,
                forced=bool(problems[cand.id]),
                problems=problems[cand.id],
                applied_skill_ids=changed,
            )
            cand.updated_at = now
            done.append(Accepted(cand.id, changed, problems[cand.id]))
        # One commit: a kill between the files leaves a record the next reader finishes (`recover_commit`).
        published.save_to_file(rq.skillbook, also=[(rq.path, queue_writer(queue))])
        # The markdown is derived from the committed skillbook (`ace-eval export` rewrites it if a kill skips it).
        write_markdown(published, rq.skillbook.with_suffix(".md"), redactor=redactor)
    return done


def reject_candidates(rq: ReviewQueue, ids: Sequence[str], *, reviewer: str, reason: str | None = None) -> list[str]:
    """Record a rejection for each candidate (remembered: its group is not proposed again); returns their ids."""
    reviewer, reason = _clean(Redactor(), reviewer, reason)
    with rq.editing() as queue:
        cands = find_candidates(queue, ids)
        now = utc_now()
        for cand in cands:
            cand.decision = Decision(status="rejected", reviewer=reviewer, decided_at=now, reason=reason)
            cand.updated_at = now
        rq.save(queue)
    return [c.id for c in cands]
