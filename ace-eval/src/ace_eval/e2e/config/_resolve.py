"""Where each setting of an `ace-eval e2e` run comes from: command-line flag > environment variable > config file >
built-in default; the pipeline's steps and `redact` merge across sources, and a flag that would do nothing is
named in a note (`ignored_flags_note`).
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TypeVar

from ace.integrations.store_format import is_store
from ace_eval.e2e.config._file import find_config, load_config_file
from ace_eval.e2e.config._settings import (
    BENCHMARK_DEFAULT,
    DEFAULT_BENCHMARK,
    ConfigError,
    ContradictionError,
    E2ESettings,
    ModelRole,
    inapplicable_settings,
)
from ace_eval.store import resolve_skillbook

__all__ = ["MODEL_ENV", "SETTING_ENV", "ignored_flags_note", "resolve_settings"]

MODEL_ENV: dict[ModelRole, tuple[str, ...]] = {
    "agent": ("ACE_AGENT_MODEL", "ACE_MODEL"),
    "reflector": ("ACE_REFLECTOR_MODEL", "ACE_MODEL"),
    "skill_manager": ("ACE_SKILL_MANAGER_MODEL", "ACE_MODEL"),
    "user": ("ACE_USER_MODEL", "ACE_MODEL"),
    "embedding": ("ACE_EMBEDDING_MODEL",),
}
"""Environment variables of each model, first found wins (`ACE_MODEL` is the fallback of every LLM role)."""
SETTING_ENV: dict[str, tuple[str, ...]] = {
    "reflector_type": ("ACE_REFLECTOR_TYPE",),
    "output_dir": ("ACE_E2E_OUTPUT_DIR",),
    "max_workers": ("ACE_E2E_MAX_WORKERS",),
    "abort_after": ("ACE_E2E_ABORT_AFTER",),
}
"""Environment variables of the other settings that have one."""

_T = TypeVar("_T")


def _parse_env(name: str, raw: str, parse: Callable[[str], _T]) -> _T:
    try:
        return parse(raw.strip())
    except ValueError:
        raise ConfigError(f"{name}={raw!r} is not a valid value: fix or unset the variable") from None


_ENV_PARSERS: dict[str, Callable[[str], object]] = {
    "reflector_type": str,
    "output_dir": Path,
    "max_workers": int,
    "abort_after": int,
}


def resolve_settings(
    flags: Mapping[str, object],
    *,
    environ: Mapping[str, str] | None = None,
    config: Path | None = None,
    cwd: Path | None = None,
) -> E2ESettings:
    """Resolve every setting: a flag that is not `None` wins, then the environment, the config file, the default.

    A flag that would have no effect on the run (`inapplicable_settings`, e.g. `--agent-model` with `--traces`
    and `--no-benchmark`) is not refused: `ignored_flags_note` names it for a note. Only contradictions (two
    settings asking for opposite things) raise `ContradictionError`.

    Args:
        flags: Setting name -> value from the command line; `None` means "not given".
        environ: The environment (default `os.environ`).
        config: `--config FILE`; default `ace-eval.toml` in `cwd` when it exists.
        cwd: The folder relative paths of the config file are resolved against (default: the current one).
    """
    env = os.environ if environ is None else environ
    here = Path.cwd() if cwd is None else cwd
    config_path = find_config(config, here)
    from_file = load_config_file(config_path) if config_path is not None else {}
    known = {f.name for f in dataclasses.fields(E2ESettings)} - {"sources", "config_file"}
    unknown = set(flags) - known
    if unknown:
        raise ConfigError(f"unknown setting(s) {sorted(unknown)}")
    values: dict[str, Any] = {}  # setting name -> value, checked by `E2ESettings`
    sources: dict[str, str] = {}
    env_names: dict[str, tuple[str, ...]] = {f"{r}_model": names for r, names in MODEL_ENV.items()} | SETTING_ENV
    for name in sorted(known - _PIPELINE_SETTINGS):
        if flags.get(name) is not None:
            values[name], sources[name] = flags[name], "flag"
            continue
        for var in env_names.get(name, ()):
            raw = env.get(var)
            if raw is not None and raw.strip():
                parse = _ENV_PARSERS.get(name, str)
                values[name], sources[name] = _parse_env(var, raw, parse), f"env:{var}"
                break
        else:
            if name in from_file:
                values[name], sources[name] = from_file[name], f"config:{config_path}"
    for name in ("data_dir", "output_dir", "skillbook"):
        if sources.get(name, "").startswith("config:") and config_path is not None:
            value: Path = values[name]
            if not value.is_absolute():
                values[name] = config_path.parent / value  # relative to the config file, not to the cwd
    if isinstance(flags.get("benchmark_options"), Mapping) and isinstance(from_file.get("benchmark_options"), Mapping):
        values["benchmark_options"] = {**from_file["benchmark_options"], **flags["benchmark_options"]}  # type: ignore[dict-item]
    _skillbook_from_store(values)
    _replay_only_unless_benchmark(values, sources)
    if "max_num_steps" not in values and (steps := _benchmark_default(values, "max_num_steps")) is not None:
        values["max_num_steps"] = steps  # the benchmark's own count (it may count every message)
        sources["max_num_steps"] = BENCHMARK_DEFAULT  # not passed to it: it resolves its own default
    values.update(_merge_steps(flags, from_file, sources, config_path))
    _merge_redact(values, sources)
    return E2ESettings(**values, config_file=config_path, sources=sources)


def _benchmark_default(values: Mapping[str, Any], name: str) -> Any:
    """The default of the benchmark's option `name` when the harness fills it (`None`: it has no such option)."""
    from ace_eval.benchmarks import BenchmarkRegistry

    benchmark = str(values.get("benchmark", DEFAULT_BENCHMARK))
    registry = BenchmarkRegistry.from_entry_points()
    if benchmark not in registry:
        return None
    factory = registry.get(benchmark).factory
    info = factory.options.model_fields.get(name)
    return None if info is None or name not in factory.harness_settings else info.get_default()


