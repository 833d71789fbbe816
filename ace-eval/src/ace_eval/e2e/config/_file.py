"""The config file of `ace-eval e2e`: one source of settings, below the flags and the environment variables.

It is `ace-eval.toml` in the current folder, or the file `--config FILE` names:

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
# data_dir = "data/airline"        # the benchmark's data folder, for one that takes data_dir
redact = true                      # false (or --no-redact) keeps secrets and personal data in the run folder
# review = true                    # stage edits as candidates of skillbook's review queue (needs skillbook)
# skillbook = "prod/skillbook.json" # start from (with review: the published skillbook, never written by a run)
# profile = "auto"                 # the reflector's and skill manager's settings: small for 'local', else hosted
# max_output_tokens = 512          # and reflector_retries, reflector_conversation, sm_request_limit,
#                                  # sm_tool_calls_limit: override the profile's values

[redaction]                        # on top of the built-in detectors (see docs/redaction.md)
patterns = { employee_id = 'EMP-\\d{6}' }    # kind name -> regular expression
allow = ["support@airline.example"]          # exact values never redacted
allow_patterns = ['.*@airline\\.example']    # values a regular expression matches whole

[e2e.steps]                       # pipeline steps by name (`ace-eval steps list`): options, true, or false
deduplicate = { threshold = 0.9 } # add a step with options (as --step deduplicate:threshold=0.9)
export_markdown = false           # leave a default step out (as --no-step export_markdown)

[e2e.benchmark_options]           # the benchmark's own options (`ace-eval benchmarks list`), as --benchmark-option
# flakiness = 0.1
```
Every model defaults to `local`, the embedded offline model (SmolLM2 for the LLM roles, MiniLM for embeddings).
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ace_eval.benchmarks import SkillInjection
from ace_eval.e2e.config._settings import ConfigError, ReflectorType
from ace_eval.e2e.training_results import SMSessions

__all__ = ["CONFIG_FILE", "find_config", "load_config_file"]

CONFIG_FILE = "ace-eval.toml"


class _ModelsTable(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    agent: str | None = Field(default=None, min_length=1)
    reflector: str | None = Field(default=None, min_length=1)
    skill_manager: str | None = Field(default=None, min_length=1)
    user: str | None = Field(default=None, min_length=1)
    embedding: str | None = Field(default=None, min_length=1)


class _E2ETable(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    benchmark: str | None = Field(default=None, min_length=1)
    benchmark_options: dict[str, object] | None = None
    reflector_type: ReflectorType | None = None
    epochs: int | None = Field(default=None, ge=1)
    seed: int | None = None
    max_workers: int | None = Field(default=None, ge=1)
    sm_sessions: SMSessions | None = None
    num_trials: int | None = Field(default=None, ge=1)
    max_num_steps: int | None = Field(default=None, ge=1)
    skill_injection: SkillInjection | None = None
    top_k: int | None = Field(default=None, ge=1)
    skill_tokens: int | None = Field(default=None, ge=1)
    limit: int | None = Field(default=None, ge=1)
    train_split: str | None = Field(default=None, min_length=1)
    eval_split: str | None = Field(default=None, min_length=1)
    provider_limit: int | None = Field(default=None, ge=1)
    abort_after: int | None = Field(default=None, ge=0)
    output_dir: str | None = Field(default=None, min_length=1)
    data_dir: str | None = Field(default=None, min_length=1)
    steps: dict[str, bool | dict[str, object]] | None = None
    redact: bool | None = None
    review: bool | None = None
    skillbook: str | None = Field(default=None, min_length=1)
    profile: Literal["auto", "small", "hosted"] | None = None
    max_output_tokens: int | None = Field(default=None, ge=1)
    reflector_retries: int | None = Field(default=None, ge=0)
    reflector_conversation: bool | None = None
    sm_request_limit: int | None = Field(default=None, ge=1)
    sm_tool_calls_limit: int | None = Field(default=None, ge=1)


class _RedactionTable(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    patterns: dict[str, str] | None = None
    allow: list[str] | None = None
    allow_patterns: list[str] | None = None


class _FederationTable(BaseModel):
    """`[federation]`: the hub `ace-eval federate` uses when neither --hub nor $ACE_FEDERATION_HUB is given."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    hub: str | None = None


class _ConfigFile(BaseModel):
    """`ace-eval.toml`: a `[models]` table, an `[e2e]` table, a `[redaction]` table and a `[federation]` table (read
    by `ace-eval federate`), nothing else."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    models: _ModelsTable = Field(default_factory=_ModelsTable)
    e2e: _E2ETable = Field(default_factory=_E2ETable)
    redaction: _RedactionTable = Field(default_factory=_RedactionTable)
    federation: _FederationTable = Field(default_factory=_FederationTable)


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
            "skill_injection/top_k/skill_tokens/limit/train_split/eval_split/provider_limit/abort_after/output_dir/"
            "data_dir/redact/review/skillbook/profile/max_output_tokens/reflector_retries/reflector_conversation/"
            "sm_request_limit/sm_tool_calls_limit, "
            "[e2e.steps] step name = {options} / true / false, [e2e.benchmark_options] option = value, "
            "[redaction] patterns/allow/allow_patterns)"
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


def find_config(config: Path | None, cwd: Path) -> Path | None:
    """The `--config` file, else `ace-eval.toml` in `cwd` when it exists, else `None`."""
    if config is not None:
        return config
    default = cwd / CONFIG_FILE
    return default if default.is_file() else None
