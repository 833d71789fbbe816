"""`ace-eval trials` on the toy benchmark in a process of its own, killed (SIGKILL) in the middle of one candidate.

Usage: `python tests/_trials_worker.py SITE DIE_IN -- TRIALS_ARGS...`: SITE holds the toy plugin's dist-info
(`_plugins.install_toy_benchmark`), DIE_IN the candidate kind (`harmful`, ...) whose first skill-manager call
kills the process. Exits with the CLI's exit code when nothing kills it.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from _plugins import TOY_BENCHMARK
from _trials_support import injections

from ace_eval.cli import main
from ace_eval.e2e import runner
from ace_eval.e2e.config import E2ESettings
from ace_eval.e2e.runner import E2EResult

if __name__ == "__main__":
    site, die_in, args = sys.argv[1], sys.argv[2], sys.argv[sys.argv.index("--") + 1 :]
    sys.path[:0] = [site, str(TOY_BENCHMARK / "src")]

    def run(settings: E2ESettings) -> E2EResult:
        return runner.run_e2e(settings, injections=injections(settings, die_in=die_in))

    import ace_eval.trials._run as trial_run

    trial_run.run_e2e = run  # type: ignore[assignment]
    main(args)
