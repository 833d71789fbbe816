"""Retry policy: which failures are retried, how long to wait, and what surfaces at the end."""

from __future__ import annotations

import email.utils
import time
from types import ModuleType
from typing import Any

import anyio
import httpx
import pytest

from ace.llm import (
    LocalModelUnavailableError,
    ModelRequestError,
    RetryPolicy,
    call_with_retries,
    import_litellm,
    is_retryable,
    retry_after_seconds,
)
from ace.llm.retry import failure_kind, failure_message


@pytest.fixture(scope="module")
def litellm() -> ModuleType:
    return import_litellm()


def _response(status: int, headers: dict[str, str] | None = None) -> httpx.Response:
    return httpx.Response(status, headers=headers, request=httpx.Request("POST", "https://api.example/v1"))


def _errors(litellm: ModuleType) -> dict[str, Exception]:
    who: dict[str, Any] = {"llm_provider": "openai", "model": "gpt-4.1-mini"}
    return {
        "rate_limit": litellm.RateLimitError(message="slow down", **who),
        "timeout": litellm.Timeout(message="too slow", **who),
        "connection": litellm.APIConnectionError(message="refused", **who),
        "unavailable": litellm.ServiceUnavailableError(message="503", **who),
        "internal": litellm.InternalServerError(message="500", **who),
        "bad_gateway": litellm.BadGatewayError(message="502", **who),
        "auth": litellm.AuthenticationError(message="bad key", **who),
        "bad_request": litellm.BadRequestError(message="bad", **who),
        "not_found": litellm.NotFoundError(message="no such model", **who),
        "context": litellm.ContextWindowExceededError(message="too long", **who),
    }


def test_transient_failures_are_retried_and_caller_mistakes_are_not(litellm: ModuleType) -> None:
    errors = _errors(litellm)
    retried = {"rate_limit", "timeout", "connection", "unavailable", "internal", "bad_gateway"}
    for name, error in errors.items():
        assert is_retryable(error) is (name in retried), name
    assert is_retryable(TimeoutError())
    assert is_retryable(ConnectionResetError())
    assert is_retryable(httpx.ConnectTimeout("slow"))
    assert not is_retryable(ValueError("a bug"))
    assert not is_retryable(KeyError("a bug"))


def test_retry_after_is_read_from_headers_or_response() -> None:
    class WithHeaders(Exception):
        def __init__(self, headers: dict[str, str]) -> None:
            self.headers = headers

    class WithResponse(Exception):
        def __init__(self, response: httpx.Response) -> None:
            self.response = response

    assert retry_after_seconds(WithHeaders({"Retry-After": "7"})) == 7.0
    assert retry_after_seconds(WithHeaders({"retry-after-ms": "250", "retry-after": "9"})) == 0.25
    assert retry_after_seconds(WithResponse(_response(429, {"retry-after": "4"}))) == 4.0
    in_ten = email.utils.formatdate(time.time() + 10, usegmt=True)
    assert 8.0 <= (retry_after_seconds(WithHeaders({"retry-after": in_ten})) or 0) <= 10.0
    assert retry_after_seconds(WithHeaders({"retry-after": "whenever"})) is None
    assert retry_after_seconds(WithResponse(_response(429))) is None
    assert retry_after_seconds(ValueError()) is None


def test_backoff_doubles_with_jitter_and_is_capped() -> None:
    policy = RetryPolicy(base_delay=1.0, max_delay=5.0, jitter=0.5)
    for retry, full in [(0, 1.0), (1, 2.0), (2, 4.0), (3, 5.0), (6, 5.0)]:
        for _ in range(20):
            assert full * 0.5 <= policy.delay(retry, TimeoutError()) <= full
    assert RetryPolicy(jitter=0.0, base_delay=2.0).delay(1, TimeoutError()) == 4.0


def test_provider_retry_after_wins_over_backoff_but_is_capped(litellm: ModuleType) -> None:
    error = litellm.RateLimitError(message="wait", llm_provider="openai", model="m", headers={"retry-after": "30"})
    assert RetryPolicy(base_delay=1.0).delay(0, error) == 30.0
    assert RetryPolicy(max_retry_after=10.0).delay(0, error) == 10.0


def test_policy_rejects_nonsense() -> None:
    with pytest.raises(ValueError, match="max_retries"):
        RetryPolicy(max_retries=-1)
    with pytest.raises(ValueError, match="jitter"):
        RetryPolicy(jitter=2.0)


def _run(policy: RetryPolicy, outcomes: list[Exception | str]) -> tuple[str | Exception, int]:
    calls = 0

    async def call() -> str:
        nonlocal calls
        outcome = outcomes[min(calls, len(outcomes) - 1)]
        calls += 1
        if isinstance(outcome, Exception):
            raise outcome
        return outcome

    async def main() -> str | Exception:
        try:
            return await call_with_retries(call, policy=policy, model_name="openai/gpt-4.1-mini")
        except ModelRequestError as error:
            return error

    return anyio.run(main), calls


