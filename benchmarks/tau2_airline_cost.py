"""Tokens, cost and time of `ace-eval e2e --benchmark tau2-airline --num-trials 4`, estimated without a key.

    .venv/bin/python benchmarks/tau2_airline_cost.py [--workers 4] [--real ../shared/data/tau-bench/airline/...]

Runs the whole protocol once on scripted models (every train and test task, 1 trial; real tau2 episodes, the
agent acting out the gold actions), which measures tau2's system prompts and tool schemas as sent and the wall
time of everything but the model calls. Real conversations are longer than gold ones, so the per-episode tokens
are rebuilt from the 120 real GPT-4o airline trajectories of tau-bench (their messages, at 4 characters a token)
on top of the measured prompts, then priced with litellm's price table (Claude Haiku 4.5 agent, GPT-4.1 user).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

import litellm  # noqa: E402
from _tau2_e2e import tau2_injections, tau2_models  # noqa: E402

from ace_eval.benchmarks.tau2 import task_splits  # noqa: E402
from ace_eval.e2e import runner  # noqa: E402
from ace_eval.e2e.config import E2ESettings  # noqa: E402

SHARED = Path(os.environ.get("ACE_SHARED_DATA", ROOT.parent / "shared" / "data"))
REAL = SHARED / "tau-bench" / "airline" / "trajectories-gpt-4o-tasks-0-29.json"
PRICES = {"agent": "claude-haiku-4-5", "user": "gpt-4.1", "reflector": "claude-haiku-4-5", "sm": "claude-haiku-4-5"}
TRIALS = 4


def _tokens(value: object) -> int:
    return max(1, len(json.dumps(value, default=str)) // 4)


def _first_prompts(folder: Path) -> dict[str, list[int]]:
    """The prompt tokens of each episode's first agent and first user request (system prompt, tools, opening)."""
    out: dict[str, list[int]] = {"agent": [], "user": []}
    for phase in ("learn", "baseline", "evaluation"):
        for sim in json.loads((folder / phase / "results.json").read_text())["simulations"]:
            for role, name in (("assistant", "agent"), ("user", "user")):
                usage = next((m["usage"] for m in sim["messages"] if m["role"] == role and m.get("usage")), None)
                if usage:
                    out[name].append(int(usage["prompt_tokens"]))
    return out


def _real_episode(trajectory: list[dict[str, Any]], base: dict[str, float]) -> dict[str, float]:
    """Tokens of one real conversation replayed on tau2's prompts: each request sends the conversation so far."""
    messages = [m for m in trajectory if m["role"] != "system"]
    totals = dict.fromkeys(("agent_in", "agent_out", "agent_requests", "user_in", "user_out", "user_requests"), 0.0)
    so_far = 0
    for message in messages:
        size = _tokens(message)
        if message["role"] == "assistant":
            totals["agent_in"] += base["agent"] + so_far
            totals["agent_out"] += size
            totals["agent_requests"] += 1
        elif message["role"] == "user":
            totals["user_in"] += base["user"] + so_far
            totals["user_out"] += size
            totals["user_requests"] += 1
        so_far += size
    return totals


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--real", type=Path, default=REAL)
    args = parser.parse_args()
    real = json.loads(args.real.read_text())  # before the run: a wrong path fails now, not after it
    splits = task_splits("airline")
    tasks = [*splits["train"], *splits["test"]]
    _, agent, user = tau2_models("airline", tasks, "cost")
    with tempfile.TemporaryDirectory() as out:
        settings = E2ESettings(
            benchmark="tau2-airline",
            agent_model=agent,
            user_model=user,
            max_num_steps=200,
            max_workers=args.workers,
            output_dir=Path(out),
        )
        started = time.monotonic()
        result = runner.run_e2e(settings, injections=tau2_injections())
        wall = time.monotonic() - started
        record = result.record.to_json()  # run.json as written
        firsts = _first_prompts(result.folder.path)
    episodes = {name: record["benchmark"][name]["episodes"] for name in ("learn", "before", "after")}
    base = {role: statistics.mean(values) for role, values in firsts.items()}
    per_episode = {k: statistics.mean(_real_episode(r["traj"], base)[k] for r in real) for k in _real_episode([], base)}
    scripted_samples = record["training"]["samples"]
    total_episodes = TRIALS * (len(splits["train"]) + 2 * len(splits["test"]))
    print(
        f"scripted protocol: {sum(episodes.values())} episodes {episodes}, {scripted_samples} samples, "
        f"{wall:.0f} s wall at {args.workers} workers; phases {record['timings']}"
    )
    print(f"measured first prompts (system + tools + opening): agent {base['agent']:.0f}, user {base['user']:.0f}")
    print(
        f"real conversations ({len(real)} GPT-4o airline runs) on these prompts, per episode: "
        + ", ".join(f"{k} {v:.0f}" for k, v in per_episode.items())
    )
    cost_total = 0.0
    rows = []
    for role, prefix in (("agent", "agent"), ("user", "user")):
        price = litellm.model_cost[PRICES[role]]
        tin, tout = per_episode[f"{prefix}_in"] * total_episodes, per_episode[f"{prefix}_out"] * total_episodes
        cost = tin * price["input_cost_per_token"] + tout * price["output_cost_per_token"]
        cost_total += cost
        rows.append((role, PRICES[role], tin, tout, cost))
    usage = record["usage"]
    learn_traces = TRIALS * len(splits["train"])
    for role in ("reflector", "skill_manager"):
        price = litellm.model_cost[PRICES["sm" if role == "skill_manager" else role]]
        scale = learn_traces / max(1, scripted_samples)
        tin, tout = usage[role]["input_tokens"] * scale, usage[role]["output_tokens"] * scale
        cost = tin * price["input_cost_per_token"] + tout * price["output_cost_per_token"]
        cost_total += cost
        rows.append((role, PRICES["sm" if role == "skill_manager" else role], tin, tout, cost))
    print(f"\nestimate for --num-trials {TRIALS}: {total_episodes} episodes, {learn_traces} traces learned from")
    for role, model, tin, tout, cost in rows:
        print(f"  {role:14} {model:18} {tin / 1e6:6.2f} M in  {tout / 1e6:5.2f} M out  ${cost:6.2f}")
    print(f"  total ${cost_total:.2f}")


if __name__ == "__main__":
    main()
