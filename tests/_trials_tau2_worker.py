"""`ace-eval trials` on tau2-mock in a process of its own (the scripted roles of `_trials_tau2`), for kill tests.

Usage: `python tests/_trials_tau2_worker.py LOG DIE_IN -- TRIALS_ARGS...`: the scripted agent appends a line per
episode to LOG; DIE_IN names the candidate kind (`harmful`, ...; `none`: no kill) whose first skill-manager call
kills the process (SIGKILL). Exits with the CLI's exit code when nothing kills it.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from _trials_tau2 import injections, register

from ace_eval.cli import main
from ace_eval.e2e import runner
from ace_eval.e2e.config import E2ESettings
from ace_eval.e2e.runner import E2EResult
from ace_eval.run.folder import RunFolder

if __name__ == "__main__":
    log, die_in, args = Path(sys.argv[1]), sys.argv[2], sys.argv[sys.argv.index("--") + 1 :]
    register(log)

    def run(settings: E2ESettings) -> E2EResult:
        return runner.run_e2e(settings, injections=injections(settings, die_in=die_in))

    def resume(run_dir: Path) -> E2EResult:
        settings = E2ESettings.from_dict(RunFolder.open(run_dir).read_record().config.as_dict())
        return runner.resume_e2e(run_dir, injections=injections(settings, die_in=die_in))

    import ace_eval.trials._run as trial_run

    trial_run.run_e2e = run  # type: ignore[assignment]
    trial_run.resume_e2e = resume  # type: ignore[attr-defined]
    main(args)
