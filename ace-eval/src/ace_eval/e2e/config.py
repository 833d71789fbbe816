"""Settings of an `ace-eval e2e` run: command-line flag > environment variable > config file > built-in default.

The config file is `ace-eval.toml` in the current folder, or the file `--config FILE` names:

```toml
[models]
agent = "bedrock/us.anthropic.claude-haiku-4-5-20251001-v1:0"
reflector = "bedrock/us.anthropic.claude-haiku-4-5-20251001-v1:0"
skill_manager = "bedrock/us.anthropic.claude-haiku-4-5-20251001-v1:0"
user = "bedrock/openai.gpt-oss-120b-1:0"
embedding = "local"

[e2e]
reflector_type = "rr"
epochs = 1
max_workers = 4
data_dir = "data/tau-bench/airline"
redact = true                      # false (or --no-redact) keeps secrets and personal data in the run folder
# review = true                    # stage edits as candidates of skillbook's review queue (needs skillbook)
# skillbook = "prod/skillbook.json" # start from (with review: the published skillbook, never written by a run)

[redaction]                        # on top of the built-in detectors (see docs/redaction.md)
patterns = { employee_id = 'EMP-\\d{6}' }    # kind name -> regular expression
allow = ["support@airline.example"]          # exact values never redacted
allow_patterns = ['.*@airline\\.example']    # values a regular expression matches whole

[e2e.steps]                       # pipeline steps by name (`ace-eval steps list`): options, true, or false
deduplicate = { threshold = 0.9 } # add a step with options (as --step deduplicate:threshold=0.9)
export_markdown = false           # leave a default step out (as --no-step export_markdown)
```
Every model defaults to `local`, the embedded offline model (SmolLM2 for the LLM roles, MiniLM for embeddings).
"""

from __future__ import annotations

import dataclasses
import os
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, TypeVar, get_args

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ace.exceptions import UserError
from ace.redaction import RedactionConfigError, Redactor
from ace_eval.benchmarks.tau_bench.agent import SKILL_INJECTIONS, SkillInjection
from ace_eval.e2e.training_results import SMSessions

__all__ = [
    "BENCHMARKS",
    "CONFIG_FILE",
    "DEFAULT_MODEL",
    "DEFAULT_OUTPUT_DIR",
    "MODEL_ENV",
    "MODEL_ROLES",
    "SETTING_ENV",
    "Benchmark",
    "ConfigError",
    "E2ESettings",
    "InapplicableFlagError",
    "ModelRole",
    "ReflectorType",
    "inapplicable_settings",
    "load_config_file",
    "resolve_settings",
]

Benchmark = Literal["tau-bench-airline"]
BENCHMARKS: tuple[Benchmark, ...] = get_args(Benchmark)
ReflectorType = Literal["simple", "rr"]
ModelRole = Literal["agent", "reflector", "skill_manager", "user", "embedding"]
MODEL_ROLES: tuple[ModelRole, ...] = get_args(ModelRole)

CONFIG_FILE = "ace-eval.toml"
DEFAULT_MODEL = "local"
"""The embedded offline model: SmolLM2 for the LLM roles, all-MiniLM-L6-v2 for embeddings."""
DEFAULT_OUTPUT_DIR = Path("results") / "e2e"

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
    "data_dir": ("ACE_TAU_BENCH_DATA",),
    "output_dir": ("ACE_E2E_OUTPUT_DIR",),
    "max_workers": ("ACE_E2E_MAX_WORKERS",),
    "abort_after": ("ACE_E2E_ABORT_AFTER",),
}
"""Environment variables of the other settings that have one."""


class ConfigError(UserError, ValueError):
    """A setting that cannot be used; the message names where it came from (flag, variable or file) and the fix."""


class _ContradictionError(ConfigError):
    """Two settings of the same source that ask for opposite things; fixed by dropping one (exit 2)."""


class InapplicableFlagError(ConfigError):
    """A command-line flag that would have no effect on this run (e.g. `--agent-model` when no agent runs)."""


