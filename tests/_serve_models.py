"""Scripted models for `ace-eval serve`'s learning process (`--models-from _serve_models:FUNCTION`, or
`LearnConfig(models_from=...)`): each function returns the `RunInjections` the learning process learns with, built
there (a spawned process sees none of the test's objects). What a test varies comes through the environment, which
the learning process inherits when it starts.

- `ACE_TEST_SM_DELAY=S`: every skill-manager request sleeps S seconds first (a batch is still learning when a test
  stops or kills the server).
- `ACE_TEST_CRASH_MARKER=PATH` (`crash_once`): the first committed sample kills its learning process (SIGKILL) and
  writes PATH; a restarted one learns on.
- `ACE_TEST_FAILED_LOG=PATH` (`fail_once`): the first sample raises, once per learning process; its trace uid is
  appended to PATH.
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

from _e2e_support import ScriptedReflector, ScriptedSkillManager, prompt_text, scripted_injections
from pydantic_ai.messages import ModelMessage, ModelResponse
from pydantic_ai.models.function import AgentInfo, FunctionModel

from ace_eval.e2e.runner import RunInjections
from ace_eval.e2e.training_results import SampleResult


def scripted() -> RunInjections:
    """The tests' scripted reflector and skill manager (slowed by `ACE_TEST_SM_DELAY`), the test embedder."""
    delay = float(os.environ.get("ACE_TEST_SM_DELAY", "0"))
    manager = ScriptedSkillManager()

    def slow_manager(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        time.sleep(delay)
        return manager(messages, info)

    injected = scripted_injections()
    models = {**injected.models, "skill_manager": FunctionModel(slow_manager, model_name="scripted-sm")}
    return RunInjections(models=models, embedder=injected.embedder, show_progress=False)


class BrokenOn(ScriptedReflector):
    """The scripted reflector, except that it fails on a trace whose conversation says `BROKEN`."""

    def __call__(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if "BROKEN" in prompt_text(messages):
            raise RuntimeError("the reflector cannot read this trace")
        return super().__call__(messages, info)


def broken_on() -> RunInjections:
    return scripted_injections(reflector=BrokenOn())


class FailedOnce(Exception):
    pass


def fail_once() -> RunInjections:
    """The first sample of this learning process fails after it is committed (the model went away)."""
    failed: list[str] = []

    def hook(sample: SampleResult) -> None:
        if not failed:
            failed.append(sample.trace_uid)
            with Path(os.environ["ACE_TEST_FAILED_LOG"]).open("a") as log:
                log.write(sample.trace_uid + "\n")
            raise FailedOnce("the model went away")

    return scripted_injections(on_sample=hook)


def crash_once() -> RunInjections:
    """The first committed sample of the first learning process kills that process (a native crash's stand-in)."""
    marker = Path(os.environ["ACE_TEST_CRASH_MARKER"])

    def hook(sample: SampleResult) -> None:
        if not marker.exists():
            marker.write_text(sample.trace_uid)
            os.kill(os.getpid(), signal.SIGKILL)

    injected = scripted()
    return RunInjections(models=injected.models, embedder=injected.embedder, show_progress=False, on_sample=hook)
