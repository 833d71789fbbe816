"""Run a trial: collect the learn traces once, let each candidate learn through the e2e runner in its own run
folder, score every candidate and the incumbent on the same dev tasks and seeds, pick the winner, gate it against
the incumbent, publish on promote, and score the winner alone on the held-out test tasks."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path

from ace.core.storage import atomic_write, bytes_writer
from ace.exceptions import UserError
from ace_eval.benchmarks import BenchmarkScores
from ace_eval.benchmarks.phases import episode_progress
from ace_eval.benchmarks.scores import read_scores, write_scores
from ace_eval.e2e.config import E2ESettings
from ace_eval.e2e.runner import resume_e2e, run_e2e
from ace_eval.gate import GATE_FILE, compare, publish_promoted
from ace_eval.run.folder import RUN_JSON, RunFolder
from ace_eval.store import ProducedBy, SkillbookStore
from ace_eval.trials._parallel import run_in_parallel
from ace_eval.trials._plan import SCORES, TrialPlan
from ace_eval.trials._scoreboard import (
    SCOREBOARD_FILE,
    CandidateEntry,
    DevScore,
    Scoreboard,
    TestScore,
    read_scoreboard,
)
from ace_eval.trials._vary import Candidate

__all__ = ["pareto_set", "pick_winner", "run_trial", "score_candidate"]

_SCORES = SCORES
_COLLECTED = "collected"
"""Marker in `traces/`: the shared collection finished (a resume does not collect again)."""


def _scored(path: Path, score: Callable[[], BenchmarkScores]) -> BenchmarkScores:
    """`path`'s scores when a previous invocation left them (a resume), else scored now and written."""
    if path.is_file():
        return read_scores(path)
    scores = score()
    path.parent.mkdir(parents=True, exist_ok=True)
    write_scores(path, scores)
    return scores


def _evaluate(
    plan: TrialPlan,
    book: Path | None,
    tasks: Sequence[str],
    seeds: Sequence[int] | None,
    directory: Path,
    *,
    label: str,
) -> BenchmarkScores:
    from ace.core.skillbook import Skillbook

    def score() -> BenchmarkScores:
        with episode_progress(plan.benchmark, plan.env, label, len(tasks) * plan.num_trials) as shown:
            scores = plan.benchmark.evaluate(
                shown,
                skillbook=Skillbook.load_from_file(book) if book is not None else None,
                task_ids=list(tasks),
                num_trials=plan.num_trials,
                seeds=seeds,
                directory=directory,
            )
        return scores.model_copy(update={"skillbook": str(book) if book is not None else None})

    return _scored(directory / _SCORES, score)


def _shared_traces(plan: TrialPlan) -> Path:
    """The collection every candidate learns from: `--traces`, or the learn split collected once (`traces/`)."""
    if plan.traces is not None:
        return plan.traces
    assert plan.learner is not None  # the command requires --traces or --benchmark
    directory = plan.directory / "traces"
    if not (directory / _COLLECTED).is_file():  # an interrupted collection resumes: the protocol redoes only the rest
        plan.say(f"collecting the learn split of {plan.learner.name} once (shared by every candidate) ...")
        tasks = list(plan.learner.tasks("learn"))
        with episode_progress(plan.learner, plan.env, "learn split", len(tasks) * plan.num_trials) as shown:
            plan.learner.collect(shown, skillbook=None, task_ids=tasks, num_trials=plan.num_trials, directory=directory)
        (directory / _COLLECTED).write_text("", encoding="utf-8")
    return directory


