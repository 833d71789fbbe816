"""Scored files a user already has, read as `BenchmarkScores`: ours (`scores`) and tau2's results JSON (`tau2`).

tau2's results file is read as JSON alone (the `tau2` package is not needed to read one): each simulation is a
trial of its task, its reward `reward_info.reward` (a simulation without one, as tau2 keeps an errored episode,
is a failed trial carrying the termination reason as its error).
"""

from __future__ import annotations

import os
from collections import defaultdict
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal, assert_never, get_args

from pydantic import ValidationError

from ace_eval.benchmarks.scores import (
    BenchmarkScores,
    ScoresFileError,
    TrialScore,
    read_score_json,
    read_scores,
    success_of,
)

__all__ = ["FORMAT_HELP", "SCORE_FORMATS", "ScoreFormat", "read_score_file", "scores_from_tau2", "sniff_format"]

ScoreFormat = Literal["scores", "tau2"]
SCORE_FORMATS: tuple[ScoreFormat, ...] = get_args(ScoreFormat)
"""What `read_score_file` reads: `scores` (`BenchmarkScores` JSON) and `tau2` (a tau2 results file)."""
FORMAT_HELP = (
    "The files' format: `tau2` (a results.json tau2 wrote) or `scores` (benchmark scores JSON); told from the file "
    "when not given."
)
"""The `--format` help of the commands that read scored files."""


def _load_json(path: Path) -> Any:
    return read_score_json(path, fix="pass a tau2 results file or a scores file written by ace-eval")


def sniff_format(data: object) -> ScoreFormat | None:
    """`tau2` for an object with `simulations`, `scores` for one with `benchmark` and `tasks`, else `None`."""
    if isinstance(data, Mapping):
        if "simulations" in data:
            return "tau2"
        if "benchmark" in data and "tasks" in data:
            return "scores"
    return None


def _tokens(messages: object) -> int | None:
    total, seen = 0, False
    for message in messages if isinstance(messages, list) else []:
        usage = message.get("usage") if isinstance(message, Mapping) else None
        if isinstance(usage, Mapping) and message.get("role") == "assistant":
            seen = True
            total += int(usage.get("prompt_tokens") or 0) + int(usage.get("completion_tokens") or 0)
    return total if seen else None


def _trial(sim: Mapping[str, Any]) -> TrialScore:
    reward = (sim.get("reward_info") or {}).get("reward")
    error = None
    if not isinstance(reward, int | float) or isinstance(reward, bool):
        reward, error = 0.0, f"no reward (terminated: {sim.get('termination_reason') or 'unknown'})"
    return TrialScore(
        reward=float(reward),
        success=error is None and success_of(float(reward)),
        tokens=_tokens(sim.get("messages")),
        cost=sim.get("agent_cost"),
        seed=sim.get("seed"),
        error=error,
    )


def _scores_from_tau2(data: Mapping[str, Any], source: str) -> BenchmarkScores:
    sims = data.get("simulations")
    if not isinstance(sims, list) or not all(isinstance(s, Mapping) and "task_id" in s for s in sims):
        raise ScoresFileError(
            f"{source} is not a tau2 results file: 'simulations' must be a list of objects with a 'task_id'; "
            "pass the results.json tau2 wrote"
        )
    by_task: dict[str, list[tuple[int, TrialScore]]] = defaultdict(list)
    seeds: dict[int, int] = {}
    for position, sim in enumerate(sims):
        trial = sim.get("trial")
        number = trial if isinstance(trial, int) else position
        task = str(sim["task_id"])
        if any(seen == number for seen, _ in by_task[task]):
            raise ScoresFileError(
                f"{source} holds trial {number} of task {task} twice; pass the results.json tau2 wrote, unedited"
            )
        by_task[task].append((number, _trial(sim)))
        if isinstance(trial, int) and isinstance(sim.get("seed"), int):
            seeds.setdefault(trial, sim["seed"])
    info: Mapping[str, Any] = data["info"] if isinstance(data.get("info"), Mapping) else {}
    domain = (info.get("environment_info") or {}).get("domain_name")
    most = max((len(trials) for trials in by_task.values()), default=1)
    asked = info.get("num_trials")
    num_trials: int = asked if isinstance(asked, int) else most
    models = {
        role: str(llm)
        for role, llm in (
            ("agent", (info.get("agent_info") or {}).get("llm")),
            ("user", (info.get("user_info") or {}).get("llm")),
        )
        if llm
    }
    return BenchmarkScores(
        benchmark=f"tau2-{domain}" if domain else "tau2",
        tasks={task: [t for _, t in sorted(trials, key=lambda p: p[0])] for task, trials in by_task.items()},
        num_trials=max(num_trials, most, 1),
        seeds=[seeds[i] for i in sorted(seeds)] if sorted(seeds) == list(range(len(seeds))) else [],
        models=models,
    )


def scores_from_tau2(data: Mapping[str, Any], *, source: str = "the results") -> BenchmarkScores:
    """A tau2 results file's JSON as `BenchmarkScores` (tasks in first-seen order, trials by trial number).

    Raises:
        ScoresFileError: `data` has no list of simulations, one without a task id, a trial twice, or a field of
            the wrong type.
    """
    try:
        return _scores_from_tau2(data, source)
    except ValidationError as e:
        first = e.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        raise ScoresFileError(
            f"{source} is not a tau2 results file: {where}: {first['msg']}; pass the results.json tau2 wrote"
        ) from None


def _read_tau2(path: Path) -> BenchmarkScores:
    data = _load_json(path)
    if not isinstance(data, Mapping):
        raise ScoresFileError(
            f"{path} is not a tau2 results file (not a JSON object); pass the results.json tau2 wrote"
        )
    return scores_from_tau2(data, source=str(path))


def read_score_file(path: str | os.PathLike[str], format: ScoreFormat | None = None) -> BenchmarkScores:
    """The scores in the file at `path`, in `format` or the one its JSON shows (`sniff_format`).

    Raises:
        ScoresFileError: the file cannot be read, its format cannot be told, or it is malformed.
    """
    p = Path(path)
    if format is None:
        format = sniff_format(_load_json(p))
        if format is None:
            raise ScoresFileError(
                f"cannot tell the format of {p}: neither a tau2 results file ('simulations') nor a scores file "
                "('benchmark' and 'tasks'); pass --format with one of " + ", ".join(SCORE_FORMATS)
            )
    if format == "scores":
        return read_scores(p)
    if format == "tau2":
        return _read_tau2(p)
    assert_never(format)
