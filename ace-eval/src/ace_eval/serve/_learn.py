"""The learning worker of `ace-eval serve` (in its learning process, `_learning_child`): every `learn_every` ready
traces, one batch learned by the e2e runner.

A batch is `STORE/serve/learning/NNNN/`: `batch.json` (its OTel trace ids, its trace uids and the skillbook it
starts from), `traces/` (a trace collection) and the run folder `run_<id>/` that `ace-eval e2e --traces` makes of
it (redact -> reflect -> update -> quarantine ..., reflections in parallel, one skill-manager writer, a checkpoint
after every sample, one `ace.run` trace with its `rr.session` / `sm.session` spans). A batch starts from the
previous batch's learned skillbook (the first, and the first after a rollback or a publish by hand, from the
store's current version; empty before the first version).

Nothing is learned twice: a batch folder is written whole (temp folder, rename) before its run starts, so a trace
belongs to exactly one batch; a run killed halfway is resumed (`resume_e2e`: its journal keeps finished samples
from running again); `learned.jsonl` gets the batch's line only once its run completed. After a failure (every
sample failed, a model down) the batch is resumed after `retry_seconds`, then twice that, and so on, never replaced;
after `max_attempts` failed runs (counted in `NNNN/attempts.jsonl`, so a restart does not start the count again) it
is set aside in `failed.jsonl` with its reason, and the batches after it go on. `traces_learned` counts the traces
whose sample succeeded; those whose sample failed in a completed batch are `traces_errored`.
"""

from __future__ import annotations

import dataclasses
import json
import shutil
import sys
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ace.core.storage import atomic_write, bytes_writer
from ace.redaction import Redactor
from ace_eval.collection import Trace, write_collection
from ace_eval.e2e.config import E2ESettings
from ace_eval.e2e.runner import RunInjections, resume_e2e, run_e2e
from ace_eval.e2e.training_results import SampleResult
from ace_eval.run.folder import RUN_JSON, RunFolder
from ace_eval.serve._journal import Journal
from ace_eval.store import SkillbookStore

__all__ = ["ATTEMPTS_FILE", "BATCH_FILE", "FAILED_FILE", "LEARNED_FILE", "LearnConfig", "Learner", "LearningStopped"]

BATCH_FILE = "batch.json"
LEARNED_FILE = "learned.jsonl"
FAILED_FILE = "failed.jsonl"
"""Batches set aside after `max_attempts` failed runs: `{"batch", "reason", "attempts", "trace_uids"}`."""
ATTEMPTS_FILE = "attempts.jsonl"
"""In a batch folder: one line per failed run of it, with the reason."""


class LearningStopped(KeyboardInterrupt):
    """Raised after a committed sample once the server is stopping: the batch's run stops there, `interrupted`, and
    resumes after that sample at the next start (a `KeyboardInterrupt`, as Ctrl-C stops an e2e run)."""


@dataclass(frozen=True, kw_only=True)
class LearnConfig:
    """How serve learns, in a process of its own (`ace_eval.serve._process`): the e2e settings (models, profile,
    steps; each batch sets its own traces, skillbook and folder), from which that process builds its models."""

    settings: E2ESettings
    models_from: str | None = None
    """`MODULE:FUNCTION` returning `RunInjections` (pydantic-ai models by role, an embedder), called in the learning
    process instead of building those models from `settings`: scripted models for tests and benchmarks."""
    learn_every: int = 10
    retry_seconds: float = 60.0
    """Wait before the first retry of a failed batch; each further retry waits twice as long as the one before."""
    max_attempts: int = 3
    """Failed runs after which a batch is set aside (`failed.jsonl`) and the next batch is learned."""
    restart_seconds: float = 1.0
    """Wait before restarting a learning process that crashed; each further crash in a row waits twice as long."""


@dataclass(frozen=True)
class _Batch:
    number: int
    folder: Path
    otel_trace_ids: list[str]
    trace_uids: list[str]
    start: str | None
    store_version: int | None
    """The store's current version when the batch was made."""


