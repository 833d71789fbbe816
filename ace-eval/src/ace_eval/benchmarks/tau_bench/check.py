"""`ace-eval benchmark check tau-bench-airline`: gold hashes of every task, and recorded runs re-executed."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from tqdm import tqdm

from ace import json_safe
from ace_eval.benchmarks.tau_bench.data import AirlineData, DataFolderError, Table
from ace_eval.benchmarks.tau_bench.env import gold_data_hash
from ace_eval.benchmarks.tau_bench.replay import replay_messages

__all__ = [
    "PROVINCE_REVISION",
    "GoldHashes",
    "RecordedRun",
    "RevisionCheck",
    "TrajectoryCheck",
    "check_recorded_runs",
    "check_trajectories",
    "has_state_addresses",
    "load_trajectories",
    "province_revision",
]

PROVINCE_REVISION = "users.json with address.province (the revision tau-bench's recorded runs were made on)"


class RecordedRun(BaseModel):
    """One run of tau-bench's result format: `{task_id, reward, info, traj, trial}`."""

    model_config = ConfigDict(extra="allow")
    task_id: int = Field(ge=0)
    trial: int = 0
    reward: float
    traj: list[dict[str, object]]
    info: dict[str, object] = Field(default_factory=dict)

    @property
    def recorded_gt_hash(self) -> str | None:
        """`info.reward_info.info.gt_data_hash`, when the run recorded one."""
        reward_info = self.info.get("reward_info")
        inner = reward_info.get("info") if isinstance(reward_info, dict) else None
        value = inner.get("gt_data_hash") if isinstance(inner, dict) else None
        return value if isinstance(value, str) else None


def load_trajectories(path: str | Path) -> list[RecordedRun]:
    """Read a tau-bench results file (a JSON list of runs); errors name the file and the run."""
    p = Path(path)
    try:
        raw = json_safe.read_json(p)
    except json_safe.JsonInputError as e:
        if e.kind == "missing":
            raise DataFolderError(f"{p}: no such trajectories file") from None
        raise DataFolderError(str(e)) from None
    if not isinstance(raw, list):
        raise DataFolderError(f"{p} must hold a JSON list of runs ({{task_id, reward, traj, trial, info}})")
    runs: list[RecordedRun] = []
    for i, item in enumerate(raw):
        try:
            runs.append(RecordedRun.model_validate(item))
        except ValidationError as e:
            first = e.errors()[0]
            where = ".".join(str(part) for part in first["loc"])
            raise DataFolderError(f"{p}: run {i}: field {where}: {first['msg']}") from None
    return runs


class GoldHashes:
    """Gold database hash per task, computed once on first use."""

    def __init__(self, data: AirlineData) -> None:
        self._data = data
        self._hashes: dict[int, str] = {}

    def __getitem__(self, task_id: int) -> str:
        found = self._hashes.get(task_id)
        if found is None:
            found = self._hashes[task_id] = gold_data_hash(self._data, self._data.task(task_id))
        return found

    def all(self, *, progress: bool = False) -> list[tuple[int, str]]:
        """`(task_id, gold hash)` for every task, in order."""
        ids = range(len(self._data.tasks))
        return [(i, self[i]) for i in tqdm(ids, desc="gold replays", unit="task", disable=not progress)]


@dataclass(frozen=True, kw_only=True)
class TrajectoryCheck:
    """A recorded run against its re-execution."""

    task_id: int
    trial: int
    recorded_reward: float
    reward: float
    tool_calls: int
    observation_mismatches: int
    """Tool results that differ from the recorded ones (a different data revision shows up here first)."""
    gt_data_hash: str
    recorded_gt_hash: str | None

    @property
    def matches(self) -> bool:
        """Whether the recomputed reward equals the recorded one."""
        return math.isclose(self.reward, self.recorded_reward, abs_tol=1e-6)

    @property
    def gold_hash_matches(self) -> bool | None:
        """Whether the recorded gold hash equals ours; None when the run recorded none."""
        return None if self.recorded_gt_hash is None else self.recorded_gt_hash == self.gt_data_hash


def check_trajectories(
    data: AirlineData, runs: Sequence[RecordedRun], *, gold: GoldHashes | None = None, progress: bool = False
) -> list[TrajectoryCheck]:
    """Re-execute every run's tool calls on a fresh database and score it as upstream would."""
    gold = gold or GoldHashes(data)
    for run in runs:
        data.task(run.task_id)  # fail before the work on a task id this folder does not have
    checks: list[TrajectoryCheck] = []
    items: Iterable[RecordedRun] = tqdm(runs, desc="replaying runs", unit="run", disable=not progress)
    for run in items:
        task = data.task(run.task_id)
        outcome = replay_messages(data, task, run.traj, gt_data_hash=gold[run.task_id])
        checks.append(
            TrajectoryCheck(
                task_id=run.task_id,
                trial=run.trial,
                recorded_reward=run.reward,
                reward=outcome.reward,
                tool_calls=outcome.tool_calls,
                observation_mismatches=len(outcome.observation_mismatches),
                gt_data_hash=gold[run.task_id],
                recorded_gt_hash=run.recorded_gt_hash,
            )
        )
    return checks


def has_state_addresses(data: AirlineData) -> bool:
    """Whether `users.json` is the later upstream revision, in which every address's `province` became `state`."""
    return any("state" in (user.get("address") or {}) for user in data.users.values())


def province_revision(data: AirlineData) -> AirlineData:
    """`data` with every user address's `state` renamed back to `province`; nothing else of upstream differs
    between the two revisions (on this one, all 810 tool results of the 120 recorded GPT-4o runs are
    byte-identical and all 27 recorded gold hashes are reproduced)."""
    users: Table = {}
    for user_id, user in data.users.items():
        address = {("province" if k == "state" else k): v for k, v in (user.get("address") or {}).items()}
        users[user_id] = {**user, "address": address}
    return dataclasses.replace(data, users=users, entity_bytes={})


@dataclass(frozen=True, kw_only=True)
class RevisionCheck:
    """Recorded runs re-executed on the data revision that reproduces them best."""

    checks: list[TrajectoryCheck]
    revision: str | None
    """`None`: the folder's data as it is; else the revision used (`PROVINCE_REVISION`)."""
    folder_checks: list[TrajectoryCheck]
    """The same runs on the folder's data as it is (equal to `checks` when no other revision was used)."""


def _fit(checks: Sequence[TrajectoryCheck]) -> tuple[int, int, int]:
    """How well a revision reproduces the runs: gold hashes, then tool results, then rewards."""
    return (
        sum(c.gold_hash_matches is True for c in checks),
        -sum(c.observation_mismatches for c in checks),
        sum(c.matches for c in checks),
    )


def check_recorded_runs(data: AirlineData, runs: Sequence[RecordedRun], *, progress: bool = False) -> RevisionCheck:
    """`check_trajectories` on the folder's data; when that does not reproduce the recorded gold hashes or tool
    results and `users.json` is the later `state` revision, again on the `province` revision, keeping the
    revision that reproduces the runs best."""
    folder = check_trajectories(data, runs, progress=progress)
    perfect = all(c.gold_hash_matches is not False and c.observation_mismatches == 0 for c in folder)
    if perfect or not has_state_addresses(data):
        return RevisionCheck(checks=folder, revision=None, folder_checks=folder)
    earlier = check_trajectories(province_revision(data), runs, progress=progress)
    if _fit(earlier) > _fit(folder):
        return RevisionCheck(checks=earlier, revision=PROVINCE_REVISION, folder_checks=folder)
    return RevisionCheck(checks=folder, revision=None, folder_checks=folder)