def test_rate_limits_are_retried_with_backoff_until_success(litellm: ModuleType) -> None:
    slept: list[float] = []

    async def sleep(seconds: float) -> None:
        slept.append(seconds)

    rate_limit = _errors(litellm)["rate_limit"]
    result, calls = _run(RetryPolicy(jitter=0.0, sleep=sleep), [rate_limit, rate_limit, "ok"])
    assert result == "ok"
    assert calls == 3
    assert slept == [1.0, 2.0]


def test_auth_error_is_not_retried_and_names_the_fix(litellm: ModuleType) -> None:
    slept: list[float] = []

    async def sleep(seconds: float) -> None:
        slept.append(seconds)

    result, calls = _run(RetryPolicy(sleep=sleep), [_errors(litellm)["auth"], "ok"])
    assert isinstance(result, ModelRequestError)
    assert calls == 1
    assert slept == []
    assert "openai/gpt-4.1-mini" in str(result)
    assert "OPENAI_API_KEY" in str(result)
    assert result.attempts == 1
    assert result.status_code == 401
    assert isinstance(result.__cause__, litellm.AuthenticationError)


def test_the_last_failure_surfaces_after_max_retries(litellm: ModuleType) -> None:
    slept: list[float] = []

    async def sleep(seconds: float) -> None:
        slept.append(seconds)

    result, calls = _run(RetryPolicy(max_retries=2, sleep=sleep), [_errors(litellm)["unavailable"]])
    assert isinstance(result, ModelRequestError)
    assert calls == 3
    assert len(slept) == 2
    assert result.attempts == 3
    assert "after 3 attempts" in str(result)
    assert "openai/gpt-4.1-mini" in str(result)


def test_a_missing_key_reported_as_a_server_error_is_auth_and_not_retried(litellm: ModuleType) -> None:
    """The OpenAI SDK refuses a missing key before sending; litellm then raises it as an InternalServerError (500)."""
    missing = litellm.InternalServerError(
        message="OpenAIException - Missing credentials. Please pass an `api_key`, or set the `OPENAI_API_KEY` "
        "environment variable.",
        llm_provider="openai",
        model="gpt-4.1-mini",
    )
    assert failure_kind(missing) == "auth" and not is_retryable(missing)
    result, calls = _run(RetryPolicy(), [missing, "ok"])
    assert isinstance(result, ModelRequestError) and calls == 1
    assert result.kind == "auth" and "authentication failed" in str(result)


def test_each_unfixable_failure_has_its_kind_and_is_never_retried(litellm: ModuleType) -> None:
    who: dict[str, Any] = {"llm_provider": "bedrock", "model": "claude"}
    kinds = {
        "auth": litellm.AuthenticationError(message="Unable to locate credentials", **who),
        "permission": litellm.PermissionDeniedError(
            message="no access", response=_response(403), llm_provider="bedrock", model="claude"
        ),
        "not_found": litellm.NotFoundError(message="no such model", **who),
        "bad_request": litellm.BadRequestError(message="LLM Provider NOT provided", **who),
    }
    for kind, error in kinds.items():
        result, calls = _run(RetryPolicy(), [error, "ok"])
        assert isinstance(result, ModelRequestError) and calls == 1, kind
        assert result.kind == kind and failure_kind(result) == kind, kind
    assert "request model access in the Bedrock console" in str(_run(RetryPolicy(), [kinds["permission"]])[0])


def test_the_kind_is_found_through_wrapping_errors() -> None:
    """A reflector error wrapping a model failure, or a local model that is not installed, keeps its kind."""
    outer = RuntimeError("the reflector failed")
    outer.__cause__ = ModelRequestError("m", "refused", kind="not_found")
    assert failure_kind(outer) == "not_found"
    assert failure_kind(LocalModelUnavailableError("llama-cpp-python")) == "config"
    assert failure_kind(ValueError("a bug")) == "other"


def test_a_connection_failure_wrapped_in_a_500_is_a_connection_failure(litellm: ModuleType) -> None:
    """Without network litellm raises InternalServerError("... Connection error."): not "the provider kept failing"."""
    wrapped = litellm.InternalServerError(
        message="OpenAIException - Connection error.", llm_provider="openai", model="m"
    )
    assert failure_kind(wrapped) == "connection"
    assert "could not reach the provider" in failure_message("openai/m", wrapped, attempts=2)
    assert failure_kind(litellm.InternalServerError(message="500", llm_provider="openai", model="m")) == "server"
