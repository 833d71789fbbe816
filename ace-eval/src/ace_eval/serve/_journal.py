"""Append-only JSON-lines files that survive a crash: each append is fsynced; a torn last line is ignored on read
and cut off before the next append."""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from ace.core.storage import atomic_write, bytes_writer

__all__ = ["Journal", "write_json"]


class Journal:
    """One JSON-lines file; `records()` reads the whole lines, `append()` adds lines durably. `repair=False` for a
    reader in another process than the writer's: a line being appended there is not a torn line to cut off."""

    def __init__(self, path: Path, *, repair: bool = True) -> None:
        self.path = path
        self._lock = threading.Lock()
        if repair:
            self._repair()

    def _repair(self) -> None:
        if not self.path.exists():
            return
        data = self.path.read_bytes()
        end = data.rfind(b"\n") + 1
        if end < len(data):
            with self.path.open("r+b") as f:
                f.truncate(end)

    def records(self) -> list[dict[str, Any]]:
        if not self.path.exists():
            return []
        out = []
        for line in self.path.read_bytes().splitlines():
            if line.strip():
                out.append(json.loads(line))
        return out

    def read_from(self, offset: int) -> tuple[list[dict[str, Any]], int]:
        """The whole lines after byte `offset`, and the offset after the last of them."""
        if not self.path.exists():
            return [], offset
        with self.path.open("rb") as f:
            f.seek(offset)
            data = f.read()
        end = data.rfind(b"\n") + 1
        return [json.loads(line) for line in data[:end].splitlines() if line.strip()], offset + end

    def append(self, records: Iterable[dict[str, Any]]) -> None:
        data = b"".join(
            (json.dumps(r, ensure_ascii=False, separators=(",", ":")) + "\n").encode("utf-8") for r in records
        )
        if not data:
            return
        with self._lock:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with self.path.open("ab") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())


def write_json(path: Path, value: object) -> None:
    """Replace `path` with `value` as JSON (temp file, fsync, rename)."""
    atomic_write(path, bytes_writer(json.dumps(value).encode("utf-8")))
