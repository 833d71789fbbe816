"""A per-provider limit on the model requests tau2 makes: at most N in flight per provider, whatever the workers.

tau2's agent and user simulator call `litellm.completion` through `tau2.utils.llm_utils.completion`; that name is
replaced once by a wrapper that holds a provider's semaphore around each call while `provider_limit(n)` is active.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import litellm

__all__ = ["peak_requests", "provider_limit", "provider_of"]

_lock = threading.Lock()
_limit: int | None = None
_semaphores: dict[str, threading.BoundedSemaphore] = {}
_in_flight: dict[str, int] = {}
_peak: dict[str, int] = {}


def provider_of(model: str) -> str:
    """The provider a litellm model string goes to (`anthropic/claude-...` -> `anthropic`, `gpt-4.1` -> `openai`)."""
    try:
        return str(litellm.get_llm_provider(model)[1])
    except Exception:  # an unknown bare name: its own provider
        return model.split("/", 1)[0]


def peak_requests() -> dict[str, int]:
    """The most requests in flight at once per provider since the last `provider_limit` began."""
    with _lock:
        return dict(_peak)


@contextmanager
def provider_limit(limit: int | None) -> Iterator[None]:
    """While active, at most `limit` tau2 model requests run at once per provider (`None`: no limit)."""
    global _limit
    _install()
    with _lock:
        previous, _limit = _limit, limit
        _semaphores.clear()
        _peak.clear()
    try:
        yield
    finally:
        with _lock:
            _limit = previous
            _semaphores.clear()


def _semaphore(provider: str) -> threading.BoundedSemaphore | None:
    with _lock:
        if _limit is None:
            return None
        return _semaphores.setdefault(provider, threading.BoundedSemaphore(_limit))


def _count(provider: str, delta: int) -> None:
    with _lock:
        _in_flight[provider] = _in_flight.get(provider, 0) + delta
        _peak[provider] = max(_peak.get(provider, 0), _in_flight[provider])


def _install() -> None:
    """Wrap `tau2.utils.llm_utils.completion` (once per process)."""
    from tau2.utils import llm_utils  # type: ignore[import-untyped,import-not-found,unused-ignore]

    if getattr(llm_utils.completion, "_ace_limited", False):
        return
    original = llm_utils.completion

    def limited(*args: Any, **kwargs: Any) -> Any:
        provider = provider_of(str(kwargs.get("model") or (args[0] if args else "")))
        semaphore = _semaphore(provider)
        if semaphore is None:
            return original(*args, **kwargs)
        with semaphore:
            _count(provider, 1)
            try:
                return original(*args, **kwargs)
            finally:
                _count(provider, -1)

    limited._ace_limited = True  # type: ignore[attr-defined]
    llm_utils.completion = limited
