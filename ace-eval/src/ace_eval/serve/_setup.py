"""What `ace-eval serve` learns with and publishes through, resolved and checked before it listens: the e2e model
settings (their models built once, by the preflight of `ace-eval e2e`, in the learning process), the models of
`--models-from`, the gate's benchmark or scorer and its tasks. A fixable mistake is a `UserError` (exit 2)."""

from __future__ import annotations

import dataclasses
import importlib
from collections.abc import Callable, Mapping
from pathlib import Path

from ace.exceptions import UserError
from ace_eval.benchmarks import Benchmark, BenchmarkEnv, load_benchmark, resolve_tasks
from ace_eval.benchmarks.scorer import scorer_benchmark
from ace_eval.e2e.config import E2ESettings, resolve_settings
from ace_eval.e2e.plan import plan_run_pipeline
from ace_eval.e2e.preflight import preflight, step_models
from ace_eval.e2e.profiles import with_profiles
from ace_eval.e2e.runner import RunInjections
from ace_eval.serve._publish import PublishConfig

__all__ = ["NOT_PUBLISHED_NOTE", "learning_models", "learning_settings", "load_injections", "publishing_config"]

NOT_PUBLISHED_NOTE = (
    "note: learned skillbooks will not be published to the store (they stay in STORE/serve/learning/): pass "
    "--benchmark NAME or --scorer MODULE:FUNCTION --tasks IDS to publish through the gate, or --no-gate to "
    "publish them ungated"
)


def learning_settings(flags: Mapping[str, object], *, store: Path, config_file: Path | None = None) -> E2ESettings:
    """The e2e settings of the learning batches: `flags` (e2e setting -> value, `None`: not given), then the
    environment, the config file, the embedded `local` models; each batch replays its traces (no benchmark)."""
    given = {k: v for k, v in flags.items() if v is not None}
    return resolve_settings({**given, "traces": store / "serve", "no_benchmark": True}, config=config_file)


def load_injections(spec: str) -> RunInjections:
    """What `MODULE:FUNCTION` (`--models-from`) returns: the models (and embedder) learning uses instead of building
    them from the settings."""
    module_name, _, attr = spec.partition(":")
    if not module_name or not attr:
        raise UserError(f"--models-from {spec!r}: give MODULE:FUNCTION, e.g. my_models:scripted")
    try:
        module = importlib.import_module(module_name)
    except ImportError as e:
        raise UserError(
            f"--models-from {spec!r}: module {module_name!r} cannot be imported ({e}); put its folder on PYTHONPATH"
        ) from None
    factory = getattr(module, attr, None)
    made = factory() if callable(factory) else None
    if not isinstance(made, RunInjections):
        raise UserError(
            f"--models-from {spec!r}: {module_name}.{attr} must be a function that takes no argument and returns "
            "ace_eval.e2e.runner.RunInjections"
        )
    return made


def learning_models(
    settings: E2ESettings, injections: RunInjections | None = None, *, say: Callable[[str], None] = print
) -> tuple[E2ESettings, RunInjections]:
    """`settings` with their models built and checked once (the e2e preflight: `PreflightError`, exit 2), in the
    learning process: the settings each batch runs with and the models handed to every batch."""
    settings, inj = with_profiles(settings, injections or RunInjections())
    plan = plan_run_pipeline(settings)
    checked = preflight(
        settings, inj.models, inj.embedder, live=not settings.no_preflight, steps=step_models(settings, plan)
    )
    for warning in checked.warnings:
        say(f"preflight warning: {warning}")
    inj = dataclasses.replace(
        inj,
        models={**checked.models, **inj.models},
        embedder=inj.embedder or checked.embedder,
        show_progress=False,
    )
    settings = dataclasses.replace(settings, no_preflight=True)  # checked now; each batch trusts these models
    return settings, inj


def publishing_config(
    *,
    every: int,
    benchmark: str | None,
    benchmark_options: Mapping[str, object],
    scorer: str | None,
    tasks: str | None,
    num_trials: int,
    no_gate: bool,
    settings: E2ESettings,
    command: str | None,
) -> PublishConfig | None:
    """How learned skillbooks reach the store: through the gate (`benchmark` or `scorer`), ungated (`no_gate`), or
    not at all (`None`)."""
    if benchmark is not None and scorer is not None:
        raise UserError("pass --benchmark NAME or --scorer MODULE:FUNCTION, not both: one of them scores the gate")
    if no_gate and (benchmark is not None or scorer is not None):
        raise UserError("--no-gate publishes without the gate, and --benchmark / --scorer configure the gate: drop one")
    if no_gate:
        return PublishConfig(every=every, no_gate=True, command=command)
    if benchmark is None and scorer is None:
        return None
    gate: Benchmark
    if scorer is not None:
        if tasks is None:
            raise UserError("--scorer needs --tasks ID,ID: the task ids your function scores")
        gate = scorer_benchmark(scorer, {"tasks": [t.strip() for t in tasks.split(",") if t.strip()]})
    else:
        assert benchmark is not None
        gate = load_benchmark(benchmark, dict(benchmark_options))
    ids = resolve_tasks(gate.name, gate.splits(), tasks) if tasks else tuple(gate.tasks("evaluate"))
    env = BenchmarkEnv(model_names=settings.models, max_workers=settings.max_workers)
    gate.check(env)
    return PublishConfig(every=every, gate=gate, tasks=ids, num_trials=num_trials, env=env, command=command)
