"""Benchmark episodes of an e2e run: run tau-bench airline tasks in parallel into a trace collection, metered.

Every finished episode is one fsynced line of the collection, so an interrupted phase resumes with the
episodes it is missing and redoes none. Each episode's token counts and cost per role go into its trace's
`metadata["usage"]`.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import threading
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

from pydantic_ai import RunContext
from pydantic_ai.messages import ModelMessage, ModelResponse
from pydantic_ai.models import Model, ModelRequestParameters, StreamedResponse
from pydantic_ai.models.wrapper import WrapperModel
from pydantic_ai.settings import ModelSettings
from pydantic_ai.usage import RequestUsage

from ace.core.skillbook import Skillbook
from ace.redaction import Redactor
from ace_eval.benchmarks.tau_bench import (
    SOURCE_SYSTEM,
    AirlineData,
    EpisodeConfig,
    gold_data_hash,
    pass_hat_ks,
    run_episode,
)
from ace_eval.benchmarks.tau_bench.episode_trace import episode_to_trace
from ace_eval.collection import MANIFEST_FILE, CollectionWriter, Trace, read_collection, write_collection
from ace_eval.run.abort import AbortWatch, first_cause
from ace_eval.run.phases import PhaseRecord, pass_hat_list, task_results
from ace_eval.run.progress import FirstErrors, Progress
from ace_eval.run.redaction import redact_trace
from ace_eval.run.usage import sum_usage

__all__ = [
    "MeteredModel",
    "UsageMeter",
    "benchmark_summary",
    "drop_errored_episodes",
    "episode_uid",
    "first_error",
    "run_episodes",
]


@dataclass(kw_only=True)
class UsageMeter:
    """Requests, tokens and cost (USD, `None` while no response was priced) added up over responses. Thread-safe."""

    requests: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float | None = None

    def __post_init__(self) -> None:
        self._lock = threading.Lock()

    def add(self, usage: RequestUsage) -> None:
        """Count one response."""
        cost = getattr(usage, "cost", None)
        with self._lock:
            self.requests += 1
            self.input_tokens += usage.input_tokens
            self.output_tokens += usage.output_tokens
            if isinstance(cost, Decimal | int | float):
                self.cost_usd = (self.cost_usd or 0.0) + float(cost)

    def to_dict(self) -> dict[str, Any]:
        """`{requests, input_tokens, output_tokens, cost_usd}`."""
        with self._lock:
            return {
                "requests": self.requests,
                "input_tokens": self.input_tokens,
                "output_tokens": self.output_tokens,
                "cost_usd": self.cost_usd,
            }


class MeteredModel(WrapperModel):
    """A model that adds the usage of every response it returns to a `UsageMeter`."""

    def __init__(self, wrapped: Model, meter: UsageMeter) -> None:
        super().__init__(wrapped)
        self.meter = meter

    async def request(
        self,
        messages: list[ModelMessage],
        model_settings: ModelSettings | None,
        model_request_parameters: ModelRequestParameters,
    ) -> ModelResponse:
        response = await self.wrapped.request(messages, model_settings, model_request_parameters)
        self.meter.add(response.usage)
        return response

    @asynccontextmanager
    async def request_stream(
        self,
        messages: list[ModelMessage],
        model_settings: ModelSettings | None,
        model_request_parameters: ModelRequestParameters,
        run_context: RunContext[Any] | None = None,
    ) -> AsyncIterator[StreamedResponse]:
        async with self.wrapped.request_stream(
            messages, model_settings, model_request_parameters, run_context
        ) as stream:
            yield stream
        self.meter.add(stream.usage)


def episode_uid(task_id: int, trial: int) -> str:
    """The trace uid `episode_to_trace` gives an episode."""
    return f"{SOURCE_SYSTEM}:task-{task_id}-trial-{trial}"


async def run_episodes(
    data: AirlineData,
    jobs: Sequence[tuple[int, int]],
    *,
    writer: CollectionWriter,
    agent_model: Model,
    user_model: Model,
    skillbook: Skillbook | None,
    config: EpisodeConfig,
    max_workers: int,
    progress: Progress,
    abort_after: int = 0,
    redactor: Redactor | None = None,
) -> None:
    """Run every `(task_id, trial)` of `jobs` not yet in the writer's collection, `max_workers` at a time.

    `abort_after` episodes in a row failing with the same error no retry fixes raise `RunAborted` (0: never).
    With a `redactor` each trace is written redacted (the episode itself ran on the real data).
    """
    todo = [(t, k) for t, k in jobs if episode_uid(t, k) not in writer]
    first_errors = FirstErrors(progress)
    watch = AbortWatch(abort_after)
    gold: dict[int, str] = {}
    gold_lock = asyncio.Lock()
    queue: asyncio.Queue[tuple[int, int]] = asyncio.Queue()
    for job in todo:
        queue.put_nowait(job)

    async def gold_hash(task_id: int) -> str:
        async with gold_lock:
            if task_id not in gold:
                gold[task_id] = await asyncio.to_thread(gold_data_hash, data, data.task(task_id))
            return gold[task_id]

    async def one(task_id: int, trial: int) -> None:
        meters = {"agent": UsageMeter(), "user": UsageMeter()}
        result = await run_episode(
            data,
            task_id,
            agent_model=MeteredModel(agent_model, meters["agent"]),
            user_model=MeteredModel(user_model, meters["user"]),
            trial=trial,
            skillbook=skillbook,
            config=config,
            gt_data_hash=await gold_hash(task_id),
        )
        trace = episode_to_trace(result)
        usage = {role: meter.to_dict() for role, meter in meters.items()}
        trace = trace.model_copy(update={"metadata": {**trace.metadata, "usage": usage}})
        writer.append(redact_trace(trace, redactor)[0])
        status = "error" if result.error else f"reward {result.reward:g}"
        progress.advance(
            error=result.error is not None,
            line=f"{trace.trace_uid}  {status}  {result.steps} steps  ended {result.ended}"
            + (f"  {result.error}" if result.error else ""),
        )
        if result.error is not None:
            first_errors.see(result.error_kind or "other", trace.trace_uid, result.error)
        watch.see_outcome(result.error, result.error_kind, what="episodes")

    async def worker() -> None:
        while not queue.empty():
            task_id, trial = queue.get_nowait()
            await one(task_id, trial)

    try:
        async with asyncio.TaskGroup() as group:  # an abort cancels the other workers before the writer closes
            for _ in range(min(max_workers, len(todo))):
                group.create_task(worker())
    except BaseExceptionGroup as group_error:
        raise first_cause(group_error) from None


def benchmark_summary(
    traces: Sequence[Trace],
    *,
    name: str | None = None,
    benchmark: str | None = None,
    task_ids: Sequence[str] = (),
    num_trials: int | None = None,
    path: str | None = None,
) -> PhaseRecord:
    """pass^k, mean reward, errors, each task's rewards per trial and usage per role of a phase's episodes.

    pass^k and the mean reward are computed over the scored episodes only: an episode that errored (a model
    failed) was never scored, and counting it as 0 would report a broken configuration as a bad agent. `scored`
    and `errors` say how many of each; with no scored episode, pass^k is empty and the mean reward `None`.
    """
    scored = [t for t in traces if not t.metadata.get("error")]
    results = [(t.task_id, t.reward or 0.0) for t in scored]
    usage: dict[str, list[Mapping[str, Any]]] = {}
    for t in traces:
        for role, item in (t.metadata.get("usage") or {}).items():
            usage.setdefault(role, []).append(item)
    return PhaseRecord(
        name=name,
        benchmark=benchmark,
        task_ids=list(task_ids),
        num_trials=num_trials,
        path=path,
        episodes=len(traces),
        tasks=len({t.task_id for t in traces}),
        scored=len(scored),
        errors=len(traces) - len(scored),
        mean_reward=sum(r for _, r in results) / len(results) if results else None,
        pass_hat_k=pass_hat_list(pass_hat_ks(results)),
        task_results=task_results(
            (str(t.task_id), t.metadata.get("trial"), None if t.metadata.get("error") else t.reward or 0.0)
            for t in traces
        ),
        usage={role: sum_usage(items) for role, items in usage.items()},
    )


def first_error(traces: Sequence[Trace]) -> str | None:
    """The error of the first errored episode, if any."""
    return next((str(t.metadata["error"]) for t in traces if t.metadata.get("error")), None)


def drop_errored_episodes(directory: Path) -> int:
    """Remove the errored episodes from a phase's collection, so that a resume runs them again; how many.

    The collection is rewritten beside the old one and swapped in (a kill leaves the old or the new one whole).
    """
    if not (directory / MANIFEST_FILE).is_file():
        return 0
    manifest, traces = read_collection(directory)
    kept = [t for t in traces if not t.metadata.get("error")]
    if len(kept) == len(traces):
        return 0
    fresh, old = directory.with_name(f".{directory.name}.retry"), directory.with_name(f".{directory.name}.old")
    shutil.rmtree(fresh, ignore_errors=True)
    shutil.rmtree(old, ignore_errors=True)
    write_collection(
        fresh,
        kept,
        source_system=manifest.source_system,
        benchmark=manifest.benchmark,
        models=manifest.models,
        description=manifest.description,
        metadata=manifest.metadata,
    )
    os.replace(directory, old)
    os.replace(fresh, directory)
    shutil.rmtree(old)
    return len(traces) - len(kept)
