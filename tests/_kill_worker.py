"""A store's or a hub's operation in its own process, for the kill and concurrency tests
(tests/ace_eval/store/test_store_kill.py, tests/ace_eval/federation/test_federation_kill.py).

    python _kill_worker.py publish STORE SOURCE [REASON]
    python _kill_worker.py rollback STORE [TO]
    python _kill_worker.py push HUB SKILLBOOK PROJECT
    python _kill_worker.py promote HUB
    python _kill_worker.py pull HUB SKILLBOOK

With `ACE_TEST_KILL_AT=N` the process kills itself (SIGKILL: no handler, no `finally`) just before its N-th write
to the disk (a folder made, a file fsynced or made read-only, a rename); with `ACE_TEST_COUNT=FILE` it writes how
many writes it made, then their names, to FILE at the end. With `ACE_TEST_START=FILE` it waits until FILE exists
before starting (workers then run at the same moment); it writes FILE.ready.<pid> when it is waiting. `worker()`
runs it from a test.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

WORKER = Path(__file__)
WRITES = ("mkdir", "fsync", "chmod", "rename", "replace")


def worker(*args: object, **env: str) -> subprocess.CompletedProcess[str]:
    """This script run with `args` and `env` added to the environment (2 minutes at most)."""
    return subprocess.run(
        [sys.executable, str(WORKER), *[str(a) for a in args]],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={**os.environ, **env},
    )


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


def _operation(command: str, root: str, rest: list[str]) -> Callable[[], object]:
    """The operation to run, its modules imported now (before the hook: imports write nothing we count)."""
    if command in ("publish", "rollback"):
        from ace_eval.store import ProducedBy, SkillbookStore

        def store_operation() -> object:
            store = SkillbookStore.open_or_create(root)
            if command == "rollback":
                return store.rollback(int(rest[0]) if rest else None).number
            reason = rest[1] if len(rest) > 1 else "worker"
            return store.publish(rest[0], produced_by=ProducedBy(kind="worker"), ungated_reason=reason).number

        return store_operation
    from ace.embeddings.test import TestEmbedder
    from ace_eval.federation import Hub, promote, pull, push

    def hub_operation() -> object:
        hub, embedder = Hub(root), TestEmbedder()
        if command == "push":
            push(hub, Path(rest[0]), project=rest[1], embedder=embedder)
        elif command == "promote":
            promote(hub, None, by="ana", reason="worker", embedder=embedder)
        else:
            pull(hub, Path(rest[0]), embedder=embedder)
        return ""

    return hub_operation


def main(argv: list[str]) -> None:
    command, root, *rest = argv
    operation = _operation(command, root, rest)
    start = os.environ.get("ACE_TEST_START")
    if start:
        Path(f"{start}.ready.{os.getpid()}").write_text("ready")
    while start and not Path(start).exists():
        time.sleep(0.005)
    calls: list[str] = []
    _hook(int(os.environ.get("ACE_TEST_KILL_AT", "0")), calls)
    result = operation()
    if count := os.environ.get("ACE_TEST_COUNT"):
        Path(count).write_text(f"{len(calls)} {' '.join(calls)}")
    print(result)


if __name__ == "__main__":
    main(sys.argv[1:])