def _skillbook_from_store(values: dict[str, Any]) -> None:
    """`--skillbook STORE`: the store's current version's file, pinned for the run (and its resume)."""
    if values.get("skillbook") is None or not (path := Path(values["skillbook"])).is_dir():
        return
    if not is_store(path):
        raise ConfigError(
            f"--skillbook {path} is a folder but not a skillbook store (no store.json): pass a skillbook.json, or a "
            "store made by ace-eval skillbook publish"
        )
    if values.get("review"):
        raise ConfigError(
            f"--review stages candidates beside the published skillbook file, and {path} is a store, whose versions "
            "are immutable: review against a skillbook file, then publish it (ace-eval skillbook publish)"
        )
    values["skillbook"] = resolve_skillbook(path)


def _replay_only_unless_benchmark(values: dict[str, Any], sources: dict[str, str]) -> None:
    """`--traces` alone replays: the benchmark runs only when it is named (`--benchmark`, `[e2e] benchmark`);
    `--no-benchmark` wins over a named benchmark (the design's own command names both)."""
    named, skipped = sources.get("benchmark"), sources.get("no_benchmark")
    if values.get("traces") is None or skipped is not None:
        return
    values["no_benchmark"] = named is None
    sources["no_benchmark"] = "default: --traces without --benchmark" if named is None else f"benchmark ({named})"


def ignored_flags_note(settings: E2ESettings) -> str | None:
    """One note naming the command-line flags that have no effect on this run, grouped by reason, or None.

    The run goes on without them (a flag with no effect is not an error: the design's smoke command passes the
    agent's flags with `--no-benchmark`); values from the environment or a config file are shared defaults, so
    those are not named."""
    by_reason: dict[str, list[str]] = {}
    for name, reason in inapplicable_settings(settings).items():
        if settings.source_of(name) == "flag":
            by_reason.setdefault(reason, []).append(_FLAG_NAMES.get(name, "--" + name.replace("_", "-")))
    if not by_reason:
        return None
    ignored = "; ".join(f"{', '.join(flags)}: {reason}" for reason, flags in by_reason.items())
    return f"note: flags with no effect on this run, ignored ({ignored})"


_PIPELINE_SETTINGS = frozenset({"steps", "no_steps"})
_FLAG_NAMES = {"traces_format": "--format", "sm_tool_calls_limit": "--sm-tool-calls"}
"""Settings whose flag is not `--` + the name with dashes."""


def _merge_redact(values: dict[str, Any], sources: dict[str, str]) -> None:
    """`redact` and the `redact` step are one setting: leaving the step out turns redaction off (`E2ESettings`
    does that), and asking for the step turns it back on when the request comes from a stronger source.

    Raises:
        ConfigError: `--step redact` with `--no-redact`, or both in the config file (exit 2, nothing written).
    """
    if "redact" not in values["steps"] or values.get("redact") is not False:
        return
    if sources.get("steps") == "flag" and sources.get("redact") != "flag":
        values["redact"], sources["redact"] = True, "flag"
        return
    raise ContradictionError(
        f"the step 'redact' is asked for ({sources.get('steps')}) and redaction is off "
        f"({sources.get('redact')}): drop one of them (--step redact / --no-redact, [e2e.steps] redact / [e2e] redact)"
    )


def _step_options(value: object) -> dict[str, dict[str, object]]:
    """`{step name: options}` from a flag or the config file (`{}` when absent)."""
    if not isinstance(value, Mapping):
        return {}
    return {
        str(k): {str(o): v for o, v in options.items()} for k, options in value.items() if isinstance(options, Mapping)
    }


def _step_names(value: object) -> tuple[str, ...]:
    """The step names of `--no-step` or of the config file's `name = false` (`()` when absent)."""
    return tuple(str(v) for v in value) if isinstance(value, list | tuple) else ()


def _merge_steps(
    flags: Mapping[str, object], from_file: Mapping[str, object], sources: dict[str, str], config_path: Path | None
) -> dict[str, object]:
    """The pipeline settings of the config file, then the flags on top: a flag's step options win key by key,
    `--step NAME` brings back a step the file left out, `--no-step NAME` leaves out a step the file added."""
    steps = _step_options(from_file.get("steps"))
    no_steps: dict[str, None] = dict.fromkeys(_step_names(from_file.get("no_steps")))
    if steps or no_steps:
        sources["steps"] = f"config:{config_path}"
    flag_steps = _step_options(flags.get("steps"))
    flag_no_steps = _step_names(flags.get("no_steps"))
    for name, options in flag_steps.items():
        steps[name] = {**steps.get(name, {}), **options}
        no_steps.pop(name, None)
    for name in flag_no_steps:
        steps.pop(name, None)
        no_steps[name] = None
    if flag_steps or flag_no_steps:
        sources["steps"] = "flag"
    return {"steps": steps, "no_steps": tuple(no_steps)}
