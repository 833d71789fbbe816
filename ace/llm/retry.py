"""Bounded retries with exponential backoff and jitter for model requests.

Retried: rate limits (429), timeouts (408 and client-side), conflicts/too-early (409, 425), connection errors and
5xx responses. Not retried: every other 4xx (authentication, permission, bad request, unknown model, context
window), a missing key whatever status the SDK gave it (the OpenAI SDK reports it as a 500), and any error that is
not about the transport. A `Retry-After` / `retry-after-ms` header wins over the backoff.
"""

from __future__ import annotations

import email.utils
import logging
import random
import re
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import TypeVar

import anyio
import httpx

from ace.llm._errors import FailureKind, ModelConfigError, ModelRequestError

__all__ = [
    "NON_RETRYABLE",
    "FailureKind",
    "RetryPolicy",
    "call_with_retries",
    "failure_kind",
    "failure_message",
    "is_retryable",
    "retry_after_seconds",
]

_T = TypeVar("_T")
_RETRYABLE_STATUS = frozenset({408, 409, 425, 429})
_LOG = logging.getLogger(__name__)
NON_RETRYABLE: frozenset[FailureKind] = frozenset({"auth", "permission", "not_found", "bad_request", "config"})
"""Failures another attempt cannot fix: the caller's key, access, model string or request is wrong."""
_BY_TYPE: dict[str, FailureKind] = {
    "AuthenticationError": "auth",
    "PermissionDeniedError": "permission",
    "NotFoundError": "not_found",
}
_NO_CONNECTION = re.compile(
    r"connection error|connection refused|connecterror|failed to establish a new connection|name or service not "
    r"known|temporary failure in name resolution|nodename nor servname|getaddrinfo failed|network is unreachable|"
    r"no route to host|cannot connect to host",
    re.IGNORECASE,
)
"""What a connection failure says when a client wraps it in a 5xx or a generic error (litellm, the OpenAI SDK)."""
_MISSING_KEY = re.compile(
    r"missing credentials|unable to locate credentials|no credentials|missing (an? )?api[ _-]?key|"
    r"api[ _-]?key (is )?(missing|not (set|provided|found))|invalid[ _-]api[ _-]?key|incorrect api key",
    re.IGNORECASE,
)


@dataclass(frozen=True, kw_only=True)
class RetryPolicy:
    """How often and how patiently a failed request is tried again."""

    max_retries: int = 4
    """Retries after the first attempt (so at most `max_retries + 1` attempts)."""
    base_delay: float = 1.0
    """Delay before the first retry; doubles on each further retry."""
    max_delay: float = 60.0
    """Cap of the exponential backoff."""
    max_retry_after: float = 300.0
    """Cap of a provider's `Retry-After` request."""
    jitter: float = 0.5
    """Fraction of each backoff delay that is randomised (0 = none, 1 = full jitter)."""
    sleep: Callable[[float], Awaitable[None]] = field(default=anyio.sleep, compare=False, repr=False)
    """The sleep to wait with; tests pass a recording fake."""

    def __post_init__(self) -> None:
        if self.max_retries < 0 or self.base_delay < 0 or self.max_delay < 0 or not 0 <= self.jitter <= 1:
            raise ValueError("RetryPolicy needs max_retries >= 0, delays >= 0 and 0 <= jitter <= 1")

    def delay(self, retry: int, error: BaseException) -> float:
        """Seconds to wait before retry number `retry` (0-based) after `error`."""
        requested = retry_after_seconds(error)
        if requested is not None:
            return min(requested, self.max_retry_after)
        backoff = min(self.max_delay, self.base_delay * 2.0**retry)
        return backoff * (1 - self.jitter * random.random())


def status_code_of(error: BaseException) -> int | None:
    """The HTTP status an SDK error carries (litellm, openai, httpx), if any."""
    status = getattr(error, "status_code", None)
    if isinstance(status, int):
        return status
    if isinstance(error, httpx.HTTPStatusError):
        return error.response.status_code
    return None


def failure_kind(error: BaseException) -> FailureKind:
    """What kind of failure `error` is: the kind a `ModelRequestError` or `ModelConfigError` in its cause chain
    recorded (a reflector error wraps the model's), else from its status code, type or a missing-key message."""
    link: BaseException | None = error
    for _ in range(8):
        if link is None:
            break
        if isinstance(link, ModelRequestError):
            return link.kind
        if isinstance(link, ModelConfigError):
            return "config"
        link = link.__cause__ or link.__context__
    if isinstance(error, TimeoutError | httpx.TimeoutException) or type(error).__name__ in (
        "Timeout",
        "APITimeoutError",
    ):
        return "timeout"
    by_type = _BY_TYPE.get(type(error).__name__)
    if by_type is not None:
        return by_type
    status = status_code_of(error)
    if (status is None or status >= 500) and _MISSING_KEY.search(str(error)):
        return "auth"  # the OpenAI SDK raises a missing key before any request; litellm then calls it a 500
    if (status is None or status >= 500) and _unreachable(error):
        return "connection"
    if status is None:
        if isinstance(error, ConnectionError | httpx.TransportError):
            return "connection"
        return "other"
    if status == 401:
        return "auth"
    if status == 403:
        return "permission"
    if status == 404:
        return "not_found"
    if status == 429:
        return "rate_limit"
    if status == 408:
        return "timeout"
    if status >= 500:
        # litellm reports a connection failure as APIConnectionError with status 500.
        return "connection" if "Connection" in type(error).__name__ else "server"
    if status in _RETRYABLE_STATUS:
        return "server"
    return "bad_request"


