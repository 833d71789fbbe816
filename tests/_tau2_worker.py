"""`ace-eval e2e` on tau2-mock in a process of its own, with the scripted roles of `_tau2_e2e`, for kill tests.

Usage: `python tests/_tau2_worker.py LOG RUNS_DIR -- E2E_ARGS...`. Each episode's first agent turn appends
`<pid> <phase> <task_id> <seed>` to LOG (phase `evaluate` when the skill is in the agent's prompt, else `other`).
With `ACE_TEST_KILL_AFTER=N` the process kills itself (SIGKILL) at the start of an evaluation episode once N
evaluation episodes are journaled under RUNS_DIR. Exits with the CLI's exit code.
"""

from __future__ import annotations

import functools
import os
import signal
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

from _tau2_e2e import SKILL, tau2_injections, tau2_models

from ace_eval.benchmarks.tau2.scripted import Reply, ScriptInfo, scripted_model
from ace_eval.cli import main
from ace_eval.e2e import runner

TASKS = ["create_task_1", "update_task_1"]


def evaluated(runs: Path) -> int:
    return sum(len(p.read_text().splitlines()) for p in runs.glob("run_*/evaluation/episodes.jsonl"))


if __name__ == "__main__":
    log, runs, args = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[sys.argv.index("--") + 1 :]
    kill_after = int(os.environ.get("ACE_TEST_KILL_AFTER", "0"))
    gold, agent_name, _ = tau2_models(
        "mock", TASKS, "kill", fail_seeds=frozenset({int(os.environ["ACE_TEST_FAIL_SEED"])})
    )

    def agent(messages: list[dict[str, Any]], info: ScriptInfo) -> Reply:
        opening = next(str(m["content"]) for m in messages if m["role"] == "user")
        if messages[-1]["role"] == "user" and messages[-1]["content"] == opening:  # an episode's first turn
            phase = "evaluate" if SKILL in str(messages[0]["content"]) else "other"
            if phase == "evaluate" and kill_after and evaluated(runs) >= kill_after:
                os.kill(os.getpid(), signal.SIGKILL)
            with open(log, "a", encoding="utf-8") as handle:
                handle.write(f"{os.getpid()} {phase} {opening.split()[-1].rstrip('.')} {info.seed}\n")
        return gold.agent(messages, info)

    scripted_model("kill-agent", agent)
    import ace_eval.commands.e2e as command

    injections = tau2_injections()
    command.run_e2e = functools.partial(runner.run_e2e, injections=injections)  # type: ignore[assignment]
    command.resume_e2e = functools.partial(runner.resume_e2e, injections=injections)  # type: ignore[assignment]
    main(["e2e", *args], prog_name="ace-eval")