def _learn(plan: TrialPlan, candidate: Candidate, traces: Path) -> RunFolder:
    """The candidate's run folder under `candidates/<name>/`: reused when finished, resumed when interrupted,
    else started (the e2e runner: locked, resumable, redacted). A run there that learned with other settings (the
    variants file changed since) is refused: its scores would not be the candidate's."""
    home = plan.directory / "candidates" / candidate.name
    learn = dict(candidate.learn if candidate.learn is not None else candidate.settings)
    if candidate.start_from is not None:  # the previous epoch's checkpoint (finished: candidates run in order)
        previous = _learn(plan, next(c for c in plan.candidates if c.name == candidate.start_from), traces)
        learn["skillbook"] = previous.learned_skillbook(previous.read_record())
    settings = E2ESettings.from_dict({**plan.base, **learn, "traces": traces, "no_benchmark": True, "output_dir": home})
    runs = sorted(p for p in home.iterdir() if (p / RUN_JSON).is_file()) if home.is_dir() else []
    if not runs:
        return run_e2e(settings).folder
    folder = RunFolder.open(runs[-1])
    record = folder.read_record()
    _refuse_other_settings(candidate.name, folder, record.config.as_dict(), settings, [*plan.base, *learn])
    return resume_e2e(folder.path).folder if record.status != "completed" else folder


def _refuse_other_settings(
    name: str, folder: RunFolder, stored: Mapping[str, object], settings: E2ESettings, keys: Sequence[str]
) -> None:
    """A `UserError` (exit 2) when the run in `folder` learned with other values of the settings `keys` than the
    candidate `name` now has."""
    wanted = settings.to_dict()
    changed = [
        f"{k}: {stored.get(k)!r} in the run, {wanted[k]!r} now"
        for k in dict.fromkeys(keys)
        if k in wanted and json.dumps(stored.get(k), default=str) != json.dumps(wanted[k], default=str)
    ]
    if changed:
        raise UserError(
            f"candidate {name}: its run {folder.path} learned with other settings ({'; '.join(changed)}); the "
            f"trial's candidates changed since: restore them (e.g. the --variants file), or delete "
            f"{folder.path.parent} to learn {name} again, or start a new trial"
        )


def _cost(scores: BenchmarkScores) -> float:
    return sum(t.cost or 0.0 for trials in scores.tasks.values() for t in trials)


def pick_winner(entries: Sequence[CandidateEntry]) -> CandidateEntry:
    """The best dev mean; ties go to fewer learning tokens, then to the earlier candidate."""
    return min(entries, key=lambda e: (-e.dev.mean, e.tokens))


def pareto_set(entries: Sequence[CandidateEntry]) -> list[str]:
    """Candidates best (ties included) on at least one dev task by its mean reward."""
    tasks = entries[0].dev.per_task if entries else {}
    best: list[str] = []
    for task in tasks:
        means = {e.name: sum(e.dev.per_task[task]) / max(len(e.dev.per_task[task]), 1) for e in entries}
        top = max(means.values())
        best.extend(n for n, m in means.items() if m == top and n not in best)
    return [e.name for e in entries if e.name in best]


def score_candidate(
    plan: TrialPlan,
    candidate: Candidate,
    traces: Path,
    seeds: Sequence[int] | None,
    *,
    scoring: AbstractContextManager[object] | None = None,
) -> tuple[CandidateEntry, tuple[int, float]]:
    """The candidate learned (or its finished run opened) and scored on the dev tasks (or its scores read); returns
    its scoreboard entry and what it used (learning samples plus dev episodes, cost). `scoring`: held around the dev
    scoring (a slot shared by the candidates of a parallel trial)."""
    folder = _learn(plan, candidate, traces)
    record = folder.read_record()
    book = folder.learned_skillbook(record)
    fresh = not plan.scored_already(candidate)
    with scoring if scoring is not None and fresh else nullcontext():
        if fresh:
            plan.say(f"{plan.label(candidate)}: scoring {len(plan.dev_tasks)} dev task(s)")
        dev = _evaluate(plan, book, plan.dev_tasks, seeds, folder.path.parent / "dev", label=f"{candidate.name} (dev)")
    used = (
        (record.training.samples if record.training else 0) + sum(len(t) for t in dev.tasks.values()),
        (record.cost_usd or 0.0) + _cost(dev),
    )
    entry = CandidateEntry(
        name=candidate.name,
        settings=dict(candidate.settings),
        run_dir=str(folder.path),
        skillbook=str(book),
        dev=DevScore.of(dev),
        tokens=sum(u.input_tokens + u.output_tokens for u in record.usage.values()),
        cost_usd=record.cost_usd,
    )
    return entry, used


