"""The smallest writer of ace-eval's trace collection format: append one trace line, rewrite the manifest.

The format is `docs/collection-format.md`'s: `traces.jsonl` (one trace per line) and `manifest.json` (its
counts). ace-eval reads and validates what this writes; `ace` itself does not depend on ace-eval.
"""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ace.core.storage import atomic_write, json_writer
from ace.exceptions import UserError

__all__ = ["CollectionAppender"]

MANIFEST, TRACES = "manifest.json", "traces.jsonl"


def _now() -> str:
    return datetime.now(UTC).isoformat().replace("+00:00", "Z")


class CollectionAppender:
    """Appends traces to the collection in `directory`, creating it on the first trace."""

    def __init__(self, directory: Path, *, source_system: str) -> None:
        self.directory = directory
        self.source_system = source_system
        self.manifest: dict[str, Any] = {
            "format": "ace-trace-collection",
            "format_version": "1",
            "source_system": source_system,
            "counts": {"traces": 0, "with_reward": 0, "successes": 0, "tasks": 0},
            "success_threshold": 1.0,
            "created_at": _now(),
            "updated_at": _now(),
            "metadata": {"writer": "ace.integrations.pydantic_ai"},
        }
        self.tasks: set[str] = set()
        path = directory / MANIFEST
        if path.is_file():
            existing = json.loads(path.read_text(encoding="utf-8"))
            if existing.get("source_system") != source_system:
                raise UserError(
                    f"{directory} holds traces of source_system {existing.get('source_system')!r}, not "
                    f"{source_system!r}: pass source_system={existing.get('source_system')!r} or another folder"
                )
            self.manifest = existing
            traces = directory / TRACES
            data = traces.read_bytes() if traces.is_file() else b""
            try:
                if data and not data.endswith(b"\n"):
                    raise ValueError("its last line was cut off")
                self.tasks = {t for line in data.splitlines() if (t := json.loads(line).get("task_id")) is not None}
            except (ValueError, AttributeError) as e:
                raise UserError(
                    f"{traces} cannot be appended to ({e}): run `ace-eval collection repair {directory}` first"
                ) from None

    def append(self, trace: dict[str, Any]) -> None:
        """Write `trace` as one fsynced line, then the manifest with the new counts."""
        self.directory.mkdir(parents=True, exist_ok=True)
        line = json.dumps(trace, ensure_ascii=False, allow_nan=False).encode("utf-8") + b"\n"
        with (self.directory / TRACES).open("ab") as f:
            f.write(line)
            f.flush()
            os.fsync(f.fileno())
        counts = self.manifest["counts"]
        counts["traces"] += 1
        reward = trace.get("reward")
        counts["with_reward"] += reward is not None
        counts["successes"] += reward is not None and reward >= self.manifest.get("success_threshold", 1.0)
        if trace.get("task_id") is not None:
            self.tasks.add(trace["task_id"])
        counts["tasks"] = len(self.tasks)
        self.manifest["updated_at"] = _now()
        atomic_write(self.directory / MANIFEST, json_writer(self.manifest))
