"""push / promote / pull of a hub in its own process, for the kill and concurrency tests.

    python _fed_worker.py push HUB SKILLBOOK PROJECT
    python _fed_worker.py promote HUB
    python _fed_worker.py pull HUB SKILLBOOK

`ACE_TEST_KILL_AT=N`: SIGKILL just before the N-th write (mkdir, fsync, chmod, rename, replace); `ACE_TEST_COUNT=FILE`:
write how many writes were made; `ACE_TEST_START=FILE`: wait for FILE before starting (concurrent workers).
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
    from ace.embeddings.test import TestEmbedder
    from ace_eval.federation import Hub, promote, pull, push

    start = os.environ.get("ACE_TEST_START")
    while start and not Path(start).exists():
        time.sleep(0.005)
    calls: list[str] = []
    _hook(int(os.environ.get("ACE_TEST_KILL_AT", "0")), calls)
    command, root, *rest = argv
    hub, embedder = Hub(root), TestEmbedder()
    if command == "push":
        push(hub, Path(rest[0]), project=rest[1], embedder=embedder)
    elif command == "promote":
        promote(hub, None, by="ana", reason="worker", embedder=embedder)
    else:
        pull(hub, Path(rest[0]), embedder=embedder)
    if count := os.environ.get("ACE_TEST_COUNT"):
        Path(count).write_text(str(len(calls)))


if __name__ == "__main__":
    main(sys.argv[1:])