class _ModelsTable(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    agent: str | None = Field(default=None, min_length=1)
    reflector: str | None = Field(default=None, min_length=1)
    skill_manager: str | None = Field(default=None, min_length=1)
    user: str | None = Field(default=None, min_length=1)
    embedding: str | None = Field(default=None, min_length=1)


class _E2ETable(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    benchmark: Benchmark | None = None
    reflector_type: ReflectorType | None = None
    epochs: int | None = Field(default=None, ge=1)
    seed: int | None = None
    max_workers: int | None = Field(default=None, ge=1)
    sm_sessions: SMSessions | None = None
    num_trials: int | None = Field(default=None, ge=1)
    max_num_steps: int | None = Field(default=None, ge=1)
    skill_injection: SkillInjection | None = None
    top_k: int | None = Field(default=None, ge=1)
    limit: int | None = Field(default=None, ge=1)
    abort_after: int | None = Field(default=None, ge=0)
    output_dir: str | None = Field(default=None, min_length=1)
    data_dir: str | None = Field(default=None, min_length=1)
    steps: dict[str, bool | dict[str, object]] | None = None
    redact: bool | None = None
    review: bool | None = None
    skillbook: str | None = Field(default=None, min_length=1)


class _RedactionTable(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    patterns: dict[str, str] | None = None
    allow: list[str] | None = None
    allow_patterns: list[str] | None = None


class _ConfigFile(BaseModel):
    """`ace-eval.toml`: a `[models]` table, an `[e2e]` table and a `[redaction]` table, nothing else."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    models: _ModelsTable = Field(default_factory=_ModelsTable)
    e2e: _E2ETable = Field(default_factory=_E2ETable)
    redaction: _RedactionTable = Field(default_factory=_RedactionTable)


@dataclass(frozen=True, kw_only=True)
class E2ESettings:
    """Everything an e2e run needs to know, resolved; `sources` says where each value came from."""

    benchmark: Benchmark = "tau-bench-airline"
    traces: Path | None = None
    """A trace collection to replay offline (no agent runs to collect traces)."""
    agent_model: str = DEFAULT_MODEL
    reflector_model: str = DEFAULT_MODEL
    skill_manager_model: str = DEFAULT_MODEL
    user_model: str = DEFAULT_MODEL
    embedding_model: str = DEFAULT_MODEL
    reflector_type: ReflectorType = "simple"
    epochs: int = 1
    seed: int | None = None
    max_workers: int = 1
    sm_sessions: SMSessions = "concurrent"
    """With several workers: concurrent skill-manager sessions (optimistic concurrency) or `ordered` ones."""
    num_trials: int = 1
    """Trials per task when the agent runs (collection and evaluation)."""
    max_num_steps: int = 30
    """Agent model requests per episode."""
    skill_injection: SkillInjection = "prompt"
    """How the agent sees the skillbook: all active skills (`prompt`, `as_prompt()`), the `top-k` retrieved
    for the task, or `none`."""
    top_k: int = 5
    """Skills retrieved per episode with `skill_injection="top-k"`."""
    limit: int | None = None
    """Use only the first N traces (with --traces) or tasks (without)."""
    no_benchmark: bool = False
    """Skip the evaluation with the learned skillbook."""
    no_preflight: bool = False
    """Skip the one test request per model before the run (the checks that spend no token still run)."""
    retry_failed: bool = True
    """On `--resume`, run again the samples that failed without changing the skillbook."""
    abort_after: int = 3
    """Abort when this many samples (or episodes) in a row fail with the same error no retry fixes (a wrong key, an
    unknown model); 0 never aborts."""
    logfire: bool = False
    logfire_content: bool = False
    """Record prompts and completions in the spans (redacted unless `redact` is off); implies `logfire`."""
    redact: bool = True
    """Redact secrets and personal data (the `redact` step and every file and span of the run); `--no-step redact`
    sets it off too."""
    redaction_patterns: Mapping[str, str] = field(default_factory=dict[str, str])
    """Extra detectors: kind name -> regular expression (`[redaction] patterns`)."""
    redaction_allow: tuple[str, ...] = ()
    """Values never redacted (`[redaction] allow`)."""
    redaction_allow_patterns: tuple[str, ...] = ()
    """Regular expressions of values never redacted (`[redaction] allow_patterns`)."""
    verbose: bool = False
    output_dir: Path = DEFAULT_OUTPUT_DIR
    data_dir: Path | None = None
    """The tau-bench airline data folder (needed whenever the agent runs)."""
    steps: Mapping[str, Mapping[str, object]] = field(default_factory=dict)
    """Pipeline steps asked for beyond (or configuring) the defaults: name -> options (`--step`, `[e2e.steps]`)."""
    no_steps: tuple[str, ...] = ()
    """Steps left out of the pipeline (`--no-step`, `name = false` in `[e2e.steps]`)."""
    skillbook: Path | None = None
    """The skillbook training starts from (never written by the run); with `review`, the published skillbook
    whose review queue (`<stem>.review.json` beside it) gets the candidates. A missing file starts empty."""
    review: bool = False
    """Stage the skill manager's edits as review candidates instead of publishing them (`ace-eval review`)."""
    config_file: Path | None = None
    sources: Mapping[str, str] = field(default_factory=dict)
    """Setting name -> `flag`, `env:NAME`, `config:FILE` or `default`."""

    def __post_init__(self) -> None:
        for name in ("epochs", "max_workers", "num_trials", "max_num_steps", "top_k"):
            if getattr(self, name) < 1:
                raise ConfigError(f"{name} must be at least 1, got {getattr(self, name)} ({self.source_of(name)})")
        if self.abort_after < 0:
            where = self.source_of("abort_after")
            raise ConfigError(f"abort_after must be 0 or more (0: never abort), got {self.abort_after} ({where})")
        if self.limit is not None and self.limit < 1:
            raise ConfigError(f"limit must be at least 1, got {self.limit} ({self.source_of('limit')})")
        if self.reflector_type not in get_args(ReflectorType):
            raise ConfigError(
                f"reflector_type must be 'simple' or 'rr', got {self.reflector_type!r} "
                f"({self.source_of('reflector_type')})"
            )
        if self.sm_sessions not in get_args(SMSessions):
            raise ConfigError(
                f"sm_sessions must be 'concurrent' or 'ordered', got {self.sm_sessions!r} "
                f"({self.source_of('sm_sessions')})"
            )
        if self.skill_injection not in SKILL_INJECTIONS:
            raise ConfigError(
                f"skill_injection must be one of {', '.join(SKILL_INJECTIONS)}, got {self.skill_injection!r} "
                f"({self.source_of('skill_injection')})"
            )
        if self.benchmark not in BENCHMARKS:
            raise ConfigError(f"unknown benchmark {self.benchmark!r}: use one of {', '.join(BENCHMARKS)}")
        if "redact" in self.no_steps:  # --no-step redact is --no-redact: no step, and no redaction at any sink
            object.__setattr__(self, "redact", False)
            object.__setattr__(self, "no_steps", tuple(n for n in self.no_steps if n != "redact"))
        self._check_review()
        try:
            self.redactor()
        except RedactionConfigError as e:
            raise ConfigError(f"{e} ({self.source_of('redaction_patterns')})") from None

    def _check_review(self) -> None:
        """A review run needs the published skillbook, evaluates nothing, and stages every edit."""
        if not self.review:
            return
        where = self.source_of("review")
        if self.skillbook is None:
            raise _ContradictionError(
                f"review ({where}) needs the published skillbook the candidates are for: pass --skillbook PATH (or "
                "[e2e] skillbook = ...); a file that does not exist yet starts empty"
            )
        if not self.no_benchmark:
            raise _ContradictionError(
                f"review ({where}) publishes nothing, so the evaluation would measure the unchanged skillbook: add "
                "--no-benchmark, and evaluate after `ace-eval review accept`"
            )
        if "deduplicate" in self.steps:
            raise _ContradictionError(
                f"review ({where}) cannot stage the deduplicate step's edits (they belong to no sample): leave the "
                "step out of review runs (drop --dedup / --step deduplicate, or [e2e.steps] deduplicate = false)"
            )

    def redactor(self) -> Redactor | None:
        """The run's redactor (built-in detectors + `[redaction]`), or `None` with `redact` off."""
        if not self.redact:
            return None
        return Redactor(
            extra_patterns=self.redaction_patterns,
            allow=self.redaction_allow,
            allow_patterns=self.redaction_allow_patterns,
        )

    def source_of(self, name: str) -> str:
        """Where a setting came from, for messages."""
        return self.sources.get(name, "default")

    def model_for(self, role: ModelRole) -> str:
        """The model string of a role."""
        value: str = getattr(self, f"{role}_model")
        return value

    @property
    def models(self) -> dict[str, str]:
        """Model string per role."""
        return {role: self.model_for(role) for role in MODEL_ROLES}

    @property
    def runs_agent(self) -> bool:
        """Whether the benchmark agent runs at all (to collect traces, or to evaluate the skillbook)."""
        return self.traces is None or not self.no_benchmark

    def to_dict(self) -> dict[str, object]:
        """JSON-ready, for `run.json`."""
        out: dict[str, object] = {}
        for f in dataclasses.fields(self):
            value: object = getattr(self, f.name)
            if isinstance(value, Path):
                value = str(value)
            elif f.name == "steps":
                value = {k: dict(v) for k, v in self.steps.items()}
            elif isinstance(value, Mapping):
                value = dict(value)
            elif isinstance(value, tuple):
                value = list(value)
            out[f.name] = value
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, object]) -> E2ESettings:
        """Inverse of `to_dict` (unknown keys, e.g. from a newer ace-eval, are ignored)."""
        known = {f.name for f in dataclasses.fields(cls)}
        values: dict[str, Any] = {k: v for k, v in data.items() if k in known}  # checked by the dataclass
        for name in ("traces", "output_dir", "data_dir", "config_file", "skillbook"):
            if values.get(name) is not None:
                values[name] = Path(values[name])
        for name in ("no_steps", "redaction_allow", "redaction_allow_patterns"):
            if name in values:
                values[name] = tuple(values[name])
        return cls(**values)


_AGENT_SETTINGS = ("agent_model", "user_model", "num_trials", "max_num_steps", "data_dir")
"""Settings that only matter when the benchmark agent runs."""


def inapplicable_settings(settings: E2ESettings) -> dict[str, str]:
    """The settings that have no effect on this run, each with the reason (e.g. no agent runs)."""
    out: dict[str, str] = {}
    if not settings.runs_agent:
        out |= dict.fromkeys(_AGENT_SETTINGS, "no agent runs with --traces and --no-benchmark")
    if settings.no_benchmark:
        out.setdefault("skill_injection", "the learned skillbook is not evaluated with --no-benchmark")
        out.setdefault("top_k", "the learned skillbook is not evaluated with --no-benchmark")
    elif settings.skill_injection != "top-k":
        out["top_k"] = f"it applies only with --skill-injection top-k (this run: {settings.skill_injection})"
    return out


def _refuse_inapplicable_flags(settings: E2ESettings) -> None:
    """Refuse flags that would be silently ignored; values from the environment or a config file are shared
    defaults, so those simply do not apply."""
    by_reason: dict[str, list[str]] = {}
    for name, reason in inapplicable_settings(settings).items():
        if settings.source_of(name) == "flag":
            by_reason.setdefault(reason, []).append("--" + name.replace("_", "-"))
    if by_reason:
        problems = "; ".join(f"{', '.join(flags)}: {reason}" for reason, flags in by_reason.items())
        raise InapplicableFlagError(f"flags that would have no effect on this run ({problems}): drop them")


def load_config_file(path: Path) -> dict[str, object]:
    """Read and validate a config file; returns `{setting name: value}` for the values it sets."""
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"config file {path} does not exist: fix the --config path") from None
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as e:
        raise ConfigError(f"{path}: not valid TOML ({e})") from None
    try:
        parsed = _ConfigFile.model_validate(raw)
    except ValidationError as e:
        first = e.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise ConfigError(
            f"{path}: field '{where}': {first['msg']} (tables: [models] agent/reflector/skill_manager/user/embedding, "
            "[e2e] benchmark/reflector_type/epochs/seed/max_workers/sm_sessions/num_trials/max_num_steps/"
            "skill_injection/top_k/limit/abort_after/output_dir/data_dir/redact/review/skillbook, "
            "[e2e.steps] step name = {options} / true / false, [redaction] patterns/allow/allow_patterns)"
        ) from None
    values: dict[str, object] = {
        f"{role}_model": value for role, value in parsed.models.model_dump(exclude_none=True).items()
    }
    for name, value in parsed.e2e.model_dump(exclude_none=True).items():
        if name == "steps":
            values["steps"] = {k: ({} if v is True else v) for k, v in value.items() if v is not False}
            values["no_steps"] = tuple(k for k, v in value.items() if v is False)
            continue
        values[name] = Path(value) if name in ("output_dir", "data_dir", "skillbook") else value
    for name, value in parsed.redaction.model_dump(exclude_none=True).items():
        values[f"redaction_{name}"] = tuple(value) if isinstance(value, list) else value
    return values


