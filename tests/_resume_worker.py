"""`ace-eval e2e --resume FOLDER` in a process of its own, with the scripted models of the e2e tests.

Usage: `python tests/_resume_worker.py FOLDER [HOLD_DIR]`. With `HOLD_DIR`, the resume creates `HOLD_DIR/started`
after its first committed sample and then waits (at most 120 s) for `HOLD_DIR/release`, so that a test can start
a second resume while this one is in the middle of its run. Exits with the CLI's exit code.
"""

from __future__ import annotations

import functools
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from _e2e_support import scripted_injections

from ace_eval.cli import main
from ace_eval.e2e import runner
from ace_eval.e2e.training import SampleResult

_WAIT_S = 120.0


def hold(directory: Path, sample: SampleResult) -> None:
    """After the first sample: say so, then wait for the test's go-ahead."""
    started = directory / "started"
    if started.exists():
        return
    started.touch()
    deadline = time.monotonic() + _WAIT_S
    while not (directory / "release").exists() and time.monotonic() < deadline:
        time.sleep(0.05)


if __name__ == "__main__":
    folder = sys.argv[1]
    on_sample = functools.partial(hold, Path(sys.argv[2])) if len(sys.argv) > 2 else None
    injections = scripted_injections(on_sample=on_sample)
    import ace_eval.commands.e2e as command

    command.resume_e2e = functools.partial(runner.resume_e2e, injections=injections)  # type: ignore[assignment]
    main(["e2e", "--resume", folder], prog_name="ace-eval")
