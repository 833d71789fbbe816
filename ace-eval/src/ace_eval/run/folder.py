"""The run folder `results/e2e/run_<12 hex>/`: its files, `run.json` (written atomically), and resume checks.

```
run_<id>/
  collection/                  the traces trained on (a trace collection)
  skillbook.json               the learned skillbook (schema v2), published by the `persist` step at the end
  skillbook.embeddings.npz     its vector cache
  skillbook.md                 the skillbook as markdown (the `export_markdown` step)
  samples.jsonl                one line per finished sample (the training checkpoint's journal)
  skillbook.snapshot.json      the checkpoint's skillbook snapshot (+ .embeddings.npz), what --resume starts from
  spans.jsonl                  every span of the run, one JSON object per line
  run.json                     the run's record (`RunRecord`): config, models, timings, usage and cost per role,
                               benchmark phases, per-sample results
  baseline/, evaluation/       the benchmark episodes before / after learning (when the agent runs; tau2: its files)
  learn/                       tau2 only: tau2's files of the train split, imported as collection/
  evaluation_with_quarantined/ after learning, with the quarantined skills back (only when there are any)
```
"""

from __future__ import annotations

import hashlib
import os
import re
import secrets
import shutil
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from ace.core.storage import atomic_write
from ace.exceptions import UserError
from ace_eval.collection import MANIFEST_FILE, TRACES_FILE
from ace_eval.run.checkpoint import SNAPSHOT_FILE, snapshot_of
from ace_eval.run.record import RUN_JSON, RunRecord, RunRecordError, load_run_record
from ace_eval.run.samples import numbered_sample_lines

__all__ = [
    "RESUME_KEYS",
    "RUN_JSON",
    "RunFolder",
    "RunFolderError",
    "check_resumable",
    "config_differences",
    "file_sha256",
    "new_run_id",
]

_RUN_ID = re.compile(r"^run_[0-9a-f]{12}$")
RESUME_KEYS: tuple[str, ...] = (
    "benchmark",
    "traces_sha256",
    "reflector_type",
    "reflector_model",
    "skill_manager_model",
    "embedding_model",
    "agent_model",
    "user_model",
    "epochs",
    "seed",
    "limit",
    "train_split",
    "eval_split",
    "num_trials",
    "max_num_steps",
    "skill_injection",
    "top_k",
    "skill_tokens",
    "profile",
    "max_output_tokens",
    "reflector_retries",
    "reflector_conversation",
    "sm_request_limit",
    "sm_tool_calls_limit",
    "no_benchmark",
    "redact",
    "review",
    "skillbook",
)
"""Settings a resumed run must keep: changing one would mix two different runs in one folder."""
_AGENT_ONLY = frozenset(
    {
        "agent_model",
        "user_model",
        "num_trials",
        "max_num_steps",
        "skill_injection",
        "top_k",
        "skill_tokens",
        "eval_split",
    }
)


class RunFolderError(UserError, ValueError):
    """A run folder that cannot be created, read or resumed; the message names the fix."""


class UnresumableFolderError(RunFolderError):
    """A folder whose learned skillbook a resume would replace (its journal is gone)."""


def check_resumable(folder: RunFolder) -> None:
    """Refuse to resume a folder with a skillbook (published or the checkpoint's snapshot) but no `samples.jsonl`:
    the journal of its training is gone, so a resume would train every sample again from an empty skillbook and
    save it over the learned one; and a folder whose journal has a damaged line before its last
    (`SamplesJournalError`): the resume would run that sample again and replay the rest on a broken chain."""
    held = next((p for p in (folder.skillbook, folder.snapshot) if p.is_file()), None)
    if held is not None and not folder.samples.is_file():
        raise UnresumableFolderError(
            f"{folder.path} holds {held.name} but no {folder.samples.name}: the journal of its training "
            "is gone, so resuming would train every sample again and replace the learned skillbook. Restore "
            f"{folder.samples.name} to continue this run, or start a new run (without --resume); to keep training "
            "this skillbook, copy it somewhere first. Nothing was changed"
        )
    if folder.samples.is_file():
        numbered_sample_lines(folder.samples)  # a damaged line (not a torn last one) refuses, naming it


def new_run_id() -> str:
    """`run_` and 12 random hex digits."""
    return f"run_{secrets.token_hex(6)}"


def file_sha256(path: Path) -> str:
    """Hex sha256 of a file's bytes."""
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


