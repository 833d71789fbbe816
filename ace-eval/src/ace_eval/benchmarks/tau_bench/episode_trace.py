"""A tau-bench episode as a trace of the collection format: the harness's view of the benchmark's result.

Here, not in the benchmark: the benchmark runs and scores episodes; the harness owns the trace format and the
gold-action diff the reflector reads.
"""

from __future__ import annotations

from ace_eval.benchmarks.tau_bench.episode import SOURCE_SYSTEM, EpisodeResult
from ace_eval.collection import Trace
from ace_eval.collection.grading import RESPOND_ACTION, GraderReport, diff_against_gold

__all__ = ["episode_grader", "episode_to_trace"]


def _feedback(result: EpisodeResult) -> str:
    if result.error is not None:
        return f"The episode failed before it could be scored: {result.error}"
    if result.reward_result is None:
        return f"The agent used all {result.steps} steps without finishing the conversation; reward 0."
    r = result.reward_result
    if r.reward == 1.0:
        return "Success: the final database matches the expected outcome and every required answer was given."
    parts = []
    if not r.r_actions:
        parts.append("the final database differs from the expected outcome (wrong, missing or extra changes)")
    missing = [o for o, found in r.outputs.items() if not found]
    if missing:
        parts.append(f"the replies never gave the required answer(s) {', '.join(repr(o) for o in missing)}")
    return f"Failure: {'; '.join(parts)}."


def episode_grader(result: EpisodeResult) -> GraderReport | None:
    """The episode compared with the gold actions and outputs (`None` for an episode that failed on an error)."""
    if result.error is not None:
        return None
    r = result.reward_result
    gold = [{"name": a.name, "kwargs": a.kwargs} for a in result.task.actions if a.name != RESPOND_ACTION]
    return diff_against_gold(
        result.messages,
        gold,
        outputs=None if r is None else r.outputs,
        reward=result.reward,
        database="unknown" if r is None else ("matches" if r.r_actions else "differs"),
    )


def episode_to_trace(result: EpisodeResult) -> Trace:
    """The episode as a trace of the collection format: the gold actions and outputs as ground truth and
    the reward breakdown in the metadata, so it can be reflected on and replayed offline."""
    task = result.task
    return Trace(
        source_system=SOURCE_SYSTEM,
        trace_id=f"task-{result.task_id}-trial-{result.trial}",
        task_id=str(result.task_id),
        question=task.instruction,
        messages=result.messages,
        reward=None if result.error is not None else result.reward,
        feedback=_feedback(result),
        ground_truth={
            "actions": [{"name": a.name, "kwargs": a.kwargs} for a in task.actions],
            "outputs": list(task.outputs),
        },
        grader=episode_grader(result),
        metadata={
            "reward_info": None if result.reward_result is None else result.reward_result.to_dict(),
            "trial": result.trial,
            "models": dict(result.models),
            "ended": result.ended,
            "steps": result.steps,
            "error": result.error,
            "error_kind": result.error_kind,
            "user_id": task.user_id,
        },
        skills_in_context=list(result.skills_in_context),
    )