def run_trial(plan: TrialPlan) -> Scoreboard:
    """Run (or continue) the trial in `plan.directory` and write `scoreboard.json`."""
    plan.directory.mkdir(parents=True, exist_ok=True)
    traces = _shared_traces(plan)
    incumbent = _evaluate(
        plan, plan.incumbent.path, plan.dev_tasks, None, plan.directory / "incumbent", label="incumbent (dev)"
    )
    seeds = incumbent.seeds or None
    spent = (sum(len(t) for t in incumbent.tasks.values()), _cost(incumbent))
    if plan.max_parallel > 1:  # then every candidate below is read from its folder
        run_in_parallel(plan, spent, lambda c, slot: score_candidate(plan, c, traces, seeds, scoring=slot))
    entries: list[CandidateEntry] = []
    estimate: tuple[int, float] | None = None
    for candidate in plan.candidates:
        if estimate is not None and not plan.scored_already(candidate):
            plan.budget.check(candidate.name, [e.name for e in entries], spent, estimate)
        if plan.max_parallel == 1:
            plan.say(f"{plan.label(candidate)}: learning; so far {spent[0]} episodes, ${spent[1]:.4f}")
        entry, used = score_candidate(plan, candidate, traces, seeds)
        estimate = estimate or used
        spent = (spent[0] + used[0], spent[1] + used[1])
        entries.append(entry)
    winner = pick_winner(entries)
    entries = [e.model_copy(update={"verdict": "won" if e is winner else "lost"}) for e in entries]
    winner_scores = read_scores(Path(winner.run_dir).parent / "dev" / _SCORES)
    gate = compare(incumbent, winner_scores)
    atomic_write(plan.directory / GATE_FILE, bytes_writer((gate.model_dump_json(indent=1) + "\n").encode("utf-8")))
    plan.say(f"winner: {winner.name} (dev mean {winner.dev.mean:.3f}); gate vs {plan.incumbent.label}: {gate.decision}")
    earlier = plan.directory / SCOREBOARD_FILE
    published = read_scoreboard(earlier).published if earlier.is_file() else None  # a finished trial run again
    if plan.publish is not None and published is None:
        store = SkillbookStore.open_or_create(plan.publish) if gate.decision == "promote" else None
        by = ProducedBy(
            kind="trials",
            command=plan.command or None,
            run_dir=winner.run_dir,
            details={"trial_dir": str(plan.directory), "candidate": winner.name},
        )
        version = publish_promoted(store, Path(winner.skillbook), gate, produced_by=by) if store else None
        published = f"{plan.publish} version {version.number}" if version is not None else None
    test = None
    if plan.test_tasks:
        plan.say(f"scoring the winner alone on {len(plan.test_tasks)} held-out test task(s)")
        scored = _evaluate(
            plan, Path(winner.skillbook), plan.test_tasks, seeds, plan.directory / "test", label="winner (test)"
        )
        held_out = DevScore.of(scored)
        test = TestScore(
            candidate=winner.name,
            tasks=list(plan.test_tasks),
            mean=held_out.mean,
            per_task=held_out.per_task,
            pass_hat_k=held_out.pass_hat_k,
        )
    board = Scoreboard(
        benchmark=plan.benchmark.name,
        dev_tasks=list(plan.dev_tasks),
        test_tasks=list(plan.test_tasks),
        num_trials=plan.num_trials,
        seeds=list(incumbent.seeds),
        candidates=entries,
        winner=winner.name,
        pareto=pareto_set(entries),
        incumbent=plan.incumbent.label,
        gate=gate,
        published=published,
        test=test,
    )
    board.write(plan.directory / SCOREBOARD_FILE)
    return board
