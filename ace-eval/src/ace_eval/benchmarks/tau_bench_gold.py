"""The gold check of tau-bench airline (`ace-eval benchmark check tau-bench-airline`): every task's gold actions
replayed to their data hash, or recorded runs re-executed and re-scored."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from ace.exceptions import UserError
from ace_eval.benchmarks.tau_bench import AirlineData
from ace_eval.benchmarks.tau_bench.check import (
    PROVINCE_REVISION,
    GoldHashes,
    TrajectoryCheck,
    check_recorded_runs,
    has_state_addresses,
    load_trajectories,
)

__all__ = ["check_airline_gold"]


def check_airline_gold(
    data: AirlineData, recorded: Path | None, *, progress: bool, out: Callable[[str], None], err: Callable[[str], None]
) -> bool:
    """Print `<task_id> <gold hash>` of every task, or with `recorded` (a tau-bench results file) re-execute every
    run on a fresh database and print `<task_id> <trial> <recorded reward> <computed reward>`; notes go to `err`.
    False when a recorded reward differs."""
    runs = load_trajectories(recorded) if recorded is not None else None
    if runs is None:
        for task_id, gold_hash in GoldHashes(data).all(progress=progress):
            out(f"{task_id} {gold_hash}")
        if has_state_addresses(data):
            err(
                "note: users.json holds the later upstream revision (address.state); runs recorded on the earlier "
                "one (address.province) record other gold hashes: pass --trajectories FILE to check them on the "
                "revision they were made on"
            )
        return True
    try:
        result = check_recorded_runs(data, runs, progress=progress)
    except IndexError as e:
        raise UserError(f"{recorded}: {e}") from None
    checks = result.checks
    for c in checks:
        out(f"{c.task_id} {c.trial} {c.recorded_reward} {c.reward}")
    mismatches = [c for c in checks if not c.matches]
    err(f"{len(checks) - len(mismatches)}/{len(checks)} recorded rewards reproduced; {_agreement(checks)}")
    if result.revision == PROVINCE_REVISION:
        err(
            f"note: users.json here is the later upstream revision (address.state); the runs were recorded on the "
            f"earlier one, so they were re-executed on {PROVINCE_REVISION}. On the folder's revision: "
            f"{_agreement(result.folder_checks)}"
        )
    elif any(c.gold_hash_matches is False or c.observation_mismatches for c in checks):
        err(
            "note: differing tool results or gold hashes mean the runs were recorded on another revision of the "
            "data than this folder holds"
        )
    if mismatches:
        err(f"error: {len(mismatches)} run(s) scored differently than recorded")
        return False
    return True


def _agreement(checks: list[TrajectoryCheck]) -> str:
    """`recorded gold hashes equal for a/b tasks; c/d tool results identical to the recorded ones`."""
    gold_diffs = {c.task_id for c in checks if c.gold_hash_matches is False}
    gold_known = {c.task_id for c in checks if c.gold_hash_matches is not None}
    observation_diffs = sum(c.observation_mismatches for c in checks)
    tool_calls = sum(c.tool_calls for c in checks)
    return (
        f"recorded gold hashes equal for {len(gold_known) - len(gold_diffs)}/{len(gold_known)} tasks; "
        f"{tool_calls - observation_diffs}/{tool_calls} tool results identical to the recorded ones"
    )
