"""How the folders beside this file were made, at main e5bcddd (kept as a record; never rerun with newer code).

`python make_runs.py OUT replay taubench tau2` (tau-bench needs `ACE_TAU_BENCH_DATA`, tau2 the `tau2` extra).
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

TESTS = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(TESTS))

from _e2e_support import scripted_injections  # noqa: E402

from ace_eval.e2e import runner  # noqa: E402
from ace_eval.e2e.config import E2ESettings  # noqa: E402


def main(out: Path, which: list[str]) -> None:
    shutil.rmtree(out, ignore_errors=True)
    if "replay" in which:
        demo = TESTS.parent / "examples" / "demo-collection"
        settings = E2ESettings(
            traces=demo,
            limit=3,
            no_benchmark=True,
            output_dir=out / "replay",
            reflector_model="test",
            skill_manager_model="test",
        )
        print(runner.run_e2e(settings, injections=scripted_injections()).folder.path)
    if "taubench" in which:
        data = Path(os.environ["ACE_TAU_BENCH_DATA"])
        settings = E2ESettings(data_dir=data, limit=2, num_trials=2, max_num_steps=5, output_dir=out / "taubench")
        print(runner.run_e2e(settings, injections=scripted_injections()).folder.path)
    if "tau2" in which:
        from _tau2_e2e import tau2_injections, tau2_models

        learn = ["create_task_1", "update_task_1"]
        _, agent, user = tau2_models("mock", learn, "fixture-mock")
        settings = E2ESettings(
            benchmark="tau2-mock",
            agent_model=agent,
            user_model=user,
            num_trials=2,
            max_num_steps=30,
            train_split=",".join(learn),
            eval_split=",".join(learn),
            output_dir=out / "tau2",
        )
        print(runner.run_e2e(settings, injections=tau2_injections()).folder.path)


if __name__ == "__main__":
    main(Path(sys.argv[1]), sys.argv[2:])
