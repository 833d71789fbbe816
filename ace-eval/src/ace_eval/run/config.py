"""`run.json`'s `config`: the run's settings as `E2ESettings.to_dict()` wrote them, typed; a resume compares them
with its own and rebuilds its settings from them (`E2ESettings.from_dict`).

The settings live above this layer (`ace_eval.e2e.config`); `tests/ace_eval/e2e/test_e2e_config.py` checks that
every setting has its field here, so a new setting cannot be written without being typed.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, JsonValue

__all__ = ["RunConfig"]


class RunConfig(BaseModel):
    """The settings of a run (flags, environment, config file and defaults, resolved)."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True)

    benchmark: str | None = None
    benchmark_options: dict[str, JsonValue] | None = None
    """The benchmark's own options as given (`--benchmark-option`, `[e2e.benchmark_options]`)."""
    traces: str | None = None
    """The collection (or trace file) replayed; `None`: the agent collected the traces."""
    traces_format: str | None = None
    outcomes: str | None = None
    """The file of reward and feedback per trace id applied to a `traces` file (`--outcomes`); `None`: none."""
    traces_sha256: str | None = None
    """The replayed traces' digest (a resume with other traces is refused)."""
    agent_model: str | None = None
    reflector_model: str | None = None
    skill_manager_model: str | None = None
    user_model: str | None = None
    embedding_model: str | None = None
    reflector_type: str | None = None
    profile: str | None = None
    max_output_tokens: int | None = None
    reflector_retries: int | None = None
    reflector_conversation: bool | None = None
    sm_request_limit: int | None = None
    sm_tool_calls_limit: int | None = None
    epochs: int = 1
    seed: int | None = None
    max_workers: int | None = None
    sm_sessions: str | None = None
    num_trials: int | None = None
    max_num_steps: int | None = None
    skill_injection: str | None = None
    top_k: int | None = None
    skill_tokens: int | None = None
    limit: int | None = None
    train_split: str | None = None
    eval_split: str | None = None
    provider_limit: int | None = None
    no_benchmark: bool | None = None
    no_preflight: bool | None = None
    retry_failed: bool | None = None
    abort_after: int | None = None
    logfire: bool | None = None
    logfire_content: bool | None = None
    redact: bool | None = None
    redaction_patterns: dict[str, str] | None = None
    redaction_allow: list[str] | None = None
    redaction_allow_patterns: list[str] | None = None
    verbose: bool | None = None
    output_dir: str | None = None
    data_dir: str | None = None
    steps: dict[str, dict[str, JsonValue]] | None = None
    """Pipeline steps asked for beyond (or configuring) the defaults: name -> options."""
    no_steps: list[str] | None = None
    skillbook: str | None = None
    """The skillbook the run started from (`--skillbook`); a review run's queue is beside it."""
    review: bool = False
    """Whether the run queued its edits for a person's review instead of applying them."""
    config_file: str | None = None
    sources: dict[str, str] | None = None
    """Setting name -> `flag`, `env:NAME`, `config:FILE` or `default`."""

    def as_dict(self) -> dict[str, JsonValue]:
        """The settings as they were written (what a resume compares and `E2ESettings.from_dict` takes); a field an
        older run did not write is left out, so it takes today's default."""
        return self.model_dump(mode="json", exclude_unset=True)