class Learner:
    """Takes ready traces from `ready.jsonl` into batches and learns them one after the other; `step()` does one."""

    def __init__(
        self,
        folder: Path,
        store: SkillbookStore,
        ready: Journal,
        config: LearnConfig,
        *,
        injections: RunInjections | None = None,
        say: Callable[[str], None] | None = None,
    ) -> None:
        self.folder = folder / "learning"
        self.store = store
        self.config = config
        self.injections = injections or RunInjections()
        self.ready = ready
        self.say = say or (lambda line: print(f"ace-eval serve: {line}", file=sys.stderr))
        self.learned_journal = Journal(folder / LEARNED_FILE)
        self._lock = threading.Lock()
        self._queue: list[tuple[str, dict[str, Any]]] = []
        """Ready traces not in a batch yet, oldest first: (OTel trace id, trace as JSON)."""
        self._claimed: set[str] = set()
        """Trace uids in a batch or in the queue."""
        self._ready_offset = 0
        self.learned: list[dict[str, Any]] = self.learned_journal.records()
        self.traces_errored = sum(_errored(r) for r in self.learned)
        self.traces_learned = sum(len(r["trace_uids"]) for r in self.learned) - self.traces_errored
        self.failed_journal = Journal(folder / FAILED_FILE)
        self.failed: list[dict[str, Any]] = self.failed_journal.records()
        self.batches: list[_Batch] = []
        self.learning: _Batch | None = None
        self.last_error: str | None = None
        self.stopping = threading.Event()
        """Set by the server when it stops: the batch in flight stops after its next committed sample."""
        self._retry_at = 0.0
        self.folder.mkdir(parents=True, exist_ok=True)
        for temp in self.folder.glob("*.tmp"):  # a batch cut short before its rename never started
            shutil.rmtree(temp, ignore_errors=True)
        made = (p for p in self.folder.iterdir() if p.name.isdigit() and (p / BATCH_FILE).is_file())
        for path in sorted(made, key=lambda p: int(p.name)):
            raw = json.loads((path / BATCH_FILE).read_text("utf-8"))
            batch = _Batch(
                int(path.name), path, raw["otel_trace_ids"], raw["trace_uids"], raw["start"], raw.get("store_version")
            )
            self.batches.append(batch)
            self._claimed.update(batch.trace_uids)

    # -- the queue --------------------------------------------------------------------------------------------
    def _take_ready(self) -> None:
        records, self._ready_offset = self.ready.read_from(self._ready_offset)
        with self._lock:
            for record in records:
                for trace in record["traces"]:
                    if trace["trace_uid"] not in self._claimed:  # an OTel trace's traces may span two batches
                        self._claimed.add(trace["trace_uid"])
                        self._queue.append((record["otel_trace_id"], trace))

    @property
    def unlearned(self) -> list[_Batch]:
        """Batches neither learned nor set aside, oldest first."""
        done = {int(r["batch"]) for r in (*self.learned, *self.failed)}
        return [b for b in self.batches if b.number not in done]

    def counts(self) -> dict[str, object]:
        with self._lock:
            waiting = len(self._queue)
        return {
            "traces_learned": self.traces_learned,
            "traces_to_learn": waiting + sum(len(b.trace_uids) for b in self.unlearned),
            "traces_errored": self.traces_errored,
            "batches_learned": len(self.learned),
            "batches_failed": [{k: r[k] for k in ("batch", "reason", "attempts")} for r in self.failed],
            "learning_batch": self.learning.number if self.learning is not None else None,
            "last_learning_error": self.last_error,
        }

    # -- one pass ---------------------------------------------------------------------------------------------
    def step(self) -> bool:
        """Learn the first batch not learned yet, or make one of `learn_every` queued traces and learn it; True
        when a batch was learned."""
        self._take_ready()
        if time.monotonic() < self._retry_at:
            return False
        pending = self.unlearned
        batch = pending[0] if pending else self._new_batch()
        if batch is None:
            return False
        self.learning = batch
        try:
            folder = self._run(batch)
        except LearningStopped:
            self.say(f"learning stopped; batch {batch.number} resumes after its last finished sample at the next start")
            return False
        except Exception as e:  # the batch stays; it is resumed after a backoff, or set aside
            self._failed(batch, Redactor().redact_text(f"{type(e).__name__}: {e}"[:2000]))
            return False
        finally:
            self.learning = None
        record = folder.read_record()
        line = {
            "batch": batch.number,
            "run_dir": str(folder.path),
            "skillbook": str(folder.learned_skillbook(record)),
            "otel_trace_ids": batch.otel_trace_ids,
            "trace_uids": batch.trace_uids,
            "errors": len(record.errors),
            "errored_trace_uids": sorted({e.trace_uid for e in record.errors} & set(batch.trace_uids)),
        }
        self.learned_journal.append([line])
        self.learned.append(line)
        errored = _errored(line)
        self.traces_learned += len(batch.trace_uids) - errored
        self.traces_errored += errored
        self.last_error = None
        self.say(
            f"learned batch {batch.number}: {len(batch.trace_uids) - errored} trace(s), {errored} failed, "
            f"run {folder.path}"
        )
        return True

    def _failed(self, batch: _Batch, reason: str) -> None:
        """A failed run of `batch`: recorded; retried after a backoff, or set aside after `max_attempts`."""
        attempts = Journal(batch.folder / ATTEMPTS_FILE)
        attempts.append([{"reason": reason}])
        count = len(attempts.records())
        self.last_error = f"batch {batch.number}: {reason}"
        if count >= self.config.max_attempts:
            line = {"batch": batch.number, "reason": reason, "attempts": count, "trace_uids": batch.trace_uids}
            self.failed_journal.append([line])
            self.failed.append(line)
            self.say(f"learning {self.last_error}; set aside after {count} attempt(s), the next batch goes on")
            return
        wait = self.config.retry_seconds * 2 ** (count - 1)
        self._retry_at = time.monotonic() + wait
        self.say(f"learning {self.last_error}; attempt {count} of {self.config.max_attempts}, retrying in {wait:g} s")

    def _new_batch(self) -> _Batch | None:
        with self._lock:
            if len(self._queue) < self.config.learn_every:
                return None
            taken, self._queue = self._queue[: self.config.learn_every], self._queue[self.config.learn_every :]
        number = max((b.number for b in self.batches), default=0) + 1
        start, store_version = self._start()
        traces = [Trace.model_validate(t) for _, t in taken]
        otel_ids = list(dict.fromkeys(trace_id for trace_id, _ in taken))
        final = self.folder / f"{number:04d}"
        temp = self.folder / f"{number:04d}.tmp"
        shutil.rmtree(temp, ignore_errors=True)
        write_collection(temp / "traces", traces, source_system=traces[0].source_system)
        made = _Batch(number, final, otel_ids, [t.trace_uid for t in traces], start, store_version)
        batch = {
            "otel_trace_ids": otel_ids,
            "trace_uids": made.trace_uids,
            "start": start,
            "store_version": store_version,
        }
        atomic_write(temp / BATCH_FILE, bytes_writer(json.dumps(batch, indent=1).encode("utf-8")))
        temp.rename(final)
        self.batches.append(made)
        return made

    def _start(self) -> tuple[str | None, int | None]:
        """The skillbook a new batch starts from, and the store's current version: the previous batch's learned
        skillbook, unless `current` moved other than by serve publishing since that batch was made (a rollback, a
        publish by hand): then, like the first batch, the store's current version (or empty before the first)."""
        current = self.store.current()
        number = current.number if current is not None else None
        here = str(current.skillbook_path) if current is not None else None
        if not self.learned:
            return here, number
        last = int(self.learned[-1]["batch"])  # every earlier batch is learned or set aside
        previous = next(b for b in self.batches if b.number == last)
        published = [
            v.number
            for v in self.store.versions()
            if v.produced_by.kind == "serve" and _batch_of(v.produced_by.details) >= previous.number
        ]
        expected = max(published) if published else previous.store_version
        if number is not None and number != expected:
            self.say(
                f"{self.store.root} is at version {number} (a rollback or a publish by hand): learning goes on from it"
            )
            return here, number
        return str(self.learned[-1]["skillbook"]), number

    def _on_sample(self, sample: SampleResult) -> None:
        given = self.injections.on_sample
        if given is not None:
            given(sample)
        if self.stopping.is_set():
            raise LearningStopped

    def _run(self, batch: _Batch) -> RunFolder:
        """The batch's run: resumed when it has one that did not complete, reused when it completed, else started."""
        inj = dataclasses.replace(self.injections, on_sample=self._on_sample)
        runs = sorted(p for p in batch.folder.iterdir() if (p / RUN_JSON).is_file())
        if runs:
            folder = RunFolder.open(runs[-1])
            if folder.read_record().status == "completed":
                return folder
            return resume_e2e(folder.path, {"no_preflight": True}, injections=inj).folder
        settings = dataclasses.replace(
            self.config.settings,
            traces=batch.folder / "traces",
            skillbook=Path(batch.start) if batch.start is not None else None,
            output_dir=batch.folder,
            no_benchmark=True,
            no_preflight=True,
        )
        return run_e2e(settings, injections=inj).folder


def _errored(line: Mapping[str, Any]) -> int:
    """Traces of a learned batch whose sample failed (a line written before they were listed: its error count)."""
    listed = line.get("errored_trace_uids")
    return len(listed) if isinstance(listed, list) else min(int(line.get("errors", 0)), len(line["trace_uids"]))


def _batch_of(details: Mapping[str, object]) -> int:
    """The learning batch a version serve published came from (0: not recorded)."""
    batch = details.get("batch")
    return batch if isinstance(batch, int) else 0
