"""`RecursiveConfig`: the recursive reflector's budgets, prompt caching, tool sizes and sandbox limits."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import get_args

from pydantic_ai.settings import CacheConfig, CacheRetention, CacheSetting

from ace.agents.recursive import SessionBudget
from ace.sandbox.runner import SandboxLimits

__all__ = ["RecursiveConfig", "cache_retention"]

_RETENTIONS: tuple[CacheRetention, ...] = get_args(CacheRetention)
_BY_SECONDS: dict[int, CacheRetention] = {300: "5m", 1_800: "30m", 3_600: "1h", 43_200: "12h"}


def cache_retention(ttl: str | int) -> CacheRetention:
    """A cache TTL (`'5m'`, `'30m'`, `'1h'`, `'12h'`, or those durations in seconds) as pydantic-ai's retention."""
    if isinstance(ttl, bool):
        raise ValueError(f"cache_ttl must be one of {', '.join(_RETENTIONS)} or seconds, got {ttl!r}")
    if isinstance(ttl, int):
        if ttl in _BY_SECONDS:
            return _BY_SECONDS[ttl]
        raise ValueError(
            f"cache_ttl={ttl} seconds is not a cache tier: use 300 ('5m'), 1800 ('30m'), 3600 ('1h') or 43200 ('12h')"
        )
    for retention in _RETENTIONS:
        if ttl.strip().lower() == retention:
            return retention
    raise ValueError(f"cache_ttl={ttl!r} is not a cache tier: use one of {', '.join(_RETENTIONS)}")


@dataclass(frozen=True, kw_only=True)
class RecursiveConfig:
    """How one recursive-reflector session runs."""

    max_requests: int = 20
    """Model requests per session; the last one has no tools, so the model must return its reflection."""
    max_tool_calls: int | None = 40
    """Tool calls per session (`None`: unlimited); tools are withdrawn once it is reached, but one response whose
    parallel calls cross it ends the session without a reflection."""
    max_tokens: int | None = None
    """Input + output tokens per session (`None`: unlimited); past 80% the tools are withdrawn too."""
    max_history_tokens: int = 16_000
    """Estimated history size above which old tool calls are compacted into a digest."""
    keep_last_messages: int = 6
    """Messages at the end of the history that compaction never touches."""
    tool_retries: int = 2
    """How often one tool may be refused (bad index, unknown skill) before the session stops."""
    cache_prompts: bool = True
    """Ask the provider to cache the static prefix (instructions, tools) and the growing conversation."""
    cache_ttl: str | int = "5m"
    """Cache retention: `'5m'`, `'30m'`, `'1h'`, `'12h'` or seconds; snapped to what the provider offers."""
    sandbox: SandboxLimits = field(default_factory=SandboxLimits)
    """Limits of every `execute_code` run."""
    max_read_chars: int = 6_000
    """Characters of a message one `read_message` call returns (longer ones are read with `offset`)."""
    max_list_messages: int = 40
    """Messages one `list_messages` call (and the prompt's message index) lists."""
    preview_chars: int = 160
    """Characters of each message or result shown in listings."""
    max_search_results: int = 10
    """Largest `top_k` a `search_skillbook` call may ask for."""
    record_content: bool = False
    """Put the prompt, the code run and the reflection on spans (the user opted in)."""

    def __post_init__(self) -> None:
        for name in ("max_requests", "max_history_tokens", "max_read_chars", "max_list_messages", "preview_chars"):
            if getattr(self, name) < 1:
                raise ValueError(f"RecursiveConfig.{name} must be a positive integer, got {getattr(self, name)!r}")
        for name in ("max_tool_calls", "max_tokens"):
            value = getattr(self, name)
            if value is not None and value < 1:
                raise ValueError(f"RecursiveConfig.{name} must be a positive integer or None, got {value!r}")
        if self.max_requests < 2:
            raise ValueError("RecursiveConfig.max_requests must be at least 2: one to use tools, one to reflect")
        if self.tool_retries < 0 or self.max_search_results < 1:
            raise ValueError("RecursiveConfig.tool_retries must be >= 0 and max_search_results >= 1")
        cache_retention(self.cache_ttl)  # fail at construction, not at the first request

    @property
    def budget(self) -> SessionBudget:
        """The `RecursiveAgent` budget these settings stand for."""
        return SessionBudget(
            request_limit=self.max_requests,
            tool_calls_limit=self.max_tool_calls,
            total_tokens_limit=self.max_tokens,
            max_history_tokens=self.max_history_tokens,
            keep_last_messages=self.keep_last_messages,
        )

    @property
    def cache_setting(self) -> CacheSetting:
        """pydantic-ai's `ModelSettings.cache` value: off, or the retention to cache prompts with."""
        return CacheConfig(retention=cache_retention(self.cache_ttl)) if self.cache_prompts else False