def _find_config(config: Path | None, cwd: Path) -> Path | None:
    if config is not None:
        return config
    default = cwd / CONFIG_FILE
    return default if default.is_file() else None


_T = TypeVar("_T")


def _parse_env(name: str, raw: str, parse: Callable[[str], _T]) -> _T:
    try:
        return parse(raw.strip())
    except ValueError:
        raise ConfigError(f"{name}={raw!r} is not a valid value: fix or unset the variable") from None


_ENV_PARSERS: dict[str, Callable[[str], object]] = {
    "reflector_type": str,
    "data_dir": Path,
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
    and `--no-benchmark`) raises `InapplicableFlagError`; such values from the environment or the config file
    are shared defaults and simply do not apply.

    Args:
        flags: Setting name -> value from the command line; `None` means "not given".
        environ: The environment (default `os.environ`).
        config: `--config FILE`; default `ace-eval.toml` in `cwd` when it exists.
        cwd: The folder relative paths of the config file are resolved against (default: the current one).
    """
    env = os.environ if environ is None else environ
    here = Path.cwd() if cwd is None else cwd
    config_path = _find_config(config, here)
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
    values.update(_merge_steps(flags, from_file, sources, config_path))
    _merge_redact(values, sources)
    settings = E2ESettings(**values, config_file=config_path, sources=sources)
    _refuse_inapplicable_flags(settings)
    return settings


_PIPELINE_SETTINGS = frozenset({"steps", "no_steps"})


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
    raise _ContradictionError(
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
