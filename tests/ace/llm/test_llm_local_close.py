"""`LocalModel.close`: it waits for the call in flight (or gives up at its timeout, unloading nothing), then unloads
the weights for good, so a process can exit without tearing llama.cpp down under a running call."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

import anyio
import pytest
from pydantic_ai.messages import ModelRequest, UserPromptPart
from pydantic_ai.models import ModelRequestParameters

from ace.llm import LocalModel, ModelRequestError
from ace.llm._local_runtime import Completion


class HeldRuntime:
    """A llama.cpp binding stand-in whose call runs until the test lets it finish."""

    name = "held"
    version = "0"

    def __init__(self) -> None:
        self.entered = threading.Event()
        self.release = threading.Event()
        self.loads = 0

    def count_tokens(self, text: str) -> int:
        return len(text.split())

    def complete(
        self,
        turns: Sequence[dict[str, str]],
        schema: dict[str, Any] | None,
        max_tokens: int,
        sampling: dict[str, Any],
        slot: int = 0,
    ) -> Completion:
        self.entered.set()
        assert self.release.wait(10), "the test never released the call"
        return Completion(text="done", finish_reason="stop", prompt_tokens=3, completion_tokens=1, cached_tokens=0)


def test_close_waits_for_the_call_in_flight_then_unloads_for_good(monkeypatch: pytest.MonkeyPatch) -> None:
    runtime = HeldRuntime()

    def load(path: object, **_: object) -> HeldRuntime:
        runtime.loads += 1
        return runtime

    monkeypatch.setattr("ace.llm.local.load_runtime", load)
    model = LocalModel(model_path="/some/model.gguf")
    messages = [ModelRequest(parts=[UserPromptPart("hello")])]
    params = ModelRequestParameters(allow_text_output=True)
    answers: list[object] = []
    call = threading.Thread(target=lambda: answers.append(anyio.run(model.request, messages, None, params)))
    call.start()
    assert runtime.entered.wait(10)

    assert model.close(0.05) is False  # the call still runs: nothing is unloaded
    runtime.release.set()
    assert model.close(10) is True  # returns once the call has finished
    call.join(10)

    assert len(answers) == 1 and runtime.loads == 1
    with pytest.raises(ModelRequestError, match="closed"):
        anyio.run(model.request, messages, None, params)
    assert runtime.loads == 1  # closed for good: not loaded again
