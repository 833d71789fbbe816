"""The settings of an `ace-eval e2e` run, resolved: `E2ESettings`, the values it accepts, and which apply to a run."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, get_args

from ace.exceptions import UserError
from ace.llm.routing import suggest_model
from ace.redaction import RedactionConfigError, Redactor
from ace_eval.benchmarks import DEFAULT_BENCHMARK, SKILL_INJECTIONS, SkillInjection
from ace_eval.e2e.training_results import SMSessions

__all__ = [
    "BENCHMARK_DEFAULT",
    "DEFAULT_BENCHMARK",
    "DEFAULT_MODEL",
    "DEFAULT_OUTPUT_DIR",
    "MODEL_ROLES",
    "ConfigError",
    "ContradictionError",
    "E2ESettings",
    "ModelRole",
    "ReflectorType",
    "inapplicable_settings",
]

ReflectorType = Literal["simple", "rr", "grounded"]
ModelRole = Literal["agent", "reflector", "skill_manager", "user", "embedding"]
MODEL_ROLES: tuple[ModelRole, ...] = get_args(ModelRole)

DEFAULT_MODEL = "local"
"""The embedded offline model: SmolLM2 for the LLM roles, all-MiniLM-L6-v2 for embeddings."""
DEFAULT_OUTPUT_DIR = Path("results") / "e2e"
BENCHMARK_DEFAULT = "default: the benchmark's"
"""The source of a harness setting filled in with the benchmark's own default: not given, so the benchmark
resolves it itself (it may choose another value for the run's models)."""


class ConfigError(UserError, ValueError):
    """A setting that cannot be used; the message names where it came from (flag, variable or file) and the fix."""


class ContradictionError(ConfigError):
    """Two settings of the same source that ask for opposite things; fixed by dropping one (exit 2)."""


@dataclass(frozen=True, kw_only=True)
class E2ESettings:
    """Everything an e2e run needs to know, resolved; `sources` says where each value came from."""

    benchmark: str = DEFAULT_BENCHMARK
    """An installed benchmark (`ace-eval benchmarks list`) or a user's scorer `MODULE:FUNCTION`."""
    benchmark_options: Mapping[str, object] = field(default_factory=dict[str, object])
    """The benchmark's own options (`--benchmark-option key=value`, `[e2e.benchmark_options]`), checked by its
    options model; flags of the same name (`--train-split`, ...) fill those left unset."""
    traces: Path | None = None
    """A trace collection to replay offline (no agent runs to collect traces), or a trace file of a known format
    (`traces_format`), imported into the run folder on the fly."""
    traces_format: str | None = None
    """The format of a `traces` file (`ace-eval collection import --format`); None: told from the file."""
    outcomes: Path | None = None
    """A file of reward and feedback per trace id for the traces of a `traces` file (`--outcomes`,
    `ace_eval.collection.outcomes`); None: the judgement the file itself holds."""
    agent_model: str = DEFAULT_MODEL
    reflector_model: str = DEFAULT_MODEL
    skill_manager_model: str = DEFAULT_MODEL
    user_model: str = DEFAULT_MODEL
    embedding_model: str = DEFAULT_MODEL
    reflector_type: ReflectorType = "simple"
    profile: Literal["auto", "small", "hosted"] = "auto"
    """The settings profile of the reflector and skill manager (`ace_eval.e2e.profiles`): `auto` takes each
    role's from its model (the embedded model is `small`), `small` or `hosted` forces one."""
    max_output_tokens: int | None = None
    """Longest reflector / skill-manager output in tokens (None: the profile's; the embedded model's cap is 1024)."""
    reflector_retries: int | None = None
    """How often a malformed reflection is sent back for a fix (None: the profile's, 0 small, 2 hosted)."""
    reflector_conversation: bool | None = None
    """Show the trace's conversation to the reflector (None: the profile's, off small, on hosted)."""
    sm_request_limit: int | None = None
    """Model requests per skill-manager session (None: the profile's, 2 small, 20 hosted)."""
    sm_tool_calls_limit: int | None = None
    """Tool calls per skill-manager session (None: the profile's, 1 small, 30 hosted)."""
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
    skill_tokens: int | None = None
    """With `top-k`: as many of the most relevant skills as fit this many tokens, instead of `top_k`."""
    limit: int | None = None
    """Use only the first N traces (with --traces) or tasks (without; of each split, for a benchmark with splits)."""
    train_split: str | None = None
    """The tasks the agent learns on, a split of the benchmark (`train`, `base`, ...) or comma-separated task ids
    (default: the benchmark's; for a benchmark that takes the option `train_split`)."""
    eval_split: str | None = None
    """The tasks scored without and with the skillbook (default: the benchmark's; for a benchmark that takes the
    option `eval_split`)."""
    provider_limit: int | None = None
    """At most this many model requests in flight per provider (default: no limit beyond --max-workers; for a
    benchmark that takes the option `provider_limit`)."""
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
    """The benchmark's data folder, for a benchmark that takes the option `data_dir` (its default:
    `ace-eval benchmarks list`)."""
    steps: Mapping[str, Mapping[str, object]] = field(default_factory=dict)
    """Pipeline steps asked for beyond (or configuring) the defaults: name -> options (`--step`, `[e2e.steps]`)."""
    no_steps: tuple[str, ...] = ()
    """Steps left out of the pipeline (`--no-step`, `name = false` in `[e2e.steps]`)."""
    skillbook: Path | None = None
    """The skillbook training starts from (never written by the run; a store resolves to its current version's
    file); with `review`, the published skillbook whose review queue (`<stem>.review.json` beside it) gets the
    candidates. A missing file starts empty."""
    review: bool = False
    """Stage the skill manager's edits as review candidates instead of publishing them (`ace-eval review`)."""
    config_file: Path | None = None
    sources: Mapping[str, str] = field(default_factory=dict)
    """Setting name -> `flag`, `env:NAME`, `config:FILE` or `default`."""

    def __post_init__(self) -> None:
        for name in ("epochs", "max_workers", "num_trials", "max_num_steps", "top_k"):
            if getattr(self, name) < 1:
                raise ConfigError(f"{name} must be at least 1, got {getattr(self, name)} ({self.source_of(name)})")
        for name in ("max_output_tokens", "sm_request_limit", "sm_tool_calls_limit", "skill_tokens"):
            value = getattr(self, name)
            if value is not None and value < 1:
                raise ConfigError(f"{name} must be at least 1, got {value} ({self.source_of(name)})")
        if self.reflector_retries is not None and self.reflector_retries < 0:
            where = self.source_of("reflector_retries")
            raise ConfigError(f"reflector_retries must be 0 or more, got {self.reflector_retries} ({where})")
        if self.profile not in ("auto", "small", "hosted"):
            raise ConfigError(
                f"profile must be 'auto', 'small' or 'hosted', got {self.profile!r} ({self.source_of('profile')})"
            )
        for role in MODEL_ROLES:
            name = self.model_for(role).strip()
            if "/" not in name and ":" not in name and (guess := suggest_model(name)) is not None:
                flag = "--" + f"{role}_model".replace("_", "-")
                raise ConfigError(
                    f"unknown model {name!r} ({self.source_of(f'{role}_model')}; change it with {flag}): "
                    f"did you mean {guess!r}?"
                )
        if self.abort_after < 0:
            where = self.source_of("abort_after")
            raise ConfigError(f"abort_after must be 0 or more (0: never abort), got {self.abort_after} ({where})")
        if self.provider_limit is not None and self.provider_limit < 1:
            where = self.source_of("provider_limit")
            raise ConfigError(f"provider_limit must be at least 1, got {self.provider_limit} ({where})")
        if self.limit is not None and self.limit < 1:
            raise ConfigError(f"limit must be at least 1, got {self.limit} ({self.source_of('limit')})")
        if self.reflector_type not in get_args(ReflectorType):
            raise ConfigError(
                f"reflector_type must be 'simple', 'rr' or 'grounded', got {self.reflector_type!r} "
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
        self._check_benchmark()
        if "redact" in self.no_steps:  # --no-step redact is --no-redact: no step, and no redaction at any sink
            object.__setattr__(self, "redact", False)
            object.__setattr__(self, "no_steps", tuple(n for n in self.no_steps if n != "redact"))
        self._check_review()
        try:
            self.redactor()
        except RedactionConfigError as e:
            raise ConfigError(f"{e} ({self.source_of('redaction_patterns')})") from None

    def _check_benchmark(self) -> None:
        """An installed benchmark or `MODULE:FUNCTION` (imported when the run plans it)."""
        from ace_eval.benchmarks import BenchmarkRegistry

        registry = BenchmarkRegistry.from_entry_points()
        if ":" not in self.benchmark and self.benchmark not in registry:
            try:
                registry.get(self.benchmark)
            except UserError as e:
                raise ConfigError(f"{e} ({self.source_of('benchmark')})") from None

    def _check_review(self) -> None:
        """A review run needs the published skillbook, evaluates nothing, and stages every edit."""
        if not self.review:
            return
        where = self.source_of("review")
        if self.skillbook is None:
            raise ContradictionError(
                f"review ({where}) needs the published skillbook the candidates are for: pass --skillbook PATH (or "
                "[e2e] skillbook = ...); a file that does not exist yet starts empty"
            )
        if not self.no_benchmark:
            raise ContradictionError(
                f"review ({where}) publishes nothing, so the evaluation would measure the unchanged skillbook: drop "
                "--benchmark (or add --no-benchmark), and evaluate after `ace-eval review accept`"
            )
        if "deduplicate" in self.steps:
            raise ContradictionError(
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

    def benchmark_takes(self) -> frozenset[str]:
        """The harness settings the benchmark takes as its options (`BenchmarkFactory.harness_settings`)."""
        from ace_eval.benchmarks import BenchmarkRegistry

        return BenchmarkRegistry.from_entry_points().factory(self.benchmark).harness_settings

    def benchmark_note(self, name: str) -> str:
        """Why the setting `name` does not apply to this run's benchmark."""
        from ace_eval.benchmarks import BenchmarkRegistry

        note = BenchmarkRegistry.from_entry_points().factory(self.benchmark).notes.get(name)
        return (
            note
            or f"it applies only to benchmarks that take it as an option (this run: {self.benchmark}; "
            "`ace-eval benchmarks list`)"
        )

    def benchmark_raw_options(self) -> dict[str, object]:
        """The benchmark's options: its harness settings given to this run (by a flag, variable or file, or set to
        other than their default), then `benchmark_options` over them."""
        defaults = {f.name: f.default for f in dataclasses.fields(E2ESettings)}
        given = {
            name: str(value) if isinstance(value, Path) else value
            for name in sorted(self.benchmark_takes())
            if (value := getattr(self, name, None)) is not None
            and self.source_of(name) != BENCHMARK_DEFAULT
            and (self.source_of(name) != "default" or value != defaults.get(name))
        }
        return {**given, **self.benchmark_options}

    def with_resolved(self, options: Mapping[str, object]) -> E2ESettings:
        """These settings with each one the harness filled with the benchmark's default (`BENCHMARK_DEFAULT`) set to
        the value the benchmark resolved, so `run.json`'s `config` records what the run used (a step cap the benchmark
        lowers for the embedded model, not its options model's default)."""
        used: dict[str, Any] = {  # Any: each setting has its own type, checked by the dataclass
            name: options[name]
            for name, source in self.sources.items()
            if source == BENCHMARK_DEFAULT and name in options and options[name] != getattr(self, name, None)
        }
        return dataclasses.replace(self, **used) if used else self

    def benchmark_roles(self) -> tuple[str, ...]:
        """The model roles the benchmark calls (`Benchmark.models`) through the run's pydantic-ai models, when its
        agent runs (none when it has its own clients: `BenchmarkFactory.own_clients`)."""
        from ace_eval.benchmarks import BenchmarkRegistry, load_benchmark

        if not self.runs_agent:
            return ()
        if BenchmarkRegistry.from_entry_points().factory(self.benchmark).own_clients:
            return ()
        return tuple(load_benchmark(self.benchmark, self.benchmark_raw_options()).models())

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
            elif f.name == "benchmark_options":
                value = dict(self.benchmark_options)
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
        for name in ("traces", "outcomes", "output_dir", "data_dir", "config_file", "skillbook"):
            if values.get(name) is not None:
                values[name] = Path(values[name])
        for name in ("no_steps", "redaction_allow", "redaction_allow_patterns"):
            if name in values:
                values[name] = tuple(values[name])
        return cls(**values)


_AGENT_SETTINGS = ("agent_model", "user_model", "num_trials", "max_num_steps", "data_dir")
"""Settings that only matter when the benchmark agent runs."""
_BENCHMARK_SETTINGS = ("train_split", "eval_split", "provider_limit", "data_dir")
"""Harness settings that are the benchmark's options: they apply when its options model takes them."""


def inapplicable_settings(settings: E2ESettings) -> dict[str, str]:
    """The settings that have no effect on this run, each with the reason (e.g. no agent runs)."""
    out: dict[str, str] = {}
    if not settings.runs_agent:
        out |= dict.fromkeys(_AGENT_SETTINGS, "no agent runs with --traces (and no --benchmark)")
    takes = settings.benchmark_takes()
    for name in _BENCHMARK_SETTINGS:
        if name not in takes and getattr(settings, name) is not None:
            out.setdefault(name, settings.benchmark_note(name))
    if "train_split" in takes and settings.traces is not None:
        out.setdefault("train_split", "the traces given with --traces are learned from")
    if takes & {"eval_split", "provider_limit"}:
        if not settings.runs_agent:
            out |= dict.fromkeys(("eval_split", "provider_limit"), "no agent runs with --traces (and no --benchmark)")
        elif settings.no_benchmark:
            out.setdefault("eval_split", "nothing is evaluated with --no-benchmark")
    if settings.traces is None or settings.traces.is_dir():
        out["traces_format"] = "it names the format of a --traces file"
        if settings.outcomes is not None:
            out["outcomes"] = "it judges the traces of a --traces file (import a folder's traces with --outcomes)"
    if settings.no_benchmark:
        out.setdefault("skill_injection", "the learned skillbook is not evaluated with --no-benchmark")
        out.setdefault("top_k", "the learned skillbook is not evaluated with --no-benchmark")
        out.setdefault("skill_tokens", "the learned skillbook is not evaluated with --no-benchmark")
    elif settings.skill_injection != "top-k":
        out["top_k"] = f"it applies only with --skill-injection top-k (this run: {settings.skill_injection})"
        out["skill_tokens"] = out["top_k"]
    elif settings.skill_tokens is not None:
        out["top_k"] = "--skill-tokens chooses how many skills by their size"
    return out