@dataclass(frozen=True)
class RunFolder:
    """Paths of one run folder."""

    path: Path

    @classmethod
    def create(cls, output_dir: Path) -> RunFolder:
        """A new, empty `output_dir/run_<id>/` (a fresh id if one is taken)."""
        output_dir.mkdir(parents=True, exist_ok=True)
        for _ in range(100):
            path = output_dir / new_run_id()
            try:
                path.mkdir()
            except FileExistsError:
                continue
            return cls(path)
        raise RunFolderError(f"could not create a new run folder in {output_dir}: clean it up")

    @classmethod
    def open(cls, path: Path) -> RunFolder:
        """An existing run folder, to resume or inspect; refuses a folder without `run.json`."""
        folder = cls(path)
        if not folder.run_json.is_file():
            hint = f"it has no {RUN_JSON}" if path.is_dir() else "it is a file" if path.exists() else ""
            hint = hint or "the folder does not exist"
            raise RunFolderError(
                f"{path} is not a run folder ({hint}): pass a folder written by `ace-eval e2e`, "
                "e.g. results/e2e/run_0123456789ab"
            )
        return folder

    @property
    def run_id(self) -> str:
        """The folder's name, `run_<12 hex>` (another name is kept as it is)."""
        return self.path.name

    @property
    def has_standard_name(self) -> bool:
        """Whether the name is `run_<12 hex>`."""
        return _RUN_ID.match(self.path.name) is not None

    @property
    def collection(self) -> Path:
        return self.path / "collection"

    @property
    def baseline(self) -> Path:
        return self.path / "baseline"

    @property
    def evaluation(self) -> Path:
        return self.path / "evaluation"

    @property
    def evaluation_with_quarantined(self) -> Path:
        """The evaluation again with the quarantined skills in the agent's context, to show what quarantine did."""
        return self.path / "evaluation_with_quarantined"

    @property
    def skillbook(self) -> Path:
        return self.path / "skillbook.json"

    @property
    def sidecar(self) -> Path:
        return self.path / "skillbook.embeddings.npz"

    @property
    def snapshot(self) -> Path:
        """The checkpoint's skillbook snapshot (`--resume` starts from it and the journal)."""
        return self.path / SNAPSHOT_FILE

    def learned_skillbook(self, record: RunRecord) -> Path:
        """The run's skillbook file: the one its `persist` step published when it is there, else the checkpoint's
        snapshot (an interrupted run, or one without `persist`), else the old checkpoint's `skillbook.json`."""
        published = self.step_output(record, "persist", self.skillbook.name)
        if published is not None and published.is_file():
            return published
        return snapshot_of(self.path)

    @property
    def markdown(self) -> Path:
        return self.path / "skillbook.md"

    @property
    def samples(self) -> Path:
        return self.path / "samples.jsonl"

    def step_output(self, record: RunRecord, step: str, default: str) -> Path | None:
        """The file the end-of-run `step` writes (its `path` option; a relative one is in this folder) in the
        pipeline `run.json` records; `None` when the run left the step out, `default` for a run from before
        pipelines were recorded."""
        path = record.step_output(step, default)
        return None if path is None else self.path / path

    @property
    def spans(self) -> Path:
        return self.path / "spans.jsonl"

    @property
    def run_json(self) -> Path:
        return self.path / RUN_JSON

    def read_record(self) -> RunRecord:
        """`run.json`, the record the runner continues; a damaged file is refused with its path and field."""
        try:
            record = load_run_record(self.run_json)
        except RunRecordError as e:
            raise RunFolderError(str(e)) from None
        if "config" not in record.model_fields_set:
            raise RunFolderError(f"{self.run_json} has no 'config' object: it was not written by `ace-eval e2e`")
        return record

    def write_text(self, path: Path, text: str) -> None:
        """Replace a text file of the folder atomically."""
        data = text.encode("utf-8")

        def write(f: IO[bytes]) -> None:
            f.write(data)

        atomic_write(path, write)

    def install_collection(self, source: Path) -> None:
        """Copy a validated collection into `collection/` (through a temporary folder, so a kill leaves none)."""
        if self.collection.exists():
            return
        tmp = self.path / ".collection.tmp"
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir()
        for name in (MANIFEST_FILE, TRACES_FILE):
            shutil.copyfile(source / name, tmp / name)
        os.replace(tmp, self.collection)


def config_differences(
    stored: Mapping[str, Any], requested: Mapping[str, Any], *, keys: Iterable[str] = RESUME_KEYS
) -> list[str]:
    """The settings that differ between a run and its resume, as `name: stored -> requested` lines.

    The agent's settings only matter when the agent runs (no `--traces`, or an evaluation).
    """
    agent_runs = stored.get("traces") is None or not stored.get("no_benchmark", False)
    out: list[str] = []
    for key in keys:
        if key in _AGENT_ONLY and not agent_runs:
            continue
        if key in requested and stored.get(key) != requested[key]:
            out.append(f"{key}: {stored.get(key)!r} in the run, {requested[key]!r} now")
    return out