def _unreachable(error: BaseException) -> bool:
    """Whether `error`, or an error it wraps, is a failure to connect (not a timeout, not an answer)."""
    link: BaseException | None = error
    for _ in range(8):
        if link is None:
            return False
        if isinstance(link, ConnectionError | httpx.ConnectError) or _NO_CONNECTION.search(str(link)):
            return True
        link = link.__cause__ or link.__context__
    return False


def is_retryable(error: BaseException) -> bool:
    """Whether another attempt may succeed: rate limits, timeouts, connection errors, 5xx."""
    return failure_kind(error) in ("rate_limit", "timeout", "connection", "server")


def retry_after_seconds(error: BaseException) -> float | None:
    """Seconds the provider asked to wait (`retry-after-ms` or `Retry-After`, seconds or HTTP date), if it said."""
    headers = _headers_of(error)
    if not headers:
        return None
    lowered = {k.lower(): v for k, v in headers.items()}
    if (ms := lowered.get("retry-after-ms")) is not None:
        try:
            return max(0.0, float(ms) / 1000)
        except ValueError:
            pass
    raw = lowered.get("retry-after")
    if raw is None:
        return None
    try:
        return max(0.0, float(raw))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(raw)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def _headers_of(error: BaseException) -> Mapping[str, str] | None:
    for attribute in ("headers", "litellm_response_headers"):
        headers = getattr(error, attribute, None)
        if isinstance(headers, Mapping | httpx.Headers) and headers:
            return dict(headers.items())
    response = getattr(error, "response", None)
    if isinstance(response, httpx.Response) and response.headers:
        return dict(response.headers.items())
    return None


def failure_message(model_name: str, error: BaseException, *, attempts: int) -> str:
    """A message naming the model, what went wrong and what to do about it."""
    kind = failure_kind(error)
    tried = f" after {attempts} attempts" if attempts > 1 else ""
    fixes: dict[FailureKind, str] = {
        "auth": "authentication failed: set the provider's key in the environment as litellm expects it "
        "(OPENAI_API_KEY, ANTHROPIC_API_KEY, AWS credentials and AWS_REGION_NAME for bedrock/...)",
        "permission": "the provider refused access with these credentials: check that the account may use this "
        "model (for bedrock/..., request model access in the Bedrock console for the region in AWS_REGION_NAME)",
        "not_found": "the provider does not know this model: check the model string (litellm form "
        "'provider/model', e.g. 'openai/gpt-4.1-mini') and that your account has access to it",
        "config": "the model cannot be used as configured: see the cause below",
        "bad_request": "the provider refused the request: check the model string and the settings "
        "(max_tokens, temperature), and that the conversation fits the model's context window",
        "rate_limit": f"still rate limited{tried}: lower the parallelism (--max-workers), raise "
        "ACE_<ROLE>_MAX_RETRIES, or ask the provider for a higher quota",
        "timeout": f"timed out{tried}: raise ACE_<ROLE>_TIMEOUT, or check that the endpoint answers",
        "connection": f"could not reach the provider{tried}: check the network, the api_base, and that a local "
        "server (ollama serve, vllm) is running",
        "server": f"the provider kept failing{tried}: try again later or use another model",
        "other": "the request failed: see the cause below",
    }
    return f"Model {model_name!r}: {fixes[kind]}. Cause: {type(error).__name__}: {error}"


async def call_with_retries(
    call: Callable[[], Awaitable[_T]],
    *,
    policy: RetryPolicy,
    model_name: str,
) -> _T:
    """Await `call()`, retrying retryable failures per `policy`; a final failure raises `ModelRequestError`."""
    attempt = 0
    while True:
        attempt += 1
        try:
            return await call()
        except Exception as error:
            retry = attempt - 1
            if not is_retryable(error) or retry >= policy.max_retries:
                raise ModelRequestError(
                    model_name,
                    failure_message(model_name, error, attempts=attempt),
                    attempts=attempt,
                    status_code=status_code_of(error),
                    kind=failure_kind(error),
                ) from error
            wait = policy.delay(retry, error)
            _LOG.warning(
                "%s failed (%s), retry %d/%d in %.1f s",
                model_name,
                failure_kind(error),
                attempt,
                policy.max_retries,
                wait,
            )
            await policy.sleep(wait)
