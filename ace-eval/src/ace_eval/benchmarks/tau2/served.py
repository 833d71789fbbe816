"""Models of this process that tau2 reaches through litellm: served OpenAI-compatible on 127.0.0.1 for one run.

tau2's agent and user simulator call `litellm.completion(model, ...)`. A role whose model string is the embedded
offline model (`local`), or a role handed a pydantic-ai model (a test's scripted one), is served by an
`ace.llm.openai_server.OpenAIServer` while the episodes run, and tau2 calls it as `openai/<role>` with the
server's `api_base`. The endpoint is never recorded: the plan and `results.json` keep the model string the user
gave, so a resumed run (another port) matches its plan.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from pydantic_ai.models import Model
from pydantic_ai.settings import ModelSettings

from ace.llm import LOCAL_ALIASES, LocalModel
from ace.llm.openai_server import PLACEHOLDER_KEY, OpenAIServer

__all__ = ["LOCAL_MAX_STRING_CHARS", "LOCAL_MAX_TOKENS", "Route", "is_local", "local_model", "served_roles"]

LOCAL_MAX_TOKENS = 128
"""Tokens per turn of the embedded model in tau2: a customer's or an agent's turn is a few sentences, and a 135M
model left to 512 repeats itself to the limit (about a minute a turn on two busy cores)."""
LOCAL_MAX_STRING_CHARS = 40
"""Longest argument string it may write (an id, a name, a title): SmolLM2 spends a token per digit, and a call
whose string ran to 80 digits was cut off by `LOCAL_MAX_TOKENS` (its whole turn lost)."""


@dataclass(frozen=True)
class Route:
    """How tau2 calls one role's model: a litellm model string and the arguments that reach the endpoint."""

    model: str
    llm_args: Mapping[str, Any] = field(default_factory=dict)
    """`api_base` and `api_key` of a served model (passed in process, never written)."""


def is_local(model: str) -> bool:
    """Whether `model` names the embedded offline model (`local`, `default`, `smollm2`)."""
    return model.strip().lower() in LOCAL_ALIASES


def local_model(workers: int) -> LocalModel:
    """The embedded model for tau2: one prompt cache per conversation that runs at once (an agent and a user per
    episode), so that alternating turns each find their own prefix."""
    return LocalModel(
        settings=ModelSettings(max_tokens=LOCAL_MAX_TOKENS), slots=2 * workers, max_string_chars=LOCAL_MAX_STRING_CHARS
    )


@contextmanager
def served_roles(
    names: Mapping[str, str], given: Mapping[str, Model], *, workers: int = 1
) -> Iterator[dict[str, Route]]:
    """The route of each role of `names` (role -> model string) while the block runs: a served one for a role in
    `given` or named `local` (one embedded model shared by both roles), else the model string as it is."""
    served: dict[str, Model] = {}
    shared: LocalModel | None = None
    for role, name in names.items():
        if role in given:
            served[role] = given[role]
        elif is_local(name):
            shared = shared or local_model(workers)
            served[role] = shared
    if not served:
        yield {role: Route(name) for role, name in names.items()}
        return
    if shared is not None:
        shared.load()  # before the first episode: a missing runtime stops the run here, naming the extra
    with OpenAIServer(served) as server:
        endpoint = {"api_base": server.base_url, "api_key": PLACEHOLDER_KEY}
        yield {
            role: Route(f"openai/{role}", endpoint) if role in served else Route(name) for role, name in names.items()
        }
