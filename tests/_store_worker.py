"""A publisher or roller-back of a store in its own process, for the kill and concurrency tests.

    python _store_worker.py publish STORE SOURCE [REASON]
    python _store_worker.py rollback STORE [TO]

With `ACE_TEST_KILL_AT=N` the process kills itself (SIGKILL: no handler, no `finally`) just before its N-th write
to the disk (a folder made, a file fsynced or made read-only, a rename); with `ACE_TEST_COUNT=FILE` it writes how
many writes it made to FILE at the end. With `ACE_TEST_START=FILE` it waits until FILE exists before starting (two
workers then publish at the same moment); it writes FILE.ready.<pid> when it is waiting.
"""

from __future__ import annotations

import os
import signal
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

WRITES = ("mkdir", "fsync", "chmod", "rename", "replace")


def _hook(kill_at: int, calls: list[str]) -> None:
    def wrap(name: str, real: Callable[..., Any]) -> Callable[..., Any]:
        def write(*args: Any, **kwargs: Any) -> Any:
            calls.append(name)
            if len(calls) == kill_at:
                os.kill(os.getpid(), signal.SIGKILL)
            return real(*args, **kwargs)

        return write

    for name in WRITES:
        setattr(os, name, wrap(name, getattr(os, name)))


def main(argv: list[str]) -> None:
    from ace_eval.store import ProducedBy, SkillbookStore  # imported before the hook: imports write nothing we count

    start = os.environ.get("ACE_TEST_START")
    if start:
        Path(f"{start}.ready.{os.getpid()}").write_text("ready")
    while start and not Path(start).exists():
        time.sleep(0.005)
    calls: list[str] = []
    _hook(int(os.environ.get("ACE_TEST_KILL_AT", "0")), calls)
    command, root, *rest = argv
    store = SkillbookStore.open_or_create(root)
    if command == "publish":
        reason = rest[1] if len(rest) > 1 else "worker"
        version = store.publish(rest[0], produced_by=ProducedBy(kind="worker"), ungated_reason=reason)
    else:
        version = store.rollback(int(rest[0]) if rest else None)
    if count := os.environ.get("ACE_TEST_COUNT"):
        Path(count).write_text(f"{len(calls)} {' '.join(calls)}")
    print(version.number)


if __name__ == "__main__":
    main(sys.argv[1:])
