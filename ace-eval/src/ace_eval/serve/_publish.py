"""Publishing in `ace-eval serve`: every `every` learned traces, the latest learned skillbook is a candidate version.

Through the gate when a benchmark or a scorer is configured: the store's current version is the incumbent (none
yet: the agent without a skillbook), both are scored on the same tasks and seeds (`ace_eval.gate.run_gate`, in
`STORE/serve/gates/NNNN/`), and the candidate becomes a version only on promote; a hold keeps `current` and is
recorded. With `no_gate` it is published ungated, saying so in `version.json`. `publish.json` records every attempt
(temp file and rename); a version already made for an attempt (a kill between the store's rename and that record)
is found by its `produced_by.details` and not made twice.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ace.core.storage import atomic_write, bytes_writer
from ace.redaction import Redactor
from ace_eval.benchmarks import Benchmark, BenchmarkEnv
from ace_eval.gate import Side, incumbent_side, publish_promoted, run_gate
from ace_eval.store import ProducedBy, SkillbookStore, Version

__all__ = ["NO_GATE_REASON", "PUBLISH_FILE", "PublishConfig", "Publisher", "publishing_status", "read_attempts"]

PUBLISH_FILE = "publish.json"
NO_GATE_REASON = "published with --no-gate by ace-eval serve: not compared with anything"


@dataclass(frozen=True, kw_only=True)
class PublishConfig:
    """When and how serve publishes: `gate` (a benchmark or a scorer, scored on `tasks`), or `no_gate`."""

    every: int = 50
    gate: Benchmark | None = None
    tasks: Sequence[str] = ()
    num_trials: int = 1
    env: BenchmarkEnv = field(default_factory=BenchmarkEnv)
    no_gate: bool = False
    command: str | None = None

    def __post_init__(self) -> None:
        if (self.gate is None) != self.no_gate:
            raise ValueError("PublishConfig needs a gate (a benchmark or scorer) or no_gate=True, not both")


def read_attempts(folder: Path) -> list[dict[str, Any]]:
    """The publishing attempts recorded in `folder/publish.json` (none yet: empty)."""
    path = folder / PUBLISH_FILE
    attempts: list[dict[str, Any]] = json.loads(path.read_text("utf-8"))["attempts"] if path.is_file() else []
    return attempts


def publishing_status(config: PublishConfig, attempts: Sequence[dict[str, Any]]) -> dict[str, object]:
    """`/v1/status`'s `publishing`: how, every how many learned traces, how many published, the last attempt."""
    last = attempts[-1] if attempts else None
    published = sum(1 for a in attempts if a.get("version") is not None)
    how = "ungated (--no-gate)" if config.no_gate else f"through the gate ({config.gate.name})"  # type: ignore[union-attr]
    return {"every": config.every, "how": how, "published": published, "last": last}


class Publisher:
    """Publishes (or holds) a candidate once `every` more traces were learned since the last attempt."""

    def __init__(self, folder: Path, store: SkillbookStore, config: PublishConfig, say: Callable[[str], None]) -> None:
        self.folder = folder
        self.store = store
        self.config = config
        self.say = say
        self.path = folder / PUBLISH_FILE
        self._lock = threading.Lock()
        self.attempts = read_attempts(folder)

    def status(self) -> dict[str, object]:
        with self._lock:
            return publishing_status(self.config, self.attempts)

    def step(self, learned: Sequence[dict[str, Any]], traces_learned: int) -> None:
        """Publish the last learned batch's skillbook when `every` traces were learned since the last attempt."""
        since = traces_learned - (self.attempts[-1]["learned"] if self.attempts else 0)
        if not learned or since < self.config.every:
            return
        batch = learned[-1]
        number = len(self.attempts) + 1
        by = ProducedBy(
            kind="serve",
            command=self.config.command,
            details={"attempt": number, "learned_traces": traces_learned, "batch": batch["batch"]},
        )
        attempt: dict[str, Any] = {"attempt": number, "learned": traces_learned, "batch": batch["batch"]}
        try:
            attempt |= self._publish(number, batch, by)
        except Exception as e:  # recorded; the next attempt comes after `every` more learned traces
            error = Redactor().redact_text(f"{type(e).__name__}: {e}"[:2000])
            attempt |= {"decision": "error", "version": None, "error": error}
        with self._lock:
            self.attempts.append(attempt)
            atomic_write(self.path, bytes_writer(json.dumps({"attempts": self.attempts}, indent=1).encode("utf-8")))
        if attempt["decision"] == "hold":
            self.say(
                f"gate held the skillbook learned from {traces_learned} traces ({'; '.join(attempt['reasons'])}); "
                f"{self.store.root} keeps version {attempt['incumbent_version']}"
            )
        elif attempt["decision"] == "error":
            self.say(f"publishing failed: {attempt['error']}")
        else:
            self.say(f"published {self.store.root} version {attempt['version']} ({attempt['decision']})")

    def _made(self, number: int) -> Version | None:
        """The version an earlier process made for attempt `number` before it could record it."""
        for version in reversed(self.store.versions()):
            by = version.produced_by
            if by.kind == "serve" and by.details.get("attempt") == number:
                return version
        return None

    def _publish(self, number: int, batch: dict[str, Any], by: ProducedBy) -> dict[str, Any]:
        made = self._made(number)
        if made is not None:
            return {"decision": "promote" if made.gated else "ungated", "version": made.number}
        run_dir = Path(batch["run_dir"])
        if self.config.no_gate:
            ungated = self.store.publish(run_dir, produced_by=by, ungated_reason=NO_GATE_REASON)
            return {"decision": "ungated", "version": ungated.number}
        assert self.config.gate is not None
        incumbent = incumbent_side(str(self.store.root))
        current = self.store.current_number()
        gate = run_gate(
            self.config.gate,
            self.config.env,
            incumbent=incumbent,
            candidate=Side(path=Path(batch["skillbook"]), label=f"serve batch {batch['batch']} ({run_dir})"),
            task_ids=list(self.config.tasks),
            num_trials=self.config.num_trials,
            directory=self.folder / "gates" / f"{number:04d}",
        )
        version = publish_promoted(self.store, run_dir, gate.result, produced_by=by)
        return {
            "decision": gate.result.decision,
            "version": version.number if version is not None else None,
            "incumbent_version": current,
            "reasons": list(gate.result.reasons),
            "gate_dir": str(gate.directory),
        }
