"""`trial.json`: the arguments a trial was started with, so `--resume TRIAL_DIR` continues the same trial and a
second start into the same folder is checked against them."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict, ValidationError

from ace.core.storage import atomic_write, bytes_writer
from ace.exceptions import UserError
from ace_eval.benchmarks.scores import read_score_json

__all__ = ["TRIAL_FILE", "TrialArgs", "claim_trial", "read_trial_args"]

TRIAL_FILE = "trial.json"


class TrialArgs(BaseModel):
    """What defines a trial (the budget, workers and output folder are each invocation's own)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    vary_specs: tuple[str, ...] = ()
    variants_file: Path | None = None
    traces: Path | None = None
    benchmark_name: str | None = None
    option_specs: tuple[str, ...] = ()
    scorer: str | None = None
    dev_spec: str | None = None
    test_spec: str | None = None
    num_trials: int = 1
    reflector_type: str | None = None
    reflector_model: str | None = None
    skill_manager_model: str | None = None
    agent_model: str | None = None
    user_model: str | None = None
    limit: int | None = None
    set_specs: tuple[str, ...] = ()
    incumbent: str | None = None
    publish_to: Path | None = None


def read_trial_args(directory: Path) -> TrialArgs:
    """The arguments of the trial in `directory` (a `UserError` naming the fix when it holds none)."""
    path = directory / TRIAL_FILE
    if not path.is_file():
        raise UserError(f"--resume {directory}: no {TRIAL_FILE} there, so no trial to continue; pass a trial folder")
    try:
        return TrialArgs.model_validate(read_score_json(path, fix="start a new trial"))
    except ValidationError as e:
        raise UserError(f"{path}: not a trial's arguments ({e.errors()[0]['msg']}); start a new trial") from None


def claim_trial(directory: Path, args: TrialArgs) -> None:
    """Write `trial.json` in a new or empty folder; a folder of the same trial is continued, another refused."""
    path = directory / TRIAL_FILE
    if path.is_file():
        if read_trial_args(directory) != args:
            raise UserError(f"{directory} holds another trial ({path}); pass --resume {directory} or another --out")
        return
    if directory.is_dir() and any(directory.iterdir()):
        raise UserError(f"{directory} is not empty and holds no trial; pass an empty or new --out")
    directory.mkdir(parents=True, exist_ok=True)
    atomic_write(path, bytes_writer((args.model_dump_json(indent=1) + "\n").encode("utf-8")))
